"""Clicks that drill down, on a hand-built two-sample case: a Calibration bar selects the label
pairs of its bin, a Localisation sensitivity threshold the units that fall apart there.

Two samples, raters a and b, one box each: on s1 b's box is 60 % of a's (IoU 0.6, distance 0.4),
on s2 the two boxes are the same (IoU 1, distance 0). So the Do pairs are (a1, b1) and (b1, a1) at
distance 0.4, (a2, b2) and (b2, a2) at 0; every De pair (a box against the other sample's) is at
distance 1. Matched at t = 0.5, both samples have one unit of two labels; at 0.7 s1's falls apart
(0.6 < 0.7), at 0.3 none does.
"""

import pytest

from kalos_core.data import Annotation, MultiRaterDataset, make_image
from tests.fiftyone.helpers import Panel, rater_dataset as make_dataset

BOXES = {"s1": {"a": (0, 0, 10, 10), "b": (0, 0, 10, 6)}, "s2": {"a": (50, 50, 10, 10), "b": (50, 50, 10, 10)}}


@pytest.fixture(scope="module")
def two(fo_isolated):
    """The two-sample data set, its label ids by annotation name ("a1" ...) and sample ids by name."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    images = [make_image(s, 100, 100, ["a", "b"], [Annotation(f"{r}{s[1]}", r, 0, box) for r, box in boxes.items()])
              for s, boxes in BOXES.items()]
    ds, fields = make_dataset(fo_isolated, MultiRaterDataset(images, {0: "cell"}, "box"))
    label = {name: lid for f in fields for names, ids in zip(ds.values(f"{f}.detections.coco_annotation_id"),
                                                               ds.values(f"{f}.detections.id"))
             for name, lid in zip(names, ids)}
    sample = dict(zip(ds.values("coco_id"), ds.values("id")))
    calibrate_run(ds, rater_fields=fields, run_key="cal", distances=("iou",), bootstrap=0, histogram_bins=4,
                  alpha_preview=False)
    compute_agreement_run(ds, rater_fields=fields, run_key="kalos", threshold=0.5, lsa_thresholds=(0.3, 0.7),
                          bootstrap=0)
    return ds, label, sample


def _pairs(drill, key, b):
    flat = drill["distances"]["iou"][key][b]
    return sorted((drill["labels"][q], drill["labels"][p] if p >= 0 else None) for q, p in zip(flat[::2], flat[1::2]))


def test_calibration_stores_the_label_pairs_of_each_bin(two):
    ds, label, sample = two
    res = ds.load_run_results("cal")
    assert res.distances["iou"]["histogram"]["do"] == [2, 2, 0, 0]   # distance 0 (s2), 0.4 (s1)
    assert res.distances["iou"]["histogram"]["de"] == [0, 0, 0, 4]   # distance 1
    drill = res.drill
    assert _pairs(drill, "do", 0) == sorted([(label["a2"], label["b2"]), (label["b2"], label["a2"])])
    assert _pairs(drill, "do", 1) == sorted([(label["a1"], label["b1"]), (label["b1"], label["a1"])])
    assert _pairs(drill, "do", 2) == [] and _pairs(drill, "de", 0) == []
    de = _pairs(drill, "de", 3)
    assert len(de) == 4 and {q for q, _ in de} == {label[n] for n in ("a1", "b1", "a2", "b2")}
    side = {label[n]: n[1] for n in label}
    assert all(side[q] != side[p] for q, p in de)              # a De pair joins the two samples
    assert sorted(drill["samples"]) == sorted(sample.values())


def test_a_calibration_bar_selects_its_label_pairs(two):
    ds, label, sample = two
    p = Panel(ds, "kalos_calibration").call("on_load")
    assert p.state["distance"] == "iou"
    view = p.call("on_click_bin", trace_idx=0, idx=1, path="calibration").view()
    assert view.values("id") == [sample["s1"]]
    assert set(view.values("raters_a.detections.id", unwind=True) + view.values("raters_b.detections.id", unwind=True)) \
        == {label["a1"], label["b1"]}
    assert "Showing all 2 same-sample label pairs (Do)" in p.state["selection"] and "**2 labels on 1 samples**" in p.state["selection"]
    view = p.call("on_click_bin", trace_idx=1, idx=3, path="calibration").view()
    assert sorted(view.values("id")) == sorted(sample.values())      # both samples of each De pair
    assert "both samples are shown" in p.state["selection"] and "**4 labels on 2 samples**" in p.state["selection"]
    p.call("on_click_bin", trace_idx=0, idx=2, path="calibration")
    assert p.state["selection"] == "No Do pair has a iou distance 0.500 – 0.750." and not p.ops("set_view")


def test_a_bar_fuller_than_a_run_keeps_says_how_many_pairs_it_left_out():
    from fiftyone.plugins.orgs.kalos.agreement.panels.calibration import bin_selection

    # a De bar of 10 pairs of which the run kept 3 (cap 3): the line names 3 of 10, and the 7 left out
    res = {"distances": {"iou": {"histogram": {"edges": [0.0, 1.0], "de": [10]}}},
           "drill": {"cap": 3, "labels": ["x", "y", "z", "w"], "label_sample": [0, 0, 1, 1],
                     "distances": {"iou": {"de": [[0, 2, 1, 3, 2, 0]]}}}}
    labels, line = bin_selection(res, "iou", "de", 0)
    assert labels == ["x", "y", "z", "w"]
    assert "**3 of the bar's 10** cross-sample pairs" in line and "**7 pairs are left out**" in line
    assert "at most 3 per bar" in line and "calibrate a smaller view" in line and "**4 labels on 2 samples**" in line


def test_sensitivity_stores_the_units_that_fall_apart(two):
    ds, label, sample = two
    res = ds.load_run_results("kalos")
    assert res.lsa_falls_apart["0.3"] == {"samples": [], "labels": []}
    assert res.lsa_falls_apart["0.7"]["samples"] == [sample["s1"]]
    assert sorted(res.lsa_falls_apart["0.7"]["labels"]) == sorted([label["a1"], label["b1"]])


def test_a_sensitivity_threshold_selects_the_samples_whose_units_fall_apart(two):
    ds, label, sample = two
    p = Panel(ds, "kalos_localisation_sensitivity").call("on_load")
    view = p.call("on_click_threshold", x=0.7, idx=2, trace_idx=0, path="sensitivity").view()
    assert view.values("id") == [sample["s1"]]
    assert set(view.values("raters_a.detections.id", unwind=True) + view.values("raters_b.detections.id", unwind=True)) \
        == {label["a1"], label["b1"]}
    assert "**1 samples** whose units matched at t = 0.5 fall apart at the stricter 0.7 (a link of theirs falls below it): their 2 labels" in p.state["selection"]
    p.call("on_click_threshold", x=0.3, idx=0, trace_idx=0, path="sensitivity")
    assert p.state["selection"] == "No unit matched at t = 0.5 falls apart at the more lenient 0.3." and not p.ops("set_view")
    p.call("on_click_threshold", x=0.5, idx=1, trace_idx=0, path="sensitivity")
    assert p.state["selection"].startswith("t = 0.5 is the run's own threshold") and not p.ops("set_view")
