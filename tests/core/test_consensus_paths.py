"""Consensus's fast paths equal the plain per-unit ones they replace, to the bit."""

import json
import random
from collections import Counter, defaultdict
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.columns import AnnotationColumns
from kalos_core.consensus import ConsensusConfig, build_consensus, compute_consensus, needed_support
from kalos_core.consensus.engine import ConsensusLabel, ConsensusResult, ReviewItem, _fuse_masks
from kalos_core.consensus.labels import _safe
from kalos_core.consensus.units import _block_codes, median_boxes, unit_table
from kalos_core.demo_data import demo_example, make_synthetic_boxes
from kalos_core.io.coco import dataset_to_coco, load_coco
from kalos_core.jsonsafe import json_safe

coord = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)
box = st.tuples(coord, coord, st.floats(0, 1e4), st.floats(0, 1e4))


def numpy_median_box(boxes: list) -> tuple:
    """The former fusion: np.median of x1, y1, x2, y2 over the boxes."""
    xywh = np.array(boxes, float).reshape(-1, 4)
    f = np.median(np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1), axis=0)
    return tuple(float(v) for v in (f[0], f[1], f[2] - f[0], f[3] - f[1]))


def median_box(boxes: list) -> tuple:
    """The columnar median of one unit's boxes."""
    anns = [Annotation(k, "a", 1, b) for k, b in enumerate(boxes)]
    data = MultiRaterDataset([make_image(1, 100, 100, ("a",), anns)], {1: "A"}, "box")
    f = median_boxes(unit_table(data, {k: "u" for k in range(len(boxes))}))[0].tolist()
    return f[0], f[1], f[2] - f[0], f[3] - f[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(box, min_size=1, max_size=9))
def test_median_box_equals_numpy_median_bit_for_bit(boxes):
    assert median_box(boxes) == numpy_median_box(boxes)


def test_median_box_known_answers():
    assert median_box([(0, 0, 10, 10)]) == (0.0, 0.0, 10.0, 10.0)
    # x1 0, 2 -> 1; y1 0, 4 -> 2; x2 10, 14 -> 12; y2 10, 12 -> 11
    assert median_box([(0, 0, 10, 10), (2, 4, 12, 8)]) == (1.0, 2.0, 11.0, 9.0)
    assert median_box([(0, 0, 1, 1), (5, 5, 1, 1), (1, 2, 3, 4)]) == (1.0, 2.0, 3.0, 4.0)


def python_median_box(boxes: list) -> tuple:
    """The former fusion (kalos 0.8): the middle value of each sorted coordinate list, or the two
    middle ones' sum halved; as np.median, except that two -0.0 give -0.0 (np.median: 0.0)."""
    cols = [[float(b[0]) for b in boxes], [float(b[1]) for b in boxes]]
    cols += [[x + float(b[2]) for x, b in zip(cols[0], boxes)], [y + float(b[3]) for y, b in zip(cols[1], boxes)]]
    k, f = len(boxes) // 2, []
    for c in cols:
        c.sort()
        f.append(c[k] if len(c) % 2 else (c[k - 1] + c[k]) / 2)
    return f[0], f[1], f[2] - f[0], f[3] - f[1]


def test_two_negative_zeros_stay_negative():
    assert str(median_box([(-0.0, 1, 1, 1), (-0.0, 1, 1, 1)])[0]) == str(python_median_box([(-0.0, 1, 1, 1)] * 2)[0]) \
        == "-0.0"


def per_unit_consensus(dataset, unit_of, config):
    """The former build_consensus: one Counter, one sort and one np.median per unit."""
    out = ConsensusResult(config.to_dict(), dataset.kind)
    for image in dataset.images:
        units = defaultdict(list)
        for a in image.annotations:
            units[unit_of[a.id]].append(a)
        n = len(image.raters)
        for unit in sorted(units, key=lambda u: (len(u), u)):
            members = sorted(units[unit], key=lambda a: a.rater)
            votes = Counter(a.category for a in members)
            top = max(votes.values())
            winners = sorted(c for c, v in votes.items() if v == top)
            tie = len(winners) > 1
            agreeing = [a for a in members if a.category in winners]
            ids, raters = tuple(a.id for a in members), tuple(a.rater for a in agreeing)
            if top < needed_support(n, config.support):
                out.review.append(ReviewItem(unit, image.id, top, n, raters, ids, dict(sorted(votes.items())), tie))
                continue
            if dataset.kind != "box":
                geometry, bbox = _fuse_masks(agreeing, image, config.pixel_share)
            elif config.box_fusion == "median":
                geometry = bbox = python_median_box([a.geometry for a in agreeing])
            else:
                xywh = np.array([a.geometry for a in agreeing], float)
                xyxy = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
                w = np.array([1.0 if a.score is None else float(a.score) for a in agreeing])
                w = w if w.sum() > 0 else np.ones_like(w)
                f = (xyxy * w[:, None]).sum(0) / w.sum()
                geometry = bbox = tuple(float(v) for v in (f[0], f[1], f[2] - f[0], f[3] - f[1]))
            out.labels.append(ConsensusLabel(unit, image.id, None if tie else winners[0], geometry, bbox, top / n,
                                             top, n, raters, ids, tie, tuple(winners) if tie else ()))
    return out


def random_boxes(seed: int, columns: bool):
    """Images of 1-4 raters (some assigned, drawing nothing), clustered boxes with repeated and
    -0.0 coordinates, classes 1-3, some scores (0 included); units named at random, with names of
    several lengths, repeated across images, a rater twice in one unit."""
    rng = random.Random(seed)
    images, unit_of, aid = [], {}, 0
    for i in range(rng.randint(1, 6)):
        raters = tuple(rng.sample(["bob", "al", "eve", "b", "zed"], rng.randint(1, 4)))
        anns = []
        for _ in range(rng.randint(0, 12)):
            x = rng.choice([0.0, -0.0, 1.5, 10.25, rng.uniform(0, 50)])
            xywh = (x, rng.choice([0.0, 3.0, rng.uniform(0, 50)]), rng.choice([1.0, rng.uniform(1, 9)]),
                    rng.uniform(1, 9))
            score = None if columns else rng.choice([None, 0.0, 0.5, 0.9])
            anns.append(Annotation(aid, rng.choice(raters), rng.choice([1, 2, 3]), xywh, xywh, score))
            unit_of[aid] = f"{rng.choice(['7', i])}:{rng.choice([0, 1, 2, 10, 11, 100])}"
            aid += 1
        if columns:
            names = tuple(sorted(set(raters)))
            anns = AnnotationColumns([a.id for a in anns], names, np.array([names.index(a.rater) for a in anns], int),
                                     np.array([a.category for a in anns], int),
                                     np.array([a.geometry for a in anns], float).reshape(-1, 4))
        images.append(make_image(f"im{i}", 60, 60, raters, anns))
    return MultiRaterDataset(images, {1: "A", 2: "B", 3: "C"}, "box"), unit_of


@pytest.mark.parametrize("columns", [False, True])
@pytest.mark.parametrize("fusion", ["median", "weighted"])
def test_columnar_build_equals_the_per_unit_loop(columns, fusion):
    seen = Counter()
    for seed in range(40):
        data, unit_of = random_boxes(seed, columns)
        for support in (0.0, 0.5, 1.0):
            config = ConsensusConfig(support=support, box_fusion=fusion)
            got, want = build_consensus(data, unit_of, config), per_unit_consensus(data, unit_of, config)
            assert got.coco_text(data) == json.dumps(want.to_coco(data), indent=1)   # from the run's columns
            assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
            assert [asdict(x) for x in got.labels] == [asdict(x) for x in want.labels]
            assert [asdict(x) for x in got.review] == [asdict(x) for x in want.review]
            assert json.dumps(got.to_coco(data)) == json.dumps(want.to_coco(data))
            seen.update(labels=len(got.labels), review=len(got.review), ties=sum(x.tie for x in got.labels))
    assert seen["labels"] > 200 and seen["review"] > 50 and seen["ties"] > 20   # the cases were there


def test_masks_equal_the_per_unit_loop():
    data = demo_example("segm")
    units = compute_consensus(data.dataset).labels
    unit_of = {m: lab.unit for lab in units for m in lab.members}
    data.dataset.images = [make_image(im.id, im.width, im.height, im.raters,
                                      [a for a in im.annotations if a.id in unit_of]) for im in data.dataset.images]
    got = build_consensus(data.dataset, unit_of, ConsensusConfig(pixel_share=0.6))
    want = per_unit_consensus(data.dataset, unit_of, ConsensusConfig(pixel_share=0.6))
    assert got.coco_text(data.dataset) == json.dumps(want.to_coco(data.dataset), indent=1)
    assert got.labels and json.dumps(got.to_coco(data.dataset)) == json.dumps(want.to_coco(data.dataset))


@pytest.mark.parametrize("support", [0.5, 0.9])
def test_to_dict_equals_the_asdict_form(support):
    data = demo_example("bbox")
    result = compute_consensus(data.dataset, config=ConsensusConfig(support=support))
    assert result.labels and result.review
    assert json.dumps(result.to_dict()) == json.dumps(json_safe(
        {"config": result.config, "kind": result.kind, "labels": [asdict(x) for x in result.labels],
         "review": [asdict(x) for x in result.review]}))
    assert result.to_coco(data.dataset)["review"] == json_safe([asdict(x) for x in result.review])


values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
                      | st.builds(np.int64, st.integers(-9, 9)) | st.builds(np.float32, st.floats(width=32)),
                      lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(st.integers(0, 3) | st.text(max_size=2), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(values)
def test_safe_equals_json_safe(v):
    assert json.dumps(_safe(v)) == json.dumps(json_safe(v))


def coco_from_asdict(result: ConsensusResult) -> list[dict]:
    """The COCO annotations written from each label's whole ``json_safe(asdict(...))`` form."""
    anns = []
    for k, lab in enumerate(result.labels, start=1):
        p = json_safe(asdict(lab))
        a = {"id": k, "image_id": p["image_id"], "category_id": p["category"], "bbox": p["bbox"],
             "score": p["confidence"], "unit": p["unit"], "support": p["support"], "raters": p["raters"],
             "tie": p["tie"], "iscrowd": 0}
        if lab.tie:
            a["tied_categories"] = p["tied_categories"]
        a["area"] = json_safe(lab.bbox[2] * lab.bbox[3])
        anns.append(a)
    return anns


def test_coco_annotations_equal_the_asdict_form():
    data, unit_of = random_boxes(3, True)
    result = build_consensus(data, unit_of, ConsensusConfig(support=0.0))
    fresh = result.coco_text(data)                 # from the run's columns, before any object is made
    assert fresh == json.dumps({**result.to_coco(data), "annotations": coco_from_asdict(result)}, indent=1)
    odd = ConsensusLabel("u", np.int64(7), None, (0.0, 1.0, float("nan"), 2.0), (0.0, 1.0, float("nan"), 2.0),
                         float("inf"), 2, 3, ("r1", "r2"), (np.int64(4), 5), True, (1, 2))
    result.labels.append(odd)
    assert sum(x.tie for x in result.labels) > 1 and len(result.labels) > 5
    got = result.to_coco(data)["annotations"]
    assert json.dumps(got) == json.dumps(coco_from_asdict(result))
    assert result.coco_text(data) == json.dumps({**result.to_coco(data), "annotations": coco_from_asdict(result)},
                                                indent=1)
    assert got[-1]["image_id"] == 7 and got[-1]["score"] is None and got[-1]["area"] is None


def test_no_annotations_and_labels_made_once():
    data, unit_of = random_boxes(3, True)
    empty = MultiRaterDataset([make_image(im.id, 60, 60, im.raters, []) for im in data.images], data.categories, "box")
    result = build_consensus(empty, {})
    assert not result.labels and not result.review
    assert result.coco_text(empty) == json.dumps(result.to_coco(empty), indent=1)
    assert '"annotations": []' in result.coco_text(empty)
    result = build_consensus(data, unit_of, ConsensusConfig(support=0.0))
    assert result.labels is result.labels and len(result.labels) == len(result.label_columns().unit) > 0


def lexsort_medians(table) -> np.ndarray:
    """The former median_boxes: one lexsort by (unit, value) per coordinate."""
    keep = np.flatnonzero(table.agreeing)
    b = table.xywh[keep]
    xyxy = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1)
    group = np.searchsorted(table.start, keep, side="right") - 1
    size = np.bincount(group, minlength=len(table.start))
    first = np.concatenate([[0], np.cumsum(size)[:-1]])
    lo, hi = first + (size - 1) // 2, first + size // 2
    out = np.empty((len(table.start), 4))
    for col in range(4):
        v = xyxy[np.lexsort((xyxy[:, col], group)), col]
        out[:, col] = np.where(lo == hi, v[hi], (v[lo] + v[hi]) / 2)
    return out


def test_medians_by_unit_size_equal_the_lexsort_ones_with_nan_inf_and_zeros():
    rng = random.Random(5)
    odd = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1.5, 1.5, 3.0]
    anns, unit_of = [], {}
    for k in range(3000):
        anns.append(Annotation(k, rng.choice("abcdefg"), 1, tuple(rng.choice(odd) for _ in range(4))))
        unit_of[k] = f"u{rng.randrange(900)}"
    data = MultiRaterDataset([make_image(1, 10, 10, tuple("abcdefg"), anns)], {1: "A"}, "box")
    table = unit_table(data, unit_of)
    got, want = median_boxes(table), lexsort_medians(table)
    assert len(set(np.bincount(np.searchsorted(table.start, np.arange(3000), side="right") - 1))) > 4
    assert np.array_equal(got, want, equal_nan=True) and np.isnan(got).any()
    real = ~np.isnan(got)       # bit for bit but for a NaN's sign (JSON writes any NaN alike)
    assert got[real].tobytes() == want[real].tobytes() and (got[real] == 0).any()


def block_cases(columns: bool):
    """Random images (read from COCO: the agreement's chunk kernel), and 20 synthetic images of 20
    objects (units 10 and up beside 1-9: names of two lengths in one image)."""
    read = (lambda coco: load_coco(coco, "bbox")) if columns else (lambda coco: coco_dataset(coco))
    for seed in range(30):
        data, _ = random_boxes(seed, columns)
        if any(len(im.raters) > 1 for im in data.images):
            yield read(dataset_to_coco(data)), AgreementConfig(threshold=0.05)
    yield read(make_synthetic_boxes(n_images=20, n_raters=3, objects_per_image=20, seed=1)), AgreementConfig()


def coco_dataset(coco: dict) -> MultiRaterDataset:
    """A COCO dict read, its images' annotations as lists of Annotation (the per-image path)."""
    data = load_coco(coco, "bbox")
    data.images = [make_image(im.id, im.width, im.height, im.raters, list(im.annotations)) for im in data.images]
    return data


@pytest.mark.parametrize("columns", [False, True])
def test_units_from_the_agreement_blocks_equal_the_dict_path(columns):
    """An agreement run's own map gives the units as codes (no name per annotation); the result is
    that of the same map as a plain dict, also where the codes do not fit (images reordered)."""
    seen = Counter()
    for data, agreement in block_cases(columns):
        unit_of = compute_agreement(data, agreement).unit_of
        ids, units, image, prefixes = unit_of.unit_codes()
        assert {i: prefixes[m] + str(u) for i, m, u in zip(ids, image.tolist(), units.tolist())} == dict(unit_of)
        reordered = MultiRaterDataset(data.images[::-1], data.categories, "box")
        for d in (data, reordered):
            config = ConsensusConfig(support=0.5)
            got, want = build_consensus(d, unit_of, config), build_consensus(d, dict(unit_of), config)
            assert got.coco_text(d) == want.coco_text(d) and json.dumps(got.to_dict()) == json.dumps(want.to_dict())
            seen.update(labels=len(got.labels), units=sum(len(lab.members) > 1 for lab in got.labels),
                        long=sum(len(lab.unit.split(":")[-1]) > 1 for lab in got.labels))
        read = [a.id for im in data.images for a in im.annotations]
        image_of = np.repeat(np.arange(len(data.images)), [len(im.annotations) for im in data.images])
        seen.update(fast=_block_codes(unit_of, read, image_of) is not None)
    assert seen["labels"] > 300 and seen["units"] > 100 and seen["long"] > 50 and seen["fast"] > (10 if columns else -1)


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), 1e300])
def test_boxes_array_to_the_writer_with_odd_values(odd):
    """The run's boxes go to the writer as one array; a NaN or an infinite box (or area) is written
    as the labels' JSON form writes it (null)."""
    data, unit_of = random_boxes(3, False)
    image = data.images[0]
    image.annotations.append(Annotation("odd", image.raters[0], 1, (1.0, odd, 2.0, odd)))
    unit_of["odd"] = "odd unit"
    result = build_consensus(data, unit_of, ConsensusConfig(support=0.0))
    fresh = result.coco_text(data)
    assert fresh == json.dumps({**result.to_coco(data), "annotations": coco_from_asdict(result)}, indent=1)
    assert result._boxes is not None and '"unit": "odd unit"' in fresh and "null" in fresh


@pytest.mark.parametrize("n_raters", [40, 70])
def test_many_raters_and_columns_made_when_asked(n_raters):
    """Agreeing raters as bit masks (up to 62 raters) or slices of names; members and boxes are
    made only when asked, equal to the per-unit loop's."""
    rng = random.Random(n_raters)
    raters = [f"r{k:02d}" for k in range(n_raters)]
    anns, unit_of = [], {}
    for obj in range(5):
        for r in rng.sample(raters, rng.randint(1, n_raters)):
            anns.append(Annotation(len(anns), r, rng.choice([1, 1, 2]), (obj * 10.0, rng.uniform(0, 1), 5.0, 5.0)))
            unit_of[len(anns) - 1] = f"{obj}"
    data = MultiRaterDataset([make_image(1, 100, 100, raters, anns)], {1: "A", 2: "B"}, "box")
    config = ConsensusConfig(support=0.2)
    got, want = build_consensus(data, unit_of, config), per_unit_consensus(data, unit_of, config)
    assert got.label_columns(("unit",)).members is None and got.label_columns(("unit",)).bbox is None
    assert got.coco_text(data) == json.dumps(want.to_coco(data), indent=1)
    assert got.label_columns(("unit",)).members is None                 # the file needs no members
    assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
    assert [asdict(x) for x in got.labels] == [asdict(x) for x in want.labels] and len(got.labels) > 1
    assert [asdict(x) for x in got.review] == [asdict(x) for x in want.review]
    assert max(len(x.raters) for x in got.labels) > 20


@pytest.mark.parametrize("fusion", ["median", "weighted"])
def test_a_result_pickles_before_its_labels_are_read(fusion):
    """Its columns not yet asked for are made by closures; pickling makes them first (a result crosses
    processes: multiprocessing, Dask), and the copy reads as the original."""
    import pickle

    n_labels = 0
    for seed in range(10):
        data, unit_of = random_boxes(seed, True)
        got = build_consensus(data, unit_of, ConsensusConfig(support=0.5, box_fusion=fusion))
        back = pickle.loads(pickle.dumps(got))
        assert back.coco_text(data) == got.coco_text(data) and json.dumps(back.to_dict()) == json.dumps(got.to_dict())
        assert [asdict(x) for x in back.labels] == [asdict(x) for x in got.labels]
        n_labels += len(got.labels)
    assert n_labels > 20
