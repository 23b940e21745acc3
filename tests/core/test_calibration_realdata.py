"""Calibration on the public LVIS double-annotation subset (issue 4, "must show").

Skipped when ../shared/data is absent. The published implementation gives
τ* ≈ 0.67-0.69 and KS ≈ 0.82 for box IoU on this file; the paper 0.654 / 0.798
on the full 5,000-image set.
"""

import pytest

from kalos_core import load_coco
from kalos_core.calibration import CalibrationConfig, calibrate

pytestmark = pytest.mark.realdata


def test_boxes_iou_beats_centroid_and_matches_the_published_range(lvis_subset_path):
    res = calibrate(load_coco(lvis_subset_path, "bbox"), CalibrationConfig(seed=0, bootstrap=100))
    iou, centroid = res.distances["iou"], res.distances["centroid"]
    assert iou.ks > centroid.ks
    assert 0.62 <= iou.tau_star <= 0.74
    assert 0.79 <= iou.ks <= 0.84
    assert iou.tau_ci[0] <= iou.tau_star <= iou.tau_ci[1]


def test_boxes_other_seed_lies_inside_the_interval(lvis_subset_path):
    data = load_coco(lvis_subset_path, "bbox")
    a = calibrate(data, CalibrationConfig(distances=("iou",), seed=0)).distances["iou"]
    b = calibrate(data, CalibrationConfig(distances=("iou",), seed=1)).distances["iou"]
    assert a.tau_ci[0] <= b.tau_star <= a.tau_ci[1] and b.tau_ci[0] <= a.tau_star <= b.tau_ci[1]


def test_polygons_iou_beats_giou_and_centroid(lvis_subset_path):
    res = calibrate(load_coco(lvis_subset_path, "segm"), CalibrationConfig(seed=0, bootstrap=20))
    d = res.distances
    assert d["iou"].ks > d["giou"].ks and d["iou"].ks > d["centroid"].ks
    assert res.recommended.distance == "iou"
