"""kalos_core.coco_eval, the one COCOeval box evaluation of convergence and noise-aware: a hand-computed
matching and precision array (pycocotools equality is in test_convergence.py and test_noise_aware_box_eval.py)."""

import numpy as np

from kalos_core.coco_eval import IOU_THRESHOLDS, Boxes, BoxEval


def _eval(gt_eps=None):
    # one image, one class; ground truth A and B; d1 = A (IoU 1), d2 = A's top half (IoU 0.5 with A, none with B),
    # d3 = B moved 1 px (IoU 90/110 = 0.818 with B)
    gt = Boxes(np.array([[0, 0, 10, 10], [20, 0, 10, 10]], float), np.zeros(2, np.int64), np.zeros(2, np.int64))
    dt = Boxes(np.array([[0, 0, 10, 5], [0, 0, 10, 10], [21, 0, 10, 10]], float), np.zeros(3, np.int64),
               np.zeros(3, np.int64))
    return BoxEval(gt, dt, np.array([0.8, 0.9, 0.7]), 1, gt_eps)


def test_greedy_matching_by_score_and_the_precision_array_by_hand():
    ev = _eval()
    matched, ignored, gt_ig = ev.match()
    reach = IOU_THRESHOLDS <= 90 / 110                     # d3 matches B at .50 ... .80, not at .85 ... .95
    assert matched[:, 1].all() and not matched[:, 0].any()  # d1 (score .9) takes A first; d2 finds A taken
    assert (matched[:, 2] == reach).all() and not ignored.any() and not gt_ig.any()
    assert list(ev.acc_order) == [1, 0, 2]
    p, eps = ev.precision()[:, :, 0], np.spacing(1)       # COCOeval's precision: tp / (tp + fp + eps)
    # t = .5: TP, FP, TP -> recall .5, .5, 1; precision 1, 1/2, 2/3; envelope 1, 2/3, 2/3
    assert (p[0, :51] == 1 / (1 + eps)).all() and (p[0, 51:] == 2 / (3 + eps)).all()
    # t = .85: TP, FP, FP -> recall stays at .5: no precision above it
    assert (p[7, :51] == 1 / (1 + eps)).all() and (p[7, 51:] == 0.0).all()


def test_area_range_and_shift_are_parameters_of_the_same_evaluation():
    ev = _eval(gt_eps=np.array([0.0, 0.1]))
    # shift -1: d3's IoU with B is 0.818 - 0.1 = 0.718, matched up to .70 only
    assert (ev.match(-1.0)[0][:, 2] == (IOU_THRESHOLDS <= 0.718)).all()
    assert (ev.match(0.0)[0] == _eval().match()[0]).all()
    # ground truth outside the area range is ignored; a detection matched to it is ignored, as is an
    # unmatched detection outside the range: precision -1 where no ground truth is left
    matched, ignored, gt_ig = ev.match(0.0, (0.0, 40.0))
    assert gt_ig.all() and (matched == _eval().match()[0]).all() and ignored.all()
    assert (ev.precision(0.0, (0.0, 40.0)) == -1).all()
    # area 50 is inside [0, 50]: d2, unmatched, counts as a false positive there
    assert not ev.match(0.0, (0.0, 50.0))[1][:, 0].any()
