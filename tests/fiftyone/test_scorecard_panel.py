"""The scorecard panel's confusion matrix and subsets on a hand-made dataset: an expert ``e`` and a
rater ``s`` on two images, each holding the five objects of tests/core/test_scorecard_subsets.py
(per image TP 2, FP 2, FN 2; confusion cat→dog 1, dog→(none) 1, (none)→cat 1), image 1 "day" and
image 2 "night", and label attribute ``occluded``. A click on a cell or a subset bar shows exactly the
labels it counts."""

import pytest

from tests.fiftyone.helpers import scorecard_anns as anns
from tests.fiftyone.helpers import Panel
from tests.fiftyone.helpers import rater_dataset

OCCLUDED = {1: True, 11: False, 2: False, 12: False, 14: True, 5: True}   # by annotation id, image 1's


@pytest.fixture(scope="module")
def ds(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run
    from kalos_core import MultiRaterDataset, make_image

    data = MultiRaterDataset([make_image(1, 500, 500, ["e", "s"], anns()),
                              make_image(2, 500, 500, ["e", "s"], anns(shift=100))], {1: "cat", 2: "dog"}, "box")
    ds, fields = rater_dataset(fo_isolated, data, with_metadata=True)
    for sample in ds:
        sample["time"] = "day" if sample.coco_id == 1 else "night"
        for f in fields:
            for d in sample[f].detections:
                if sample.coco_id == 1 and d.coco_annotation_id in OCCLUDED:
                    d["occluded"] = OCCLUDED[d.coco_annotation_id]
        sample.save()
    ds.save_view("night_only", ds.match({"time": "night"}))
    scorecard_run(ds, rater_fields=fields, run_key="sc", reference="e")
    return ds


def count(view):
    return view.count("raters_s.detections"), view.count("raters_e.detections")


def test_a_confusion_cell_shows_exactly_the_labels_it_counts(ds):
    p = Panel(ds, "kalos_scorecards").call("on_change_run", value="sc")
    (hm,) = p.data["confusion"]
    assert (hm["x"], hm["z"]) == (["cat", "dog", "(none)"], [[2, 2, 0], [0, 2, 2], [2, 0, 0]])
    assert count(p.call("on_click_cell", x="dog", y="cat", z=2).view()) == (2, 0)     # s's dogs over e's cats
    assert count(p.call("on_click_cell", x="(none)", y="dog", z=2).view()) == (0, 2)  # e's dogs s missed
    view = p.call("on_click_cell", x="dog", y="cat", z=2).view()
    assert sorted(view.values("raters_s.detections.coco_annotation_id", unwind=True)) == [12, 112]


def test_subsets_by_size_field_attribute_and_saved_views_side_by_side(ds):
    p = Panel(ds, "kalos_scorecards").call("on_change_run", value="sc")
    assert set(p.state["split_choices"]) >= {"none", "size", "field:time", "attr:occluded", "views"}
    counts = lambda: {x: tuple(c) for x, c in zip(p.data["subsets"][0]["x"], p.data["subsets"][0]["customdata"])}
    p.call("on_change_split", value="size")
    assert counts() == {"small": (2, 2, 2), "medium": (0, 2, 2), "large": (2, 0, 0)}   # sums to (4, 4, 4)
    p.call("on_change_split", value="field:time")
    assert counts() == {"day": (2, 2, 2), "night": (2, 2, 2)}
    p.call("on_change_split", value="attr:occluded")       # image 2's labels have no value
    assert counts() == {"False": (0, 1, 1), "True": (1, 1, 1), "(none)": (3, 2, 2)}
    p.call("on_change_split", value="views")
    assert counts() == {"(none)": (2, 2, 2), "night_only": (2, 2, 2)}
    assert count(p.call("on_click_subset", id="s|night_only").view()) == (4, 2)       # TP + FP of s, FN of e
    p.call("on_change_split", value="size")
    assert count(p.call("on_click_subset", id="s|medium").view()) == (2, 2)


def test_the_rater_table_shows_each_raters_size_tendency(ds):
    from fiftyone.plugins.orgs.kalos.agreement.panels.scorecard import rater_md

    p = Panel(ds, "kalos_scorecards").call("on_change_run", value="sc")
    # s's found boxes (A and C on both images) are the expert's own: no tendency, an interval of width 0
    assert p.state["raters_md"].splitlines()[-1] == "| s | 0.000 | 4 | 4 | +0.0 % | +0.0 … +0.0 |"
    row = {"rater": "w", "class": "(all)", "loc_error": 0.09, "fp": 0, "fn": 2, "size_bias": 0.1,
           "size_bias_lo": 0.05, "size_bias_hi": 0.155}
    assert rater_md([row]).splitlines()[-1] == "| w | 0.090 | 0 | 2 | +10.0 % | +5.0 … +15.5 |"
