"""A rater's scorecard across rounds: expert ``e`` and rater ``s`` on the two images of
tests/fiftyone/test_scorecard_panel.py (round 1: s has TP 4, FP 4, FN 4, so P = R = F1 = 0.5), then a
second round loaded as field ``round2_s`` in which s draws exactly e's 8 boxes (TP 8, P = R = F1 = 1)."""

import pytest

from tests.fiftyone.helpers import scorecard_anns as anns
from tests.fiftyone.helpers import Panel
from tests.fiftyone.helpers import rater_dataset


@pytest.fixture(scope="module")
def ds(fo_isolated):
    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import (
        scorecard_run,
    )

    from kalos_core import MultiRaterDataset, make_image

    data = MultiRaterDataset([make_image(1, 500, 500, ["e", "s"], anns()),
                              make_image(2, 500, 500, ["e", "s"], anns(shift=100))], {1: "cat", 2: "dog"}, "box")
    ds, fields = rater_dataset(fo_isolated, data, with_metadata=True)
    scorecard_run(ds, rater_fields=fields, run_key="sc", reference="e")
    ds.set_values("round2_s", [fo.Detections(detections=[fo.Detection(label=d.label, bounding_box=d.bounding_box)
                                                         for d in dets.detections])
                               for dets in ds.values("raters_e")])   # round 2: s draws e's boxes
    ds.info.setdefault("kalos_import", {}).setdefault("rater_fields", {}).update({"raters_e": "e", "round2_s": "s"})
    ds.info["kalos_rounds"] = {"round2": {"fields": ["round2_s"], "view": None}}
    ds.save()
    scorecard_run(ds, rater_fields=["raters_e", "round2_s"], run_key="sc2", reference="e")
    return ds


def test_a_raters_scorecard_across_rounds(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import (
        scorecard_trend,
    )

    trend = scorecard_trend(ds)
    assert trend["runs"] == [("sc", "round 1"), ("sc2", "round2")]
    assert [(r["tp"], r["fp"], r["fn"], r["f1"]) for r in trend["rows"]["s"]] == [(4, 4, 4, 0.5), (8, 0, 0, 1.0)]   # e: 2 + 2 boxes per image

    p = Panel(ds, "kalos_scorecards").call("on_change_run", value="sc2")
    (line,) = [t for t in p.data["trend"] if t["name"] == "s"]
    assert (line["x"], line["y"]) == (["sc (round 1)", "sc2 (round2)"], [0.5, 1.0])
    assert "| s | 0.500 / 0.500 / 0.500 | 1.000 / 1.000 / 1.000 |" in p.state["trend_md"]
    assert "trend" in p.rendered()


def test_one_run_has_no_trend(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import (
        scorecard_trend,
    )

    ds2 = ds.clone()
    ds2.delete_run("sc2")
    assert len(scorecard_trend(ds2)["runs"]) == 1
    p = Panel(ds2, "kalos_scorecards").call("on_change_run", value="sc")
    assert not p.data.get("trend") and "trend" not in p.rendered()
