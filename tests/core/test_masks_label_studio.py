"""Label Studio brush masks on the masks command line: a project's JSON export (brushlabels in Label
Studio's RLE, one annotation per annotator) reads as the class maps it paints, so α equals that of the
same maps as PNG folders; bad exports refused by name (task, annotator), one line, exit 2. The RLE
writer below emits both kinds of block Label Studio writes (repeated runs, as its Python converter
does, and literal runs of several values, as its web editor does); tests/labelstudio checks it and the
decoder against Label Studio's own code."""

import json
import re

import numpy as np
import pytest

from kalos_core.masks.label_studio import decode_brush_rle
from tests.core.helpers import ls_export as export
from tests.core.helpers import ls_rle, painted, write_png
from tests.core.helpers import run_masks as run
from tests.core.helpers import truth_mask as truth


@pytest.mark.parametrize("seed", [0, 1])
def test_the_rle_decodes_to_the_mask_it_encodes_with_literal_and_long_runs(seed):
    mask = painted(seed, (300, 301))
    mask[:250] = seed == 1    # a run beyond 2**16 values
    assert np.array_equal(decode_brush_rle(ls_rle(mask), 301, 300), mask)


def test_alpha_from_the_export_equals_alpha_from_the_same_maps_as_png_folders(tmp_path, capsys):
    maps = {"img1": {k + 1: truth(shift=k) for k in range(3)}, "img2": {1: truth(), 3: truth(shift=4)}}
    for image, by_user in maps.items():
        for u, m in by_user.items():
            write_png(tmp_path / "png" / f"user {u}" / f"{image}.png", m)
    rc, _ = run([export(tmp_path, maps), "--classes", "background,car,road", "--output", tmp_path / "ls.json"],
                capsys)
    rc2, _ = run([*(tmp_path / "png" / f"user {u}" for u in (1, 2, 3)), "--classes", "background,car,road",
                  "--output", tmp_path / "png.json"], capsys)
    assert rc == rc2 == 0
    ls, png = (json.loads((tmp_path / f).read_text()) for f in ("ls.json", "png.json"))
    assert ls["alpha"] == pytest.approx(png["alpha"]) and ls["alpha_per_class"] == png["alpha_per_class"]
    assert ls["raters"] == png["raters"] == ["user 1", "user 2", "user 3"] and ls["n_pixels"] == png["n_pixels"]
    rc, _ = run([export(tmp_path, maps), "--output", tmp_path / "named.json"], capsys)   # classes from the labels
    assert rc == 0 and json.loads((tmp_path / "named.json").read_text())["classes"] == {
        "0": "background", "1": "car", "2": "road"}


def test_a_later_region_is_drawn_over_an_earlier_one_and_a_skipped_annotation_is_no_map(tmp_path, capsys):
    maps = {"img1": {1: truth(), 2: truth()}}
    path = export(tmp_path, maps)
    tasks = json.loads(path.read_text())
    first = tasks[0]["annotations"][0]["result"]
    first.reverse()     # road before car: car's box now covers road
    tasks[0]["annotations"].append({"id": 99, "completed_by": 3, "was_cancelled": True, "result": []})
    path.write_text(json.dumps(tasks))
    rc, _ = run([path, "--output", tmp_path / "o.json", "--no-boundary"], capsys)
    res = json.loads((tmp_path / "o.json").read_text())
    assert rc == 0 and res["raters"] == ["user 1", "user 2"]
    pair = res["pairs"]["user 1|user 2"]
    # user 1: car's 20x22 box covers road's 5x6; user 2: road drawn over car: car 440 - 30 pixels
    assert pair["1"]["dice"] == pytest.approx(2 * 410 / (440 + 410)) and pair["2"]["dice"] == 0.0


@pytest.mark.parametrize("break_it, words", [
    (lambda r: r["value"].update(brushlabels=["tree"]), "task 1, annotator user 2: brush label 'tree'"),
    (lambda r: r.update(original_width=50), "task 1, annotator user 2: region .*holds 1920 pixels, not"),
    (lambda r: r["value"].update(format="png"), "task 1, annotator user 2: region .* stored as 'png', not rle"),
])
def test_unknown_labels_and_wrong_sizes_are_refused_by_task_and_annotator(tmp_path, capsys, break_it, words):
    path = export(tmp_path, {"img1": {1: truth(), 2: truth(shift=1)}})
    tasks = json.loads(path.read_text())
    break_it(tasks[0]["annotations"][1]["result"][0])
    path.write_text(json.dumps(tasks))
    rc, out = run([path, "--classes", "background,car,road"], capsys)
    assert rc == 2 and len(out.err.strip().splitlines()) == 1
    assert re.search(words, out.err), out.err
