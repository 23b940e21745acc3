"""Rater scorecards: hand-computed answers (an identical rater, a rater who swaps two classes,
leave-one-out with three raters, COCO's threshold average, pycocotools' size buckets) and the
command line's CSV. FiftyOne's evaluation as the oracle: tests/fiftyone/test_scorecard_oracle.py."""

import csv
import math

import pytest

from kalos_core import Annotation, MultiRaterDataset, make_image
from kalos_core.cli import main
from kalos_core.scorecard import COLUMNS, SIZE_BUCKETS, ScorecardConfig, compute_scorecards

CATS = {1: "cat", 2: "dog"}


def box(aid, rater, cat, x, y, w=10, h=10):
    return Annotation(aid, rater, cat, (x, y, w, h))


def dataset(anns, raters, cats=CATS):
    return MultiRaterDataset([make_image(1, 500, 500, raters, anns)], cats, "box")


def expert_and(rater_of):
    """Five objects drawn by ``e``; ``s`` draws the same boxes with ``rater_of(class)`` as class."""
    objs = [(1, 0, 0), (1, 50, 0), (1, 100, 0), (2, 0, 50), (2, 50, 50)]
    anns = [box(k, "e", c, x, y) for k, (c, x, y) in enumerate(objs)]
    anns += [box(10 + k, "s", rater_of(c), x, y) for k, (c, x, y) in enumerate(objs)]
    return dataset(anns, ["e", "s"])


def test_a_rater_identical_to_the_reference_scores_one_with_an_empty_off_diagonal():
    res = compute_scorecards(expert_and(lambda c: c), ScorecardConfig(reference="e"))
    assert res.raters == ["s"] and res.reference == "e"
    for cls in ("(all)", "cat", "dog"):
        r = res.row("s", cls)
        assert r["precision"] == r["recall"] == r["f1"] == r["precision_coco"] == r["f1_coco"] == 1.0
        assert r["fp"] == r["fn"] == 0 and r["loc_error"] == 0.0
    assert res.confusion["s"] == {"classes": ["cat", "dog", "(none)"], "matrix": [[3, 0, 0], [0, 2, 0], [0, 0, 0]]}


def test_a_rater_who_swaps_two_classes_fills_the_two_confusion_cells():
    res = compute_scorecards(expert_and(lambda c: 3 - c), ScorecardConfig(reference="e"))
    assert res.confusion["s"]["matrix"] == [[0, 3, 0], [2, 0, 0], [0, 0, 0]]   # 3 cats called dog, 2 dogs cat
    r = res.row("s")
    assert (r["tp"], r["fp"], r["fn"], r["precision"], r["recall"], r["f1"]) == (0, 5, 5, 0.0, 0.0, 0.0)
    assert res.row("s", "cat")["extras_small"] == 2 and res.row("s", "cat")["misses_small"] == 3


def test_leave_one_out_with_three_raters_by_hand():
    """O1 drawn by all (cat); O2 by a and b (cat); O3 by c alone (dog); O4 a cat for a, a dog for b and c.
    a's reference (b, c agree on): O1 cat, O4 dog. b's (a, c): O1 only (O4 is a tie of one vote each).
    c's (a, b): O1 and O2."""
    objs = {"O1": (0, 0), "O2": (50, 0), "O3": (0, 50), "O4": (50, 50)}
    drawn = [("a", "O1", 1), ("b", "O1", 1), ("c", "O1", 1), ("a", "O2", 1), ("b", "O2", 1), ("c", "O3", 2),
             ("a", "O4", 1), ("b", "O4", 2), ("c", "O4", 2)]
    ds = dataset([box(k, r, c, *objs[o]) for k, (r, o, c) in enumerate(drawn)], ["a", "b", "c"])
    res = compute_scorecards(ds)
    got = {r: (res.row(r)["tp"], res.row(r)["fp"], res.row(r)["fn"]) for r in "abc"}
    assert got == {"a": (1, 2, 1), "b": (1, 2, 0), "c": (1, 2, 1)}
    assert res.row("a")["precision"] == pytest.approx(1 / 3) and res.row("a")["recall"] == 0.5
    assert res.confusion["a"] == {"classes": ["cat", "dog", "(none)"], "matrix": [[1, 0, 0], [1, 0, 0], [1, 0, 0]]}
    assert (res.row("c", "cat")["fn"], res.row("c", "dog")["fp"]) == (1, 2)
    # the labels behind the counts: a's own extras; a's miss is the dog b and c agree on (their two labels)
    assert res.labels["a"] == {"extras": {"cat": [3, 6]}, "misses": {"dog": [7, 8]}}
    assert res.labels["c"] == {"extras": {"dog": [5, 8]}, "misses": {"cat": [3, 4]}}


def test_two_raters_leave_one_out_is_each_against_the_other():
    ds = dataset([box(1, "a", 1, 0, 0), box(2, "a", 1, 50, 0), box(3, "b", 1, 0, 0)], ["a", "b"])
    res = compute_scorecards(ds)
    assert (res.row("a")["precision"], res.row("a")["recall"]) == (0.5, 1.0)
    assert (res.row("b")["precision"], res.row("b")["recall"]) == (1.0, 0.5)


def test_an_iou_of_072_is_found_at_five_of_cocos_ten_thresholds():
    ds = dataset([box(1, "e", 1, 0, 0), box(2, "s", 1, 0, 0, 10, 7.2)], ["e", "s"])
    r = compute_scorecards(ds, ScorecardConfig(reference="e")).row("s")
    assert r["precision"] == r["recall"] == 1.0
    assert r["precision_coco"] == r["recall_coco"] == r["f1_coco"] == pytest.approx(0.5)
    assert r["loc_error"] == pytest.approx(0.28)
    strict = compute_scorecards(ds, ScorecardConfig(reference="e", iou=0.75)).row("s")
    assert (strict["tp"], strict["fp"], strict["fn"]) == (0, 1, 1)


def test_a_rater_whose_boxes_are_all_ten_percent_wider_has_a_size_tendency_of_plus_ten_percent():
    objs = [(1, 0, 0), (1, 50, 0), (2, 0, 50)]
    anns = [box(k, "e", c, x, y) for k, (c, x, y) in enumerate(objs)]
    anns += [box(10 + k, "s", c, x, y, w=11) for k, (c, x, y) in enumerate(objs)]
    res = compute_scorecards(dataset(anns, ["e", "s"]))          # two raters: each against the other
    s, e = res.row("s"), res.row("e")
    assert (s["size_bias"], s["size_bias_lo"], s["size_bias_hi"]) == pytest.approx((0.1, 0.1, 0.1))
    assert e["size_bias"] == pytest.approx(1 / 1.1 - 1)          # the reciprocal: e draws 9.1 % smaller
    assert res.row("s", "dog")["size_bias"] == pytest.approx(0.1) and res.row("s", "dog")["size_bias_lo"] is None
    exported = {(r["rater"], r["class"]): r for r in csv.DictReader(res.csv_text().splitlines())}
    assert float(exported["s", "(all)"]["size_bias"]) == pytest.approx(0.1) and exported["s", "dog"]["size_bias_lo"] == ""
    assert res.to_dict()["rows"][0]["size_bias"] == pytest.approx(1 / 1.1 - 1)
    # ratios 1.1 and 1.21: d = a, 2a (a = ln 1.1); mean 1.5a, standard error (a / √2) / √2 = a / 2
    two = [box(1, "e", 1, 0, 0), box(2, "e", 1, 50, 0), box(3, "s", 1, 0, 0, w=11), box(4, "s", 1, 50, 0, w=12.1)]
    r = compute_scorecards(dataset(two, ["e", "s"]), ScorecardConfig(reference="e")).row("s")
    a = math.log(1.1)
    assert (r["size_bias"], r["size_bias_lo"], r["size_bias_hi"]) == pytest.approx(
        (math.exp(1.5 * a) - 1, math.exp(1.5 * a - 1.959964 * a / 2) - 1, math.exp(1.5 * a + 1.959964 * a / 2) - 1))
    assert compute_scorecards(expert_and(lambda c: 3 - c), ScorecardConfig(reference="e")).row("s")["size_bias"] is None


def test_size_buckets_are_pycocotools_area_ranges():
    from pycocotools.cocoeval import Params

    p = Params(iouType="bbox")
    assert [list(SIZE_BUCKETS[n]) for n in p.areaRngLbl[1:]] == [list(map(float, r)) for r in p.areaRng[1:]]
    sides = {20: "small", 31.9: "small", 32: "medium", 40: "medium", 96: "large", 100: "large"}
    anns = [box(k, "e", 1, 110 * k, 0, s, s) for k, s in enumerate(sides)]
    r = compute_scorecards(dataset(anns + [box(99, "s", 2, 400, 400)], ["e", "s"]), ScorecardConfig(reference="e"))
    row = r.row("s")
    assert (row["misses_small"], row["misses_medium"], row["misses_large"]) == (2, 2, 2)
    assert (row["extras_small"], row["extras_medium"], row["extras_large"]) == (1, 0, 0)
    for s, name in sides.items():      # pycocotools' closed ranges hold each area; on 32² and 96² two do
        holding = [n for n, (lo, hi) in zip(p.areaRngLbl[1:], p.areaRng[1:]) if lo <= s * s <= hi]
        assert name == holding[-1]


def test_the_cli_writes_one_csv_row_per_rater_and_class_and_refuses_an_unknown_reference(tmp_path, capsys):
    import json

    ds = expert_and(lambda c: 3 - c)
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({
        "images": [{"id": 1, "width": 500, "height": 500, "file_name": "1.jpg", "rater_list": ["e", "s"]}],
        "categories": [{"id": k, "name": v} for k, v in CATS.items()],
        "annotations": [{"id": a.id, "image_id": 1, "category_id": a.category, "bbox": list(a.geometry),
                         "rater_id": a.rater} for a in ds.images[0].annotations]}))
    out = tmp_path / "cards.csv"
    assert main(["scorecard", str(path), "--reference", "e", "--output", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert tuple(rows[0]) == COLUMNS
    assert [(r["rater"], r["class"], r["tp"], r["fp"]) for r in rows] == [("s", "(all)", "0", "5"),
                                                                           ("s", "cat", "0", "2"),
                                                                           ("s", "dog", "0", "3")]
    assert main(["scorecard", str(path), "--reference", "nobody"]) == 2
    assert "reference: 'nobody' is not a rater" in capsys.readouterr().err


def test_the_majority_reference_is_the_consensus_measures_labels():
    from kalos_core.consensus import compute_consensus
    from kalos_core.demo_data import demo_example
    from kalos_core.scorecard.engine import _majority

    ds = demo_example(n_images=6).dataset
    ours = [(i, r.category, r.geometry, r.members) for i, r in _majority(ds)]
    cols = compute_consensus(ds).label_columns()
    want = [(i, c, tuple(b), tuple(m)) for i, c, b, m in zip(cols.image_id, cols.category, cols.bbox, cols.members)]
    assert len(ours) > 20 and ours == want
