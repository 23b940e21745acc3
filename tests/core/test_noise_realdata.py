"""The fitted profile reproduces the real LVIS pairs (skipped when the data file is absent)."""

import json

import pytest

from kalos_core import load_coco
from kalos_core.noise import load_profile
from kalos_core.noise.check import TOLERANCES, check_profile
from kalos_core.noise.fit import fit_noise_profile
from kalos_core.noise.lambda_check import lambda_one_check, subset_coco

pytestmark = pytest.mark.realdata

LAMBDA_ONE_TOLERANCE = 0.03  # the requirement: |alpha(r1, synthetic) - alpha(r1, r2)| <= 0.03


@pytest.fixture(scope="module")
def halves(lvis_subset_path):
    """Sorted image ids: the first 100 fit the profile, the other 100 check it."""
    coco = json.loads(lvis_subset_path.read_text())
    ids = sorted(im["id"] for im in coco["images"])
    return coco, ids[:100], ids[100:]


def test_profile_fitted_on_lvis_reproduces_match_rate_flips_and_iou(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    fit = fit_noise_profile(ds, source="LVIS subset 200")
    assert fit.report["n_matched"] > 500
    check = check_profile(ds, fit.profile, seed=0)
    dev = check.deviations()
    assert dev["match_rate"] <= TOLERANCES["match_rate"], check.to_dict()
    assert dev["flip_rate"] <= TOLERANCES["flip_rate"], check.to_dict()
    assert dev["iou_ks"] <= TOLERANCES["iou_ks"], check.to_dict()


def test_check_profile_passes_on_the_held_out_half_with_per_image_alpha(halves):
    coco, fit_ids, test_ids = halves
    profile = fit_noise_profile(load_coco(subset_coco(coco, fit_ids), "bbox")).profile
    check = check_profile(load_coco(subset_coco(coco, test_ids), "bbox"), profile, seed=0)
    assert check.passed(TOLERANCES), check.to_dict()
    assert len(check.real_alpha) == 100 and len(check.synthetic_alpha) == 100


@pytest.mark.parametrize("task", ["bbox", "segm"])
def test_lambda_one_reproduces_real_alpha_on_held_out_images(halves, task):
    """Paper Sec. 9.4: at lambda = 1 one synthetic rater simulated from r1 agrees with r1 as
    much as r2 does (mean and global alpha, 5 seeds), on images the profile has not seen."""
    coco, fit_ids, test_ids = halves
    profile = fit_noise_profile(load_coco(subset_coco(coco, fit_ids), task)).profile
    check = lambda_one_check(coco, profile, task=task, seeds=range(5), image_ids=test_ids)
    assert check.n_images == 100
    assert abs(check.synthetic_mean - check.real_mean) <= LAMBDA_ONE_TOLERANCE, check.to_dict()
    assert abs(check.synthetic_global - check.real_global) <= LAMBDA_ONE_TOLERANCE, check.to_dict()


def test_shipped_default_profiles_are_fitted_on_this_file(lvis_subset_path):
    import hashlib

    sha = hashlib.sha256(lvis_subset_path.read_bytes()).hexdigest()
    for task in ("bbox", "segm"):
        prof = load_profile(task=task)
        assert prof.meta["sha256"] == sha and prof.meta["file"] == lvis_subset_path.name
        assert prof.meta["task"] == task and prof.fit_report["n_matched"] > 500
        check = prof.meta["lambda_1_check"]
        assert abs(check["synthetic_mean_alpha"] - check["real_mean_alpha"]) <= LAMBDA_ONE_TOLERANCE
        assert abs(check["synthetic_global_alpha"] - check["real_global_alpha"]) <= LAMBDA_ONE_TOLERANCE
