"""Issue 25: every KaLOS operator ends with the same result card (headline numbers, what was
written where, the run key, what to open next), its numbers rounded for people.

Every operator that fiftyone.yml registers runs once, in workflow order, on one real data set
(the seeded demo raters, a model's boxes with confidences, label vectors for BAE, an
attribute on the labels); the card
each one showed is read from the App operations it yielded."""

import json
import math
import re
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml

from kalos_core.demo_data import build_demo
from kalos_core.video.data import synthetic_videos
from tests.fiftyone.helpers import (REAL_SERVER, check_card, coco_per_rater, shown_card, demo_data, model_dataset,
                                   video_dataset)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_data(tmp_path_factory, n_images=16, seed=2)

PLUGIN = "@kalos/agreement"
REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
ROWS = ["written", "run_key", "next"]


def registered() -> list[str]:
    """The registered operators but those that need a real Label Studio server (REAL_SERVER)."""
    return [n for n in yaml.safe_load((REPO / "fiftyone.yml").read_text())["operators"] if n not in REAL_SERVER]


def test_human_rounds_for_people():
    from fiftyone.plugins.orgs.kalos.agreement.operators.cards import human, interval

    assert human(0.5119505770595647) == "0.512" and human(-0.0404) == "-0.040"
    assert human(0.965) == "0.965" and human(1.0) == "1.000"
    assert human(45.678) == "45.7" and human(12345.6) == "12,346"
    assert human(3) == "3" and human(np.int64(40)) == "40" and human(np.float64(0.25)) == "0.250"
    assert human(0.00012) == "0.00012"            # small, not rounded to 0.000
    assert human(None) == human(math.nan) == "—" and human("moderate") == "moderate"
    assert interval((0.48123, 0.5501)) == "0.481 – 0.550" and interval(None) is None and interval((0.4, None)) is None


def test_written_paths_are_grouped_by_attribute():
    from fiftyone.plugins.orgs.kalos.agreement.operators.cards import describe_paths

    paths = ["k_alpha", "a.detections.k_unit", "a.detections.k_status", "b.detections.k_unit", "b.detections.k_status"]
    assert describe_paths(paths, ["k_view"]) == (
        "field k_alpha; label attributes k_unit, k_status on the labels of a, b; saved view k_view")
    assert describe_paths(["m.detections.x"]) == "label attribute x on the labels of m" and describe_paths([]) == ""


@pytest.fixture(scope="module")
def cards(fo_isolated, demo, tmp_path_factory):  # noqa: F811
    """{operator name: (title, rows, results, stored-run facts)} after running each, in workflow order."""
    import fiftyone.operators as foo

    ds, fields = model_dataset(fo_isolated, demo)
    rng = np.random.default_rng(0)
    for f in fields:
        ds.set_values(f"{f}.detections.emb", [[rng.random(3).tolist() for _ in row or []]
                                               for row in ds.values(f"{f}.detections")])
        ds.set_values(f"{f}.detections.occluded", [[bool(rng.random() < 0.3) for _ in row or []]
                                                    for row in ds.values(f"{f}.detections")])
        ds.set_values(f"seg_{f}", [fo_isolated.Segmentation(mask=(rng.random((12, 16)) < 0.3).astype(np.uint8))
                                   for _ in range(len(ds))])
    folder = tmp_path_factory.mktemp("cards")
    coco = build_demo(folder, n_images=4, seed=1, with_images=False)
    new_name = f"kalos-cards-{uuid.uuid4().hex[:8]}"
    multi = json.loads(Path(coco).read_text())
    exports = []
    for rater in sorted({a["rater_id"] for a in multi["annotations"]})[:2]:
        path = folder / f"{rater}.json"
        path.write_text(json.dumps(coco_per_rater(multi, rater)))
        exports.append({"rater": rater, "path": str(path), "format": "COCODetectionDataset"})
    rules = folder / "rules.toml"
    rules.write_text("[overall]\nmin_alpha = -1\nmin_f1 = 0\n")
    runs = [
        ("import_multirater_coco", {"labels_path": str(coco), "target": "new", "new_dataset": new_name}),
        ("import_rater_exports", {"exports": exports, "target": "new", "new_dataset": new_name + "-exports"}),
        ("calibrate", {"rater_fields": fields, "run_key": "cal", "bootstrap": 0}),
        ("compute_agreement", {"rater_fields": fields, "run_key": "agr", "bootstrap": 20, "seed": 0}),
        ("browse_disagreements", {"run_key": "agr"}),
        ("set_label_colors", {"color_by": "rater"}),
        ("compute_variations", {"rater_fields": fields, "run_key": "var"}),
        ("build_consensus", {"agreement_key": "agr"}),
        ("export_consensus_coco", {"consensus_key": "agr_consensus", "labels_path": str(folder / "consensus.json")}),
        ("tag_for_review", {"run_key": "agr", "tag": "review"}),
        ("label_convergence", {"rater_fields": fields, "run_key": "conv", "bootstrap": 5, "predictions_field": "model"}),
        ("noise_aware_evaluation", {"predictions_field": "model", "reference_field": fields[1],
                                    "noise_fields": [fields[2]], "run_key": "na"}),
        ("compute_bae", {"rater_fields": fields, "run_key": "bae", "embedding_attribute": "emb"}),
        ("compute_scorecards", {"rater_fields": fields, "run_key": "sc", "reference": fields[0]}),
        ("kalos_gate", {"rules_path": str(rules), "agreement_key": "agr", "scorecard_key": "sc"}),
        ("rank_next_rater", {"rater_fields": fields, "run_key": "nr"}),
        ("compute_attribute_agreement", {"agreement_key": "agr", "run_key": "attr", "names": ["occluded"]}),
        ("compute_mask_agreement", {"mask_fields": [f"seg_{f}" for f in fields], "run_key": "masks"}),
        ("simulate_raters", {"reference_field": fields[0], "n_raters": 2, "seed": 0, "prefix": "syn"}),
        ("delete_kalos_run", {"run_key": "var"}),
        ("delete_agreement_run", {"run_key": "agr"}),
    ]
    out = {}
    for name, params in runs:
        res = foo.execute_operator(f"{PLUGIN}/{name}", dataset=ds.name, params=params)
        assert res.error is None, f"{name}: {res.error}"
        ds.reload()
        out[name] = (*shown_card(res), {"runs": sorted(ds.list_runs())})
        if name == "compute_agreement":
            out["agr_results"] = ds.load_run_results("agr")
    # video runs on a video dataset: two short videos, three raters' tracks
    videos, _ = synthetic_videos(n_videos=2, n_frames=6, n_raters=3, n_tracks=3, switches=1, seed=1, size=(640.0, 480.0))
    vds = video_dataset(fo_isolated, videos)
    res = foo.execute_operator(f"{PLUGIN}/compute_video_agreement", dataset=vds.name, params={
        "rater_fields": [f"frames.boxes_rater{k}" for k in range(3)], "run_key": "vid"})
    assert res.error is None, f"compute_video_agreement: {res.error}"
    out["compute_video_agreement"] = (*shown_card(res), {"runs": sorted(vds.reload() or vds.list_runs())})
    return out


def test_every_registered_operator_is_covered(cards):
    assert set(registered()) <= set(cards), set(registered()) - set(cards)


@pytest.mark.parametrize("name", registered())
def test_every_operator_ends_with_the_same_card(cards, name):
    check_card(*cards[name][:2])


def test_the_cards_say_what_was_written_where(cards):
    agr = dict(cards["compute_agreement"][1])
    res = cards["agr_results"]
    assert agr["Mean α (per image)"] == f"{res.mean_alpha:.3f}" and agr["Global α"] == f"{res.global_alpha:.3f}"
    assert agr["Run key"] == "agr"
    assert agr["Written"].startswith("fields agr_alpha, agr_statuses; label attributes agr_unit, agr_unit_no, "
                                     "agr_status on the labels of raters_")
    assert dict(cards["calibrate"][1])["Written"].startswith("the run 'cal' only")
    assert dict(cards["browse_disagreements"][1])["Written"] == "saved view agr_disagreements (selected now)"
    assert dict(cards["set_label_colors"][1])["Written"] == "the data set's App colour scheme (no label changed)"
    assert "syn_rater_1" in dict(cards["simulate_raters"][1])["Written"]
    assert dict(cards["simulate_raters"][1])["Run key"].startswith("none")
    conv = dict(cards["label_convergence"][1])
    assert re.fullmatch(r"-?\d+\.\d \((below|inside|above|within)?.*", conv["Model mAP (%)"]) or \
        re.match(r"\d+\.\d: ", conv["Model mAP (%)"]), conv["Model mAP (%)"]


def test_delete_confirms_what_went(cards):
    title, rows, results, facts = cards["delete_agreement_run"]
    shown = dict(rows)
    assert title == "KaLOS: run deleted" and shown["Run key"] == "agr (deleted)"
    assert "agr" not in facts["runs"] and "saved view agr_disagreements" in shown["Written"]
    assert int(shown["Field paths removed"]) == len(results["removed"]) > 0
    assert "var" not in cards["delete_kalos_run"][3]["runs"]
