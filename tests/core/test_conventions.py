"""One vocabulary of units and conventions (kalos_core.conventions): every measure names its
conventions, a result adds its own, the CLI prints and writes the same phrases."""

from __future__ import annotations

import json

import pytest

from kalos_core.cli import main
from kalos_core.conventions import PHRASES, conventions_md, conventions_of, conventions_text, with_conventions
from kalos_core.measure import MEASURE_MODULES, get_measure, measure_of_method


@pytest.mark.parametrize("name", list(MEASURE_MODULES))
def test_every_registered_measure_names_its_conventions(name):
    measure = get_measure(name)
    assert all(k in PHRASES for k in measure.conventions), f"{name}: a convention without a phrase"
    block = conventions_of(measure.method)
    assert block and all(p == PHRASES[k] for k, p in block.items())


def test_each_run_kind_is_one_measures():
    methods = [get_measure(n).method for n in MEASURE_MODULES]
    assert len(set(methods)) == len(methods)
    assert all(measure_of_method(m).method == m for m in methods) and measure_of_method("kalos_none") is None


def test_a_results_own_convention_is_added_at_its_top_level_or_one_block_down():
    assert list(conventions_of("kalos_braylan", {"convention": "midrank"})) == ["fraction", "midrank"]
    assert "braylan" in conventions_of("kalos_calibration", {"braylan": {"convention": "braylan"}})
    assert "braylan" not in conventions_of("kalos_calibration", {"braylan": {"skipped": "polygons"}})
    assert list(conventions_of("kalos_bae", {"config": {"scope": "per_image"}})) == ["pairwise_per_image"]
    assert list(conventions_of("kalos_bae", {"bae_config": {"scope": "global"}})) == ["pairwise_global"]
    assert "unknown" not in conventions_of("kalos_braylan", {"convention": "unknown"})


def test_the_text_and_markdown_hold_each_phrase_once():
    block = conventions_of("kalos_agreement")
    text, md = conventions_text(block), conventions_md(block)
    assert text.splitlines()[:3] == ["", "", "conventions:"]
    for phrase in block.values():
        assert text.count(phrase) == 1 and md.count(phrase) == 1
    assert conventions_text({}) == "" and conventions_md({}) == ""


def test_a_coco_file_or_a_text_keeps_its_format():
    coco = {"images": [], "annotations": [], "categories": []}
    assert with_conventions("kalos_consensus", coco) is coco
    assert with_conventions("kalos_simulation", "{}") == "{}"
    assert with_conventions("kalos_convergence", {"map": 1})["conventions"] == {"percent": PHRASES["percent"]}


def test_the_variations_command_prints_and_writes_the_same_phrases(tmp_path, capsys):
    images = [{"id": 1, "width": 100, "height": 100, "rater_list": ["a", "b", "c"]}]
    boxes = [("a", [0, 0, 30, 30]), ("b", [0, 0, 30, 30]), ("c", [0, 0, 30, 30]),
             ("a", [60, 60, 4, 4]), ("b", [60, 60, 4, 4])]          # c misses the small one
    anns = [{"id": k + 1, "image_id": 1, "category_id": 1, "rater_id": r, "bbox": b}
            for k, (r, b) in enumerate(boxes)]
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "x"}]}))
    assert main(["variations", str(src), "--thresholds", "0.5", "--output", str(out)]) == 0
    printed, d = capsys.readouterr().out, json.loads(out.read_text())
    assert d["conventions"] == {k: PHRASES[k] for k in ("majority", "per_pair")}
    for phrase in d["conventions"].values():
        assert phrase in printed
    assert d["missed_by"] == {"0.5": {"a": 0, "b": 0, "c": 2}}
