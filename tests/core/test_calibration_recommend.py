"""The recommendation rule: KS scores that tie within noise do not decide; a scale-dependent distance
is recommended only when it separates better beyond noise. Hand-built calibrations, known answers."""

import math

import pytest

from kalos_core.calibration import DistanceCalibration, SampleSummary
from kalos_core.calibration.recommend import ks_noise_floor, recommend
from kalos_core.thresholds import proposed, threshold_text

INVARIANT = {"iou": True, "giou": True, "centroid": False}


def cal(name, ks, ks_ci=None, n=400, t=0.6):
    s = SampleSummary(n, 0.3, 0.3, 0.1, 0.3)
    return DistanceCalibration(ks, ks_ci, 1 - t, None, t, None, 0.5, "crossing", s, s, {}, {}, name)


def test_without_intervals_the_noise_is_the_two_sample_ks_critical_value():
    # c(0.05) = sqrt(-ln(0.025) / 2) = 1.3581; n = m = 400: sqrt(2 / 400) = 0.070711
    assert ks_noise_floor(cal("iou", 0.8)) == pytest.approx(0.8 - 1.3581015 * math.sqrt(2 / 400), abs=1e-6)
    assert ks_noise_floor(cal("iou", 0.8, (0.75, 0.85))) == 0.75


def test_the_demo_case_a_centroid_ahead_by_noise_does_not_flip_the_default():
    # the demo's figures: centroid 0.788 [0.753, 0.816], iou 0.785, giou 0.785 (bootstrap 100)
    cals = {"iou": cal("iou", 0.7849, (0.7507, 0.8141), t=0.5973602),
            "centroid": cal("centroid", 0.7879, (0.7527, 0.8163), t=0.9666896),
            "giou": cal("giou", 0.7847, (0.7507, 0.8133), t=0.7849043)}
    rec = recommend(cals, 0.95, INVARIANT)
    assert (rec.distance, rec.scale_dependent, rec.alternative) == ("iou", False, None)
    assert rec.similarity_threshold == 0.5973602 and "tied: centroid 0.788, giou 0.785" in rec.reason
    # the order given decides among the tied: giou first, giou recommended
    assert recommend(dict(reversed(list(cals.items()))), 0.95, INVARIANT).distance == "giou"


def test_a_scale_dependent_distance_ahead_beyond_noise_wins_with_an_alternative():
    cals = {"iou": cal("iou", 0.70, (0.66, 0.74)), "centroid": cal("centroid", 0.85, (0.82, 0.88), t=0.965),
            "giou": cal("giou", 0.72, (0.68, 0.76), t=0.63)}
    rec = recommend(cals, 0.95, INVARIANT)
    assert (rec.distance, rec.scale_dependent, rec.alternative.distance) == ("centroid", True, "giou")
    assert "beyond noise" in rec.reason and "scale-invariant alternative is giou at similarity threshold 0.630" \
        in rec.reason


def test_shown_and_proposed_thresholds_follow_one_rule():
    assert (proposed(0.5973602), threshold_text(0.5973602)) == (0.597, "0.597")
    assert (proposed(0.7849043), threshold_text(0.7849043)) == (0.785, "0.785")
    assert [threshold_text(t) for t in (0.6, 0.5, 1.0, 0.0, 0.12345, None)] == ["0.6", "0.5", "1.0", "0.0", "0.123", "—"]
    assert float(threshold_text(0.5973602)) == proposed(0.5973602)   # the value read is the value used
