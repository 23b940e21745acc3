"""Per-prediction outcomes of the noise-aware evaluation (kalos_core.noise_aware.per_detection)."""

import numpy as np
import pytest

from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.noise_aware import noise_aware_evaluation
from kalos_core.noise_aware.per_detection import status


def _dataset(n=30, seed=0):
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        anns = []
        for k in range(3):
            x, y, w, h = rng.uniform(10, 300), rng.uniform(10, 300), rng.uniform(8, 150), rng.uniform(8, 150)
            anns.append(Annotation(f"a{i}_{k}", "a", 1, (x, y, w, h)))
            d = rng.normal(0, 2, 4)
            anns.append(Annotation(f"b{i}_{k}", "b", 1, (x + d[0], y + d[1], w + d[2], h + d[3])))
        images.append(make_image(i, 512, 512, ("a", "b"), anns))
    return MultiRaterDataset(images, {1: "thing"}, "box")


def _predictions(data, rater, seed=0, jitter=0.0):
    rng = np.random.default_rng(seed)
    return [{"id": f"p_{a.id}", "image_id": im.id, "category_id": a.category, "score": float(rng.random()),
             "bbox": [float(v) + (rng.normal(0, jitter) if jitter else 0.0) for v in a.geometry]}
            for im in data.images for a in im.annotations if a.rater == rater]


def test_status_names_agreement_of_the_bounds():
    assert status(True, True) == "matched" and status(False, False) == "unmatched"
    assert status(False, True) == "uncertain"


def test_predictions_equal_to_the_reference_match_everywhere_with_iou_one():
    data = _dataset()
    res = noise_aware_evaluation(data, _predictions(data, "a"), "a", per_detection=True)
    assert len(res.detections) == 90
    for d in res.detections.values():
        assert d["iou"] == pytest.approx(1.0) and d["iou_upper"] == pytest.approx(1.0)
        assert d["matched"]["ap"] == [True] * 10
        assert d["iou_lower"] < 1.0                  # ε̄ > 0: the lower bound is below the IoU
        # matched even under IoU − ε̄ exactly at the thresholds the lower bound reaches
        want = ["matched" if d["iou_lower"] >= t else "uncertain" for t in np.linspace(0.5, 0.95, 10)]
        assert d["status"] == want


def test_outcomes_agree_with_the_ap_and_the_bounds():
    data = _dataset(seed=1)
    res = noise_aware_evaluation(data, _predictions(data, "b", jitter=6.0), "a", per_detection=True)
    dets = res.detections.values()
    assert all(d["iou_lower"] <= d["iou"] <= d["iou_upper"] for d in dets)
    for t in range(10):                            # more matches under IoU + ε̄ than under IoU − ε̄
        n = {b: sum(d["matched"][b][t] for d in dets) for b in ("lower", "ap", "upper")}
        assert n["lower"] <= n["ap"] <= n["upper"]
    # a prediction is uncertain exactly where its lower and upper matches differ
    assert all(d["uncertain"] == any(lo != up for lo, up in zip(d["matched"]["lower"], d["matched"]["upper"]))
               for d in dets)
    assert any(d["uncertain"] for d in dets)
    # the IoU of a prediction matched at .50 is at least .50
    assert all(d["iou"] >= 0.5 - 1e-12 for d in dets if d["matched"]["ap"][0])
