"""Variation types (label convergence paper, App. C) on hand-checked images and on LVIS."""

import json

import pytest

from kalos_core import Annotation, MultiRaterDataset, compute_agreement, AgreementConfig, load_coco, make_image
from kalos_core.geometry import get_distance
from kalos_core.variations import (TYPES, VariationConfig, compute_variations, image_geometry, image_merges,
                                   pair_outcomes)


def box(aid, rater, cat, x, y, w=10, h=10):
    return Annotation(aid, rater, cat, (x, y, w, h))


def square(aid, rater, cat, x, y, w=10, h=10):
    return Annotation(aid, rater, cat, [[x, y, x + w, y, x + w, y + h, x, y + h]])


def run(anns, raters="ab", kind="box", **cfg):
    ds = MultiRaterDataset([make_image(1, 100, 100, raters, anns)], {1: "cat", 2: "dog"}, kind)
    return compute_variations(ds, VariationConfig(**{"thresholds": (0.5, 0.75), **cfg}))


def types(res):
    return {k: v.type for k, v in res.labels.items()}


def test_identical_raters_agree_everywhere_with_iou_one():
    anns = [box(f"{r}{k}", r, 1 + k % 2, 20 * k, 5) for r in "ab" for k in range(4)]
    res = run(anns)
    assert set(types(res).values()) == {"agreed"}
    assert res.labels["a2"].partner == "b2" and res.labels["b2"].partners == ("a2",)
    assert res.labels["a2"].iou == 1.0
    for t in ("0.5", "0.75"):
        assert res.counts[t] == {**dict.fromkeys(TYPES, 0), "agreed": 8}
    assert res.boundary_iou["0.5"][-1] == 8          # all in the last bin [0.95, 1]


@pytest.mark.parametrize("kind,shape", [("box", box), ("polygon", square)])
def test_box_split_in_two_halves_is_merged(kind, shape):
    anns = [shape("whole", "a", 1, 10, 10, 20, 10), shape("left", "b", 1, 10, 10, 10, 10),
            shape("right", "b", 1, 20, 10, 10, 10)]
    # a half has IoU 0.5 with the whole: at t = 0.5 step 1 already pairs it (the paper's order)
    at_half = types(run(anns, kind=kind))
    assert at_half["whole"] == "agreed" and {at_half["left"], at_half["right"]} == {"agreed", "additional"}
    res = run(anns, kind=kind, thresholds=(0.6, 0.75), threshold=0.6)
    assert types(res) == {"whole": "merged", "left": "merged", "right": "merged"}
    assert set(res.labels["whole"].partners) == {"left", "right"}
    assert res.labels["left"].partner == "whole"
    assert res.labels["whole"].iou == pytest.approx(1.0)
    assert res.counts["0.75"]["merged"] == 3
    plain = run(anns, kind=kind, thresholds=(0.6,), threshold=0.6, merge=False)
    assert types(plain) == {"whole": "missed", "left": "additional", "right": "additional"}


def test_split_halves_of_another_class_are_merged_wrong_class():
    anns = [box("whole", "a", 1, 10, 10, 20, 10), box("left", "b", 2, 10, 10, 10, 10),
            box("right", "b", 2, 20, 10, 10, 10)]
    assert set(types(run(anns, thresholds=(0.6,), threshold=0.6)).values()) == {"merged_wrong_class"}


def test_same_place_other_class_is_wrong_class_and_same_class_wins():
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 2, 0, 0)]
    assert types(run(anns)) == {1: "wrong_class", 2: "wrong_class"}
    # a same-class partner at lower IoU takes precedence over a perfect cross-class one
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 2, 0, 0), box(3, "b", 1, 1, 1)]
    assert types(run(anns, thresholds=(0.5,))) == {1: "agreed", 3: "agreed", 2: "additional"}


def test_unmatched_labels_keep_the_direction_of_the_reference_rater():
    anns = [box(1, "a", 1, 0, 0), box(2, "a", 1, 50, 50), box(3, "b", 1, 0, 0), box(4, "b", 2, 80, 0)]
    assert types(run(anns)) == {1: "agreed", 3: "agreed", 2: "missed", 4: "additional"}
    flipped = types(run(anns, reference="b"))
    assert flipped[2] == "additional" and flipped[4] == "missed"
    assert run(anns).by_rater["0.5"]["a"]["missed"] == 1 and run(anns).by_rater["0.5"]["b"]["additional"] == 1


def test_a_reference_that_is_no_rater_is_refused():
    with pytest.raises(ValueError, match=r"reference: 'bob' is not a rater of the data; its raters are: a, b"):
        run([box(1, "a", 1, 0, 0), box(2, "b", 1, 50, 50)], reference="bob")


def test_with_three_raters_the_unit_majority_decides_missed_or_additional():
    # X: drawn by a and b (a majority of 3), missed by c; Y: drawn by c alone
    anns = [box("aX", "a", 1, 0, 0), box("bX", "b", 1, 0, 0), box("cY", "c", 1, 60, 60)]
    ds = MultiRaterDataset([make_image(1, 100, 100, "abc", anns)], {1: "cat"}, "box")
    g = image_geometry(ds.images[0], get_distance("box"), 0.5)
    out = pair_outcomes(g, 0.5, image_merges(g, 0.5), reference=None)
    idx = {a.id: k for k, a in enumerate(g.annotations)}
    assert out[(0, 2)][idx["aX"]][0] == "missed"          # c missed a's X (a majority drew it)
    assert out[(0, 2)][idx["cY"]][0] == "additional"      # c's Y: a minority of one
    assert out[(0, 1)][idx["aX"]][0] == "agreed"
    res = compute_variations(ds, VariationConfig(thresholds=(0.5,)))
    assert types(res) == {"aX": "agreed", "bX": "agreed", "cY": "additional"}


def test_result_json_contract():
    res = run([box(1, "a", 1, 0, 0), box(2, "b", 2, 0, 0)])
    d = json.loads(json.dumps(res.to_dict(include_labels=True)))
    assert set(d) >= {"counts", "by_rater", "by_class", "boundary_iou", "config", "labels"}
    assert set(d["counts"]) == {"0.5", "0.75"} and list(d["counts"]["0.5"]) == list(TYPES)
    assert d["by_class"]["0.5"]["cat"]["wrong_class"] == 1
    assert d["labels"]["1"] == {"type": "wrong_class", "partners": [2], "partner": 2, "iou": 1.0,
                                "rater": "a", "category": 1}


@pytest.mark.realdata
def test_lvis_variation_counts(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    res = compute_variations(ds)
    c = res.counts
    assert sum(c["0.5"].values()) == ds.n_annotations
    # step 1 is the agreement engine's same-class greedy: same "agreed" count at 0.5
    status = compute_agreement(ds, AgreementConfig(bootstrap=0, vitality=False, collaboration=False,
                                                   intra_rater=False, class_difficulty=False)).status_of
    assert c["0.5"]["agreed"] == sum(s == "agreed" for s in status.values()) == 2796
    assert c["0.5"] == {"agreed": 2796, "merged": 27, "wrong_class": 4, "merged_wrong_class": 0,
                        "missed": 337, "additional": 357}
    ts = sorted(c, key=float)
    missed = [c[t]["missed"] for t in ts]
    agreed = [c[t]["agreed"] for t in ts]
    assert missed == sorted(missed) and missed[-1] > 3 * missed[0]      # grows with t
    assert agreed == sorted(agreed, reverse=True)
    for t in ts:
        other = {k: v for k, v in c[t].items() if k != "agreed"}
        # missed / additional dominate the disagreements at every threshold ...
        assert c[t]["missed"] + c[t]["additional"] > 0.9 * sum(other.values())
        # ... and wrong class is rare: the two LVIS raters used the same classes (see docs/variations.md)
        assert c[t]["wrong_class"] <= 10


def test_types_do_not_depend_on_annotation_order():
    import random

    rnd = random.Random(0)
    anns = []
    for k in range(12):
        x = 8 * k
        anns += [box(f"a{k}", "a", 1 + k % 2, x, 0), box(f"b{k}", "b", 1 + (k % 3 == 0), x + rnd.uniform(0, 4), 1)]
        if k % 4 == 0:
            anns += [box(f"c{k}", "b", 1, x, 40, 5, 10), box(f"d{k}", "b", 1, x + 5, 40, 5, 10),
                     box(f"e{k}", "a", 1, x, 40, 10, 10)]
    base = run(anns, thresholds=(0.5, 0.6, 0.8), threshold=0.6)
    assert {"agreed", "merged", "wrong_class"} <= set(types(base).values())
    for seed in range(3):
        shuffled = anns[:]
        random.Random(seed).shuffle(shuffled)
        res = run(shuffled, thresholds=(0.5, 0.6, 0.8), threshold=0.6)
        assert res.labels == base.labels and res.counts == base.counts


def small_object_misser():
    """Raters a, b draw two large and three small boxes; c draws only the large ones (a habit of
    missing small objects). Per label each small box of a / b has one agreed pair (with b / a) and
    one missed pair (with c): the tie goes to *agreed*, so the per-label counts show no miss."""
    large = [box(f"{r}L{k}", r, 1, 40 * k, 0, 30, 30) for r in "abc" for k in range(2)]
    small = [box(f"{r}S{k}", r, 1, 20 * k, 60, 4, 4) for r in "ab" for k in range(3)]
    return large + small


def test_a_rater_missing_small_objects_shows_per_pair_not_per_label():
    res = run(small_object_misser(), raters="abc", thresholds=(0.5,))
    assert res.counts["0.5"]["missed"] == 0 and res.by_rater["0.5"]["c"]["missed"] == 0   # hidden per label
    assert res.by_pair["0.5"]["a"]["c"]["missed"] == 3 and res.by_pair["0.5"]["b"]["c"]["missed"] == 3
    assert res.by_pair["0.5"]["a"]["b"] == {**dict.fromkeys(TYPES, 0), "agreed": 5}
    assert res.by_pair["0.5"]["c"]["a"] == {**dict.fromkeys(TYPES, 0), "agreed": 2}
    assert res.missed_by("0.5") == {"a": 0, "b": 0, "c": 6}
    assert res.to_dict()["missed_by"] == {"0.5": {"a": 0, "b": 0, "c": 6}}


def test_the_summary_prints_each_raters_misses_and_who_missed_whose_labels():
    from kalos_core.variations.measure import summary

    text = summary(run(small_object_misser(), raters="abc", thresholds=(0.5,)))
    lines = text.splitlines()
    assert "labels per type (per label, majority convention)" in lines
    assert "missed at IoU 0.5 (per pair): the other raters' labels each rater did not draw" in lines
    assert [ln.split() for ln in lines if ln.split()[:1] == ["c"]] == [["c", "6"], ["c", "3", "3", "-"]]
    assert [ln.split() for ln in lines if ln.split()[:1] == ["a"]] == [["a", "0"], ["a", "b", "c"],
                                                                        ["a", "-", "0", "0"]]   # header: columns


# -- issue 22: nothing to measure is refused as agreement and consensus refuse it ------------------
@pytest.mark.parametrize("images, why", [
    ([], "no images: nothing to measure"),
    ([make_image(i, 100, 100, [r], [box(i, r, 1, 10, 10)]) for i, r in enumerate("abc")],   # one rater per image
     r"none of the 3 image\(s\) has two or more raters \(raters: a, b, c\)"),
    ([make_image(i, 100, 100, ["a"], [box(i, "a", 1, 10, 10)]) for i in range(2)],           # one rater
     r"none of the 2 image\(s\) has two or more raters \(raters: a\)"),
])
def test_nothing_to_measure_is_refused_naming_why_and_the_fix(images, why):
    from kalos_core.io import InvalidInputError

    with pytest.raises(InvalidInputError, match=why) as e:
        compute_variations(MultiRaterDataset(images, {1: "cat"}, "box"))
    assert "nothing to measure" in str(e.value) and ("rater_list" in str(e.value) or not images)


def test_nothing_to_measure_on_the_command_line_exits_2(tmp_path, capsys):
    from kalos_core.cli import main

    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"images": [], "annotations": [], "categories": [{"id": 1, "name": "cat"}]}))
    assert main(["variations", str(path)]) == 2
    assert "no images: nothing to measure" in capsys.readouterr().err
