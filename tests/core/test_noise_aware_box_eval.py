"""The noise-aware evaluation from arrays (kalos_core.noise_aware.box_eval on kalos_core.coco_eval, corner_noise.pair_boxes)
against pycocotools and the per-image Hungarian it replaces: bit for bit, plus a hand-computed AP."""

import json
from dataclasses import replace

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from scipy.optimize import linear_sum_assignment

from kalos_core.coco_eval import coco_iou
from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.noise_aware.bounds import bounded_ap
from kalos_core.noise_aware.box_eval import bounded_ap_columns
from kalos_core.noise_aware.corner_noise import box_iou, pair_boxes
from kalos_core.noise_aware.per_detection import coco_pair


def const_eps(value):
    return lambda W, H: np.full(np.shape(W), value, dtype=float)


def test_coco_iou_is_pycocotools_bit_for_bit():
    rng = np.random.default_rng(3)
    d = np.c_[rng.uniform(0, 50, (400, 2)), rng.uniform(0, 30, (400, 2))]
    g = np.c_[rng.uniform(0, 50, (400, 2)), rng.uniform(0, 30, (400, 2))]
    g[:50] = d[:50]                                               # identical boxes
    g[50:60, 0] = d[50:60, 0] + d[50:60, 2]                       # touching edges: IoU 0
    d[60:70, 2:] = 0.0                                            # empty boxes
    want = np.array([mask_utils.iou([a.tolist()], [b.tolist()], [0])[0, 0] for a, b in zip(d, g)])
    assert np.array_equal(coco_iou(d, g), want)
    assert (coco_iou(d, g)[50:70] == 0).all() and coco_iou(d, g)[:50] == pytest.approx(np.ones(50))


def labels(rng, images, n, jitter, score_levels=None):
    out = []
    for _ in range(n):
        x, y = rng.uniform(0, 200, 2)
        w, h = rng.choice([6.0, 20.0, 50.0, 150.0]) * rng.uniform(0.7, 1.3, 2)
        x, y = x + rng.uniform(-jitter, jitter), y + rng.uniform(-jitter, jitter)
        s = float(rng.random() if score_levels is None else rng.integers(score_levels) / score_levels)
        out.append({"image_id": int(rng.choice(images)), "category_id": int(rng.integers(1, 4)),
                    "bbox": [float(x), float(y), float(w), float(h)], "score": s})
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_ap_from_arrays_is_cocoeval_bit_for_bit(seed):
    """Tied scores, boxes of all sizes, ground truth without predictions and predictions without
    ground truth, duplicates, a size-dependent ε̄: every AP of every bound and size is pycocotools'."""
    rng = np.random.default_rng(seed)
    images = list(range(1, 16))
    gt = sorted(labels(rng, images[:12], 120, 0), key=lambda d: d["image_id"])
    preds = [dict(d, bbox=[v + rng.uniform(-4, 4) for v in d["bbox"]], score=float(rng.integers(5) / 5))
             for d in gt if rng.random() < 0.8]
    preds += labels(rng, images, 40, 0, score_levels=5) + [dict(preds[0]), dict(preds[1])]
    preds = sorted(preds, key=lambda d: d["image_id"])
    for n, d in enumerate(gt):
        d["source_id"] = n
    dataset = MultiRaterDataset([make_image(i, 300, 300, ("a",), []) for i in images], {1: "x", 2: "y", 3: "z"}, "box")
    cats = sorted({d["category_id"] for d in gt} | {d["category_id"] for d in preds})
    eps = lambda W, H: 0.6 / np.sqrt(np.asarray(W) * np.asarray(H)) ** 0.5 + 0.02
    coco_gt, coco_dt, max_dets = coco_pair(dataset, images, gt, preds, cats)
    want = bounded_ap(coco_gt, coco_dt, eps, images, cats, max_dets)
    got = bounded_ap_columns(gt, preds, images, cats, eps)
    assert json.dumps(got) == json.dumps(want)
    assert got["all"]["50"]["lower"] < got["all"]["50"]["ap"] < got["all"]["50"]["upper"]


def test_hand_computed_bounds():
    """One 10x10 ground truth, one 8x8 prediction inside it (IoU 0.64), ε̄ = 0.3: IoU − ε̄ = 0.34
    matches at no threshold, 0.64 at .50-.60 (3 of 10), 0.94 at .50-.90 (9 of 10); the box is small."""
    gt = [{"image_id": 1, "category_id": 1, "bbox": [0.0, 0.0, 10.0, 10.0]}]
    pred = [{"image_id": 1, "category_id": 1, "bbox": [1.0, 1.0, 8.0, 8.0], "score": 0.9}]
    table = bounded_ap_columns(gt, pred, [1], [1], const_eps(0.3))
    assert table["all"]["50"] == pytest.approx({"lower": 0.0, "ap": 1.0, "upper": 1.0})   # 1 / (1 + spacing)
    assert table["all"]["75"] == pytest.approx({"lower": 0.0, "ap": 0.0, "upper": 1.0})
    assert table["all"]["95"] == {"lower": 0.0, "ap": 0.0, "upper": 0.0}
    assert table["all"]["50:95"]["ap"] == pytest.approx(0.3) and table["all"]["50:95"]["upper"] == pytest.approx(0.9)
    assert table["small"] == table["all"] and np.isnan(table["large"]["50"]["ap"])


def per_image_hungarian(dataset, reference, other, iou_min):
    """The per-image, per-class Hungarian that pair_boxes replaces (its earlier code)."""
    refs, oths, ious = [np.zeros((0, 4))], [np.zeros((0, 4))], [np.zeros(0)]
    for im in dataset.images:
        if reference not in im.raters or other not in im.raters:
            continue
        for c in sorted({a.category for a in im.annotations}):
            r = np.array([a.bbox for a in im.annotations if a.rater == reference and a.category == c]).reshape(-1, 4)
            o = np.array([a.bbox for a in im.annotations if a.rater == other and a.category == c]).reshape(-1, 4)
            if len(r) and len(o):
                iou = box_iou(r, o)
                rows, cols = linear_sum_assignment(1.0 - iou)
                keep = iou[rows, cols] >= iou_min
                refs.append(r[rows[keep]]), oths.append(o[cols[keep]]), ious.append(iou[rows[keep], cols[keep]])
    return np.concatenate(refs), np.concatenate(oths), np.concatenate(ious)


@pytest.mark.parametrize("iou_min", [0.1, 0.0, 0.6])
def test_pair_boxes_is_the_per_image_hungarian(iou_min):
    """Crowded classes (a box overlapping two: the solver's groups), lone pairs, an image the other
    rater did not see, a class only one rater drew: the same pairs in the same order, both readers."""
    rng = np.random.default_rng(7)
    images, aid = [], 1
    for i in range(30):
        anns = []
        for _ in range(int(rng.integers(1, 8))):
            c, x, y = int(rng.integers(1, 4)), *rng.uniform(0, 60, 2)
            for r in ("a", "b"):
                if rng.random() < 0.85:
                    box = (float(x + rng.normal(0, 3)), float(y + rng.normal(0, 3)), 25.0, 20.0)
                    anns.append(Annotation(aid, r, c + (r == "b" and rng.random() < 0.1), box, box))
                    aid += 1
        raters = ("a", "b") if i != 3 else ("a",)
        images.append(make_image(i + 1, 100, 100, raters, [a for a in anns if a.rater in raters]))
    dataset = MultiRaterDataset(images, {1: "x", 2: "y", 3: "z", 4: "w"}, "box")
    want = per_image_hungarian(dataset, "a", "b", iou_min)
    assert len(want[0]) > 20
    for data in (dataset, replace(dataset, images=[replace(im, annotations=list(im.annotations)) for im in images])):
        got = pair_boxes(data, "a", "b", iou_min)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_pair_boxes_without_a_same_class_pair_is_empty():
    """The other rater drew nothing (or only another class): no pairs, (0, 4) arrays, no error."""
    box = (1.0, 1.0, 5.0, 5.0)
    images = [make_image(1, 10, 10, ("a", "b"), [Annotation(1, "a", 1, box, box)]),
              make_image(2, 10, 10, ("a", "b"), [Annotation(2, "a", 1, box, box), Annotation(3, "b", 2, box, box)])]
    ref, oth, iou = pair_boxes(MultiRaterDataset(images, {1: "x", 2: "y"}, "box"), "a", "b")
    assert ref.shape == oth.shape == (0, 4) and iou.shape == (0,)
