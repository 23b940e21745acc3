"""The fitted profile reproduces the real LVIS pairs (skipped when the data file is absent)."""

import pytest

from kalos_core import load_coco
from kalos_core.noise.check import TOLERANCES, check_profile
from kalos_core.noise.fit import fit_noise

pytestmark = pytest.mark.realdata


def test_profile_fitted_on_lvis_reproduces_match_rate_flips_and_iou(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    fit = fit_noise(ds, source="LVIS subset 200")
    assert fit.report["n_matched"] > 500
    check = check_profile(ds, fit.profile, seed=0)
    dev = check.deviations()
    assert dev["match_rate"] <= TOLERANCES["match_rate"], check.to_dict()
    assert dev["flip_rate"] <= TOLERANCES["flip_rate"], check.to_dict()
    assert dev["iou_ks"] <= TOLERANCES["iou_ks"], check.to_dict()
