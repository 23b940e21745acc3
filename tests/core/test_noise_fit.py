"""fit_noise_profile: parameter recovery on data generated with known parameters; generated-vs-reference check."""

import numpy as np
import pytest
from scipy import stats

from kalos_core.noise import builtin_profile, load_profile, simulate
from kalos_core.noise.check import TOLERANCES, check_profile
from kalos_core.noise.estimators import fit_copula, fit_counts, fit_direction, fit_folded_t, fit_logistic, fit_poisson
from kalos_core.noise.fit import fit_noise_profile
from kalos_core.noise.profile import DirectionModel, LinearT
from kalos_core.noise.testbed import lvis_like_reference


@pytest.fixture(scope="module")
def recovered():
    truth = builtin_profile()
    ref = lvis_like_reference(250, seed=1)
    ds = simulate(ref, n_raters=3, magnitude=1.0, seed=0, profile=truth, include_reference=True).dataset()
    return truth, fit_noise_profile(ds, reference_rater="reference")


def test_localisation_parameters_are_recovered(recovered):
    truth, fit = recovered
    # the fitted family also has a size-dependent residual scale (chosen by AIC): compare the
    # distributions (median, 90th percentile) at sizes that survive the IoU >= 0.5 matching
    x = np.array([0.1, 0.2, 0.4])
    for part in ("translation", "log_width", "log_height"):
        t, f = getattr(truth.localisation, part), getattr(fit.profile.localisation, part)
        for q in (0.5, 0.9):
            v = np.full(len(x), q)
            np.testing.assert_allclose(f.ppf(v, x), t.ppf(v, x), rtol=0.15, err_msg=f"{part} q{q}")
        assert 2.0 <= f.df <= 8.0, part  # heavy tails recognised (true df 3-4)
        assert fit.report["localisation"][part]["aic"] < fit.report["localisation"][part]["aic_normal"]
    assert fit.profile.localisation.direction.kind == "cardinal"
    assert fit.profile.class_localisation.direction.kind == "axial"


def test_class_rate_and_topology_are_recovered(recovered):
    truth, fit = recovered
    assert fit.profile.classes.rate == pytest.approx(truth.classes.rate, abs=0.006)
    t, f = truth.topology, fit.profile.topology
    assert f.child_log_scale_mean == pytest.approx(t.child_log_scale_mean, abs=0.1)
    assert f.child_log_scale_sd == pytest.approx(t.child_log_scale_sd, abs=0.08)
    assert f.child_offset_mean == pytest.approx(t.child_offset_mean, abs=0.08)
    assert f.parent_b == pytest.approx(t.parent_b, abs=0.15)
    # Beta(4.53, 0.53): compare the mean angle (the two shape parameters trade off)
    assert f.angle_alpha / (f.angle_alpha + f.angle_beta) == pytest.approx(0.895, abs=0.03)


def test_unmatched_parameters_are_recovered_within_stated_bias(recovered):
    truth, fit = recovered
    assert fit.profile.unmatched.select_b == pytest.approx(truth.unmatched.select_b, abs=0.2)
    t, f = truth.unmatched, fit.profile.unmatched
    # events per image at 12 reference objects: localisation outliers below IoU 0.1 inflate the count a little
    expected, got = float(t.mean_events(12)), float(f.mean_events(12))
    assert expected <= got <= 1.4 * expected


def test_estimators_recover_their_own_models():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.01, 0.5, 6000)
    model = LinearT(0.01, 0.08, 0.01, 3.0)
    fitted, rep = fit_folded_t(model.sample(x, rng), x)
    assert fitted.b == pytest.approx(0.08, rel=0.1) and fitted.df == pytest.approx(3.0, rel=0.3)
    assert rep["ks_p"] > 0.01 and rep["ks"] < rep["ks_normal"]
    axial = DirectionModel("axial", mu=0.4, kappa=2.0).sample(4000, rng)
    d, rep = fit_direction(axial)
    assert d.kind == "axial" and d.mu == pytest.approx(0.4, abs=0.05) and d.kappa == pytest.approx(2.0, rel=0.15)
    rng = np.random.default_rng(1)
    n = rng.integers(0, 40, 10000)
    a, b, _ = fit_poisson(rng.poisson(np.exp(-0.5 + 0.03 * n)), n)
    assert a == pytest.approx(-0.5, abs=0.1) and b == pytest.approx(0.03, abs=0.005)
    z = rng.normal(-6, 2, 5000)
    a, b, rep = fit_logistic(rng.random(5000) < 1 / (1 + np.exp(-(-4 - 0.7 * z))), z)
    assert b == pytest.approx(-0.7, abs=0.1) and rep["aic"] < rep["aic_intercept_only"]


def test_heteroscedastic_scale_and_copula_are_recovered():
    rng = np.random.default_rng(3)
    x = np.exp(rng.uniform(np.log(0.005), np.log(0.6), 8000))
    truth = LinearT(0.0005, 0.002, 0.02, 2.5, scale_power=1.0)  # residual in proportion to the size
    corr = [[1.0, 0.6, 0.5], [0.6, 1.0, 0.3], [0.5, 0.3, 1.0]]
    v = stats.norm.cdf(rng.multivariate_normal(np.zeros(3), corr, len(x)))
    y = truth.ppf(v[:, 0], x)
    fitted, rep = fit_folded_t(y, x, scale_power=True)
    assert fitted.scale_power == pytest.approx(1.0, abs=0.1) and rep["aic"] < rep["aic_homoscedastic"]
    np.testing.assert_allclose(truth.cdf(y, x), v[:, 0], atol=1e-6)  # ppf inverts cdf
    rows, _ = fit_copula(v)
    np.testing.assert_allclose(rows, corr, atol=0.05)


def test_count_model_prefers_overdispersion_when_present():
    rng = np.random.default_rng(4)
    n = rng.integers(0, 40, 4000)
    mu = np.exp(-2.0 + 1.2 * np.log1p(n))
    y = rng.poisson(rng.gamma(mu / 1.5, 1.5))  # negative binomial 1, dispersion 1.5
    model, rep = fit_counts(y, n)
    assert (model["count_family"], model["count_covariate"]) == ("negbin1", "log1p_objects"), rep
    assert model["rate_b"] == pytest.approx(1.2, abs=0.1) and model["count_dispersion"] == pytest.approx(1.5, rel=0.2)
    model, _ = fit_counts(rng.poisson(np.exp(-0.5 + 0.03 * n)), n)
    assert (model["count_family"], model["count_covariate"]) == ("poisson", "objects")


def test_generated_matches_reference_data_after_fitting():
    """The same check the realdata test runs on LVIS, on data produced here."""
    ref = lvis_like_reference(150, seed=5)
    real = simulate(ref, n_raters=1, magnitude=1.0, seed=3, profile=load_profile(), include_reference=True).dataset()
    check = check_profile(real, fit_noise_profile(real).profile, seed=1)
    assert check.passed(TOLERANCES), check.to_dict()
    wrong = builtin_profile()
    wrong.unmatched.rate_a += 1.5  # far too many misses and ghosts
    assert not check_profile(real, wrong, seed=1).passed(TOLERANCES)


def test_too_little_data_keeps_defaults_and_says_so():
    ref = lvis_like_reference(3, seed=9)
    ds = simulate(ref, n_raters=1, magnitude=0.5, seed=0, include_reference=True).dataset()
    fit = fit_noise_profile(ds)
    assert fit.report["class_localisation"]["source"].startswith("default")
    assert fit.profile.class_localisation == builtin_profile().class_localisation


def test_count_model_holds_the_per_object_rate_beyond_the_largest_fitted_image():
    from dataclasses import replace

    from kalos_core.noise.profile import UnmatchedModel

    free = UnmatchedModel(-2.9, 1.5, -4.0, -0.4, count_covariate="log1p_objects", count_family="negbin1")
    held = replace(free, count_max_objects=67)
    np.testing.assert_allclose(held.mean_events([0, 1, 30, 67]), free.mean_events([0, 1, 30, 67]))
    # 97 objects: 97/67 times the events at 67 (the power law alone would give 68**-1.5 * 98**1.5 times)
    assert float(held.mean_events(97)) == pytest.approx(float(free.mean_events(67)) * 97 / 67)
    assert float(held.mean_events(97)) < 0.9 * float(free.mean_events(97))
    rng = np.random.default_rng(0)
    n = rng.integers(0, 40, 3000)
    model, rep = fit_counts(rng.poisson(np.exp(-1.0 + 0.9 * np.log1p(n))), n)
    assert model["count_max_objects"] == int(n.max()) == rep["max_objects"]


def test_class_rates_per_class_replace_the_global_rate():
    from dataclasses import replace

    from kalos_core.noise.profile import ClassModel

    ref = lvis_like_reference(30, seed=2)
    names = ref.categories
    target = sorted(names.values())[0]
    prof = builtin_profile()
    prof = replace(prof, classes=ClassModel(rate=0.0, rates={target: 1.0}))
    sim = simulate(ref, n_raters=1, magnitude=1.0, seed=0, profile=prof)
    flipped = [a for a in sim.coco["annotations"] if "class" in a["truth_errors"]]
    assert flipped and all(names[a["truth_category"]] == target for a in flipped)
    assert prof.classes.rate_of(target) == 1.0 and prof.classes.rate_of("other") == 0.0


# -- issue 22: identical raters, degenerate covariates -------------------------------------------
def test_identical_raters_fit_a_zero_noise_profile_at_once():
    """Exact copies (λ = 0): every offset and log size ratio is 0, so the fit is the point mass at 0
    (scale 0) in closed form; before, the likelihood grew without end as the scale shrank and the fit ran on."""
    import time

    ds = simulate(lvis_like_reference(12, seed=4), n_raters=2, magnitude=0.0, seed=0, include_reference=True).dataset()
    start = time.process_time()
    fit = fit_noise_profile(ds)
    assert time.process_time() - start < 5
    loc = fit.profile.localisation
    for comp in (loc.translation, loc.log_width, loc.log_height):
        assert (comp.a, comp.b, comp.scale, comp.scale_power) == (0.0, 0.0, 0.0, 0.0)
    assert loc.copula == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert fit.report["localisation"]["translation"]["no_spread"] is True
    assert fit.report["classes"]["n_class_mistakes"] == 0 and fit.profile.classes.rate == 0.0
    assert fit.report["n_matched"] > 0 and fit.report["n_near_miss"] == 0
    # the zero-noise model draws no offset, and its CDF is the step at 0 (not 0 / 0)
    x = np.array([0.1, 0.5])
    assert loc.translation.sample(x, np.random.default_rng(0)).tolist() == [0.0, 0.0]
    assert loc.translation.cdf(np.array([0.0, 0.3]), x).tolist() == [1.0, 1.0]
    assert LinearT(0.2, 0.0, 0.0, 200.0).cdf(np.array([0.1, 0.2]), x).tolist() == [0.0, 1.0]


def test_sizes_equal_up_to_round_off_are_one_size_not_a_poorly_conditioned_line():
    """Fifty raters' equal boxes give covariates differing in the last bit: polyfit warned
    (RankWarning) on every fit; they are now taken as one value."""
    import warnings

    rng = np.random.default_rng(1)
    x = 0.2 * (1 + np.finfo(float).eps * rng.integers(0, 3, 400))
    assert len(np.unique(x)) > 1
    y = np.abs(rng.normal(0.01, 0.02, 400))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, report = fit_folded_t(y, x)
    assert np.isfinite(report["aic"]) and model.scale > 0


def test_copula_of_a_column_without_spread_is_independent():
    rng = np.random.default_rng(2)
    u = np.column_stack([rng.random(100), np.ones(100), rng.random(100)])
    rows, _ = fit_copula(u)
    assert rows[1] == [0.0, 1.0, 0.0] and rows[0][1] == rows[2][1] == 0.0
    assert rows[0][2] == pytest.approx(np.corrcoef(stats.norm.ppf(np.clip(u[:, [0, 2]], 1e-6, 1 - 1e-6)),
                                                   rowvar=False)[0, 1], abs=1e-6)
