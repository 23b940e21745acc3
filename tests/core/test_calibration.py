"""Calibration (docs/method.md §5): known answers for the estimator, the samplers and the whole pipeline."""

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from kalos_core import Annotation, load_coco, make_image
from kalos_core.calibration import CalibrationConfig, calibrate
from kalos_core.calibration.bootstrap import image_resamples, percentile_interval
from kalos_core.calibration.density import Grid, LinearBins, find_tau
from kalos_core.calibration.recommend import standard_threshold
from kalos_core.calibration.sampling import PreparedCache, build_plan, observe
from kalos_core.calibration.separation import KSData, braylan_sigma, ks_statistic
from kalos_core.data import MultiRaterDataset
from kalos_core.demo_data import build_demo
from kalos_core.geometry import get_distance

X = Grid(0.0, 1.0, 1024).x


def normal(x, mu, sd):
    return stats.norm.pdf(x, mu, sd)


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("caldemo"), n_images=40, seed=0, with_images=False)


# --- the estimator: KDE, τ*, KS, σ -------------------------------------------------------------

def test_binned_kde_matches_an_exact_gaussian_kde():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.beta(2, 8, 3000), np.ones(500)])
    bins = LinearBins(values, Grid(0.0, 1.0, 1024))
    f, h = bins.density()
    exact = stats.gaussian_kde(values, bw_method=h / values.std(ddof=1))(X)
    assert h == pytest.approx(values.std() * len(values) ** -0.2)
    assert np.max(np.abs(f - exact)) < 2e-3 * exact.max()


def test_tau_is_the_analytic_crossing_of_two_gaussians():
    rng = np.random.default_rng(2)
    do, de = rng.normal(0.3, 0.06, 200_000), rng.normal(0.7, 0.1, 200_000)
    grid = Grid.for_values(np.concatenate([do, de]))
    b_do, b_de = LinearBins(do, grid), LinearBins(de, grid)
    (f_do, h_do), (f_de, h_de) = b_do.density(), b_de.density()
    anchor = find_tau(grid.x, f_do, f_de)
    # the KDE of N(mu, s^2) is N(mu, s^2 + h^2): solve N1(x) = N2(x) between the means
    s1, s2 = math.hypot(0.06, h_do), math.hypot(0.1, h_de)
    expected = optimize.brentq(lambda x: normal(x, 0.3, s1) - normal(x, 0.7, s2), 0.3, 0.7)
    assert anchor.method == "crossing"
    assert anchor.tau == pytest.approx(expected, abs=3e-3)
    assert anchor.do_mode == pytest.approx(0.3, abs=0.01)


def test_mode_is_taken_in_the_signal_region_not_at_a_chance_point_mass():
    # Do: 60 % signal near 0.2 and 40 % "nothing nearby" at 1.0 (its global maximum);
    # De: mostly at 1.0. The anchor is the crossing right of the *signal* mode.
    f_do = 0.6 * normal(X, 0.2, 0.05) + 0.4 * normal(X, 1.0, 0.01)
    f_de = 0.2 * normal(X, 0.7, 0.1) + 0.8 * normal(X, 1.0, 0.01)
    assert X[np.argmax(f_do)] == pytest.approx(1.0, abs=0.01)
    expected = optimize.brentq(lambda x: 0.6 * normal(x, 0.2, 0.05) - 0.2 * normal(x, 0.7, 0.1), 0.2, 0.7)
    anchor = find_tau(X, f_do, f_de)
    assert (anchor.method, anchor.do_mode) == ("crossing", pytest.approx(0.2, abs=2e-3))
    assert anchor.tau == pytest.approx(expected, abs=1e-3)


def test_fallback_density_minimum_between_the_modes():
    # Do dominates from its mode (0.9) to the end of the grid; the De mode (0.97) lies right of it
    f_do, f_de = normal(X, 0.9, 0.08), normal(X, 0.97, 0.5)
    anchor = find_tau(X, f_do, f_de)
    lo, hi = np.searchsorted(X, 0.9 - 1e-3), int(np.argmax(f_de))
    expected = X[lo + np.argmin((f_do + f_de)[lo: hi + 1])]
    assert anchor.method == "density_minimum"
    assert anchor.tau == pytest.approx(expected, abs=2e-3)


def test_fallback_no_separation_gives_the_do_95_percent_quantile():
    f = normal(X, 0.5, 0.1)
    anchor = find_tau(X, f, f.copy())
    assert anchor.method == "no_separation"
    assert anchor.tau == pytest.approx(0.5 + 1.6449 * 0.1, abs=2e-3)


def test_ks_is_one_sided_and_matches_scipy():
    assert ks_statistic([0.1, 0.2], [0.15, 0.9]) == 0.5
    assert ks_statistic([0.8, 0.9], [0.1, 0.2]) == 0.0          # De smaller than Do: no separation
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 700), rng.normal(0.4, 1, 500)
    assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b, alternative="greater", method="asymp").statistic)


def test_braylan_sigma_counts_do_values_below_the_de_5_percent_point():
    de = np.arange(100) / 100
    assert braylan_sigma([0.01, 0.03, 0.5, 0.9], de) == 0.5
    assert braylan_sigma([0.05], de) == 0.0                    # P(De < 0.05) = 0.05 is not below 0.05


def test_a_resample_given_per_image_equals_the_resampled_data():
    rng = np.random.default_rng(6)
    groups = rng.integers(0, 40, 3000)
    do, de = rng.beta(2, 6, 3000), rng.beta(6, 2, 3000)
    counts = image_resamples(40, 1, rng)[0]
    reps = counts[groups]
    grid = Grid(0.0, 1.0, 1024)
    f, h = LinearBins(do, grid, groups, 40).density(counts)
    f_explicit, h_explicit = LinearBins(np.repeat(do, reps), grid).density()
    assert h == pytest.approx(h_explicit) and np.allclose(f, f_explicit)
    ks = KSData(do, de, groups, 40).statistic(counts)
    assert ks == pytest.approx(ks_statistic(np.repeat(do, reps), np.repeat(de, reps)))


def test_bootstrap_helpers():
    rs = image_resamples(7, 50, np.random.default_rng(0))
    assert rs.shape == (50, 7) and (rs.sum(1) == 7).all()
    assert percentile_interval(np.arange(101.0), 0.9) == (pytest.approx(5.0), pytest.approx(95.0))
    assert percentile_interval([np.nan], 0.95) is None


def test_standard_threshold_is_the_coarsest_rounding_inside_the_interval():
    assert standard_threshold(0.346, (0.332, 0.357)) == 0.35
    assert standard_threshold(0.31, (0.28, 0.33)) == 0.3
    assert standard_threshold(0.37, (0.365, 0.372)) is None
    assert standard_threshold(0.5, None) is None


# --- the samplers ------------------------------------------------------------------------------

def box(aid, rater, x, y, w, h, cat=1):
    return Annotation(aid, rater, cat, (x, y, w, h))


def random_box_dataset(seed=0, n_images=12):
    rng = np.random.default_rng(seed)
    images, aid = [], 0
    for i in range(n_images):
        raters = ["a", "b", "c"] if i % 3 else ["a", "b"]
        anns = []
        for r in raters:
            for _ in range(0 if (r == "c" and i % 4 == 1) else rng.integers(1, 5)):   # c sometimes draws nothing
                x, y = rng.uniform(0, 80, 2)
                anns.append(box(aid, r, x, y, *rng.uniform(5, 20, 2)))
                aid += 1
        images.append(make_image(i, 100, 100, raters, anns))
    return MultiRaterDataset(images, {1: "thing"}, "box")


def naive_nearest(spec, image, ann, others):
    """Distance from ``ann`` to the nearest of ``others`` (1.0 if none), one pair at a time."""
    if not others:
        return 1.0
    pa = spec.prepare(image[0], [ann])
    best = max(float(spec.similarity(pa, spec.prepare(image[1], [o]))[0, 0]) for o in others)
    return 1.0 - best


@pytest.mark.parametrize("name", ["iou", "giou", "centroid"])
def test_vectorised_samples_equal_the_definition(name):
    data = random_box_dataset()
    spec = get_distance("box", name)
    plan = build_plan(data, np.random.default_rng(5))
    do, de = observe(plan, spec, PreparedCache(plan))
    expected_do, expected_de, k = [], [], 0
    groups = [(im, r) for im in data.images for r in im.raters]
    for im in data.images:
        for a in sorted(im.annotations, key=lambda a: im.raters.index(a.rater)):
            for q in im.raters:
                if q == a.rater:
                    continue
                expected_do.append(naive_nearest(spec, (im, im), a, [o for o in im.annotations if o.rater == q]))
                jm, jr = groups[plan.de_group[k]]
                assert jm is not im                              # De partners come from another image
                expected_de.append(naive_nearest(spec, (im, jm), a, [o for o in jm.annotations if o.rater == jr]))
                k += 1
    assert k == plan.n_observations
    np.testing.assert_allclose(do, expected_do, atol=1e-12)
    np.testing.assert_allclose(de, expected_de, atol=1e-12)
    assert (do == 1.0).any() and (de == 1.0).any()               # a rater who drew nothing costs 1.0


def test_sessions_of_one_rater_are_not_other_raters():
    im = make_image(1, 100, 100, ["a (S1)", "a (S2)", "b"],
                    [box(1, "a (S1)", 0, 0, 10, 10), box(2, "a (S2)", 0, 0, 10, 10), box(3, "b", 50, 50, 10, 10)],
                    row_rater={"a (S1)": "a", "a (S2)": "a", "b": "b"})
    other = make_image(2, 100, 100, ["b"], [box(4, "b", 0, 0, 10, 10)])
    plan = build_plan(MultiRaterDataset([im, other], {1: "x"}, "box"), np.random.default_rng(0))
    do, _ = observe(plan, get_distance("box", "iou"), PreparedCache(plan))
    # a's two sessions are each compared with b only (IoU 0 -> 1.0); b with both sessions
    assert plan.n_observations == 4 and np.all(do == 1.0)


def test_de_draws_are_seeded_and_skip_the_query_image():
    data = random_box_dataset(n_images=30)
    one = build_plan(data, np.random.default_rng(7)).de_group
    assert np.array_equal(one, build_plan(data, np.random.default_rng(7)).de_group)
    assert not np.array_equal(one, build_plan(data, np.random.default_rng(8)).de_group)


# --- the pipeline on constructed data with a known answer ---------------------------------------

def pair_image(i, x, y, w, iou_distance, scale=100.0):
    """Rater a's square box at ``(x, y)`` (relative), side ``w``; b's is shifted right so that
    their IoU distance is exactly ``iou_distance`` (IoU = (w - s) / (w + s))."""
    shift = w * iou_distance / (2.0 - iou_distance)
    return make_image(i, scale, scale, ["a", "b"], [box(2 * i, "a", x * scale, y * scale, w * scale, w * scale),
                                                    box(2 * i + 1, "b", (x + shift) * scale, y * scale, w * scale,
                                                        w * scale)])


def grid_of_pairs(n=100, iou_distance=0.2, size=0.05):
    """Each image's pair sits in its own cell of a 10 x 10 grid: cross-image IoU is 0 (De = 1.0)."""
    images = [pair_image(i, (i % 10) / 10 + 0.01, (i // 10) / 10 + 0.01, size, iou_distance) for i in range(n)]
    return MultiRaterDataset(images, {1: "thing"}, "box")


def test_point_masses_give_ks_one_and_the_midpoint():
    res = calibrate(grid_of_pairs(), CalibrationConfig(distances=("iou", "centroid"), bootstrap=20))
    iou = res.distances["iou"]
    assert iou.do.median == pytest.approx(0.2) and iou.de.median == 1.0
    assert iou.ks == 1.0 and iou.sigma == 1.0
    # both samples are point masses with the same (floor) bandwidth: they cross half-way
    assert (iou.tau_method, iou.tau_star) == ("crossing", pytest.approx(0.6, abs=1e-3))
    assert iou.similarity_threshold == pytest.approx(0.4, abs=1e-3)
    assert iou.tau_ci == (pytest.approx(0.6, abs=1e-3), pytest.approx(0.6, abs=1e-3))
    assert res.distances["centroid"].ks == 1.0
    rec = res.recommended                                        # tie in KS: the first distance wins
    assert rec.distance == "iou"
    assert rec.standard_threshold == standard_threshold(iou.similarity_threshold, iou.similarity_ci)
    assert res.similarity_threshold == rec.similarity_threshold
    assert sum(iou.histogram["do"]) == sum(iou.histogram["de"]) == 200
    assert iou.histogram["do"][9] + iou.histogram["do"][10] == 200   # 0.2 (up to rounding) sits on an edge
    assert iou.histogram["de"][-1] == 200 and len(iou.histogram["edges"]) == 51


def test_a_tie_in_ks_goes_to_the_first_scale_invariant_distance():
    # all three separate perfectly (KS 1): a tie, so the scale-dependent centroid named first does not win
    res = calibrate(grid_of_pairs(), CalibrationConfig(distances=("centroid", "giou", "iou"), bootstrap=20))
    rec = res.recommended
    assert (rec.distance, rec.scale_dependent, rec.alternative) == ("giou", False, None)
    assert "first scale-invariant" in rec.reason and "tied: centroid 1.000, iou 1.000" in rec.reason
    assert rec.tau_star == res.distances["giou"].tau_star and rec.ks == res.distances["giou"].ks
    # every pair overlaps with IoU 0.8 in one class: the threshold matches them all, alpha is 1
    assert (rec.mean_alpha, rec.global_alpha) == (1.0, 1.0)
    plain = calibrate(grid_of_pairs(), CalibrationConfig(distances=("iou", "centroid"), bootstrap=0,
                                                         alpha_preview=False)).recommended
    assert (plain.distance, plain.scale_dependent, plain.alternative, plain.mean_alpha) == ("iou", False, None, None)


def exact_kde_crossing(do, de, lo, hi):
    """Crossing of two untruncated Gaussian KDEs with the documented bandwidth rule
    (Scott, floored at two steps of the 1,024-point grid on [0, 1]), from log-densities."""
    def log_kde(x, v):
        h = max(v.std() * len(v) ** -0.2, 2 / 1023)
        return np.logaddexp.reduce(stats.norm.logpdf(x, v, h)) - np.log(len(v))
    return optimize.brentq(lambda x: log_kde(x, do) - log_kde(x, de), lo + 1e-3, hi)


def test_strata_use_asymmetric_matching():
    # 25 small pairs (relative area 1e-4) at IoU distance 0.5 in 0.1-cells of the top half, 10 large
    # pairs (0.0324) at 0.1 in 0.2 x 0.25 cells of the bottom half: no cross-image overlap (De = 1.0)
    images = [pair_image(i, (i % 10) / 10 + 0.01, (i // 10) / 10 + 0.01, 0.01, 0.5) for i in range(25)]
    images += [pair_image(25 + i, (i % 5) / 5 + 0.005, 0.5 + (i // 5) / 4 + 0.01, 0.18, 0.1) for i in range(10)]
    # one image where a small box of rater a meets a large box of rater b (free area of the top half)
    images.append(make_image(99, 100, 100, ["a", "b"], [box(900, "a", 75, 28, 1, 1), box(901, "b", 75, 28, 20, 20)]))
    res = calibrate(MultiRaterDataset(images, {1: "x"}, "box"),
                    CalibrationConfig(distances=("iou",), bootstrap=10, stratify=True))
    strata = res.distances["iou"].strata
    assert (strata["small"].n_do, strata["medium"].n_do, strata["large"].n_do) == (51, 0, 21)
    # the mixed image: the small box's nearest is the large one (IoU 1/400), and vice versa
    mixed = 1 - 1 / 400
    for name, d, n in (("small", 0.5, 50), ("large", 0.1, 20)):
        do, de = np.array([d] * n + [mixed]), np.ones(n + 1)
        expected = exact_kde_crossing(do, de, lo=d, hi=0.999)
        assert strata[name].tau_star == pytest.approx(expected, abs=2e-3)
        assert strata[name].ks == 1.0                  # 0.9975 is still below every De value
    assert math.isnan(strata["medium"].ks) and strata["medium"].tau_method == "no_data"
    assert res.to_dict()["distances"]["iou"]["strata"]["medium"]["ks"] is None


def test_same_seed_same_json_and_other_seeds_agree_within_their_intervals(demo_path):
    data = load_coco(demo_path, "bbox")
    a = calibrate(data, CalibrationConfig(seed=0))
    assert json.dumps(a.to_dict()) == json.dumps(calibrate(data, CalibrationConfig(seed=0)).to_dict())
    b = calibrate(data, CalibrationConfig(seed=1))
    assert a.to_dict() != b.to_dict()
    for name in a.distances:
        ta, tb = a.distances[name], b.distances[name]
        assert ta.tau_ci[0] <= tb.tau_star <= ta.tau_ci[1]
        assert tb.tau_ci[0] <= ta.tau_star <= tb.tau_ci[1]
        assert ta.ks_ci[0] <= ta.ks <= ta.ks_ci[1]


def test_demo_polygons_exact_and_rasterised_iou_agree(demo_path):
    data = load_coco(demo_path, "segm")
    res = calibrate(data, CalibrationConfig(distances=("iou", "mask_iou", "giou", "centroid"), bootstrap=0))
    iou, raster = res.distances["iou"], res.distances["mask_iou"]
    assert raster.ks == pytest.approx(iou.ks, abs=0.01)
    assert raster.tau_star == pytest.approx(iou.tau_star, abs=0.01)
    rec = res.recommended
    invariant = rec.alternative if rec.scale_dependent else rec        # the image-diagonal centroid may win
    assert invariant.distance in ("iou", "mask_iou") and iou.ks > res.distances["giou"].ks
    assert iou.tau_ci is None and res.recommended.standard_threshold is None   # no bootstrap, no interval


def test_keypoints_calibrate():
    rng = np.random.default_rng(4)
    images, aid = [], 0
    for i in range(30):
        base = rng.uniform(20, 80, (5, 2))
        anns = []
        for r in ("a", "b"):
            pts = base + rng.normal(0, 1.0, base.shape)
            anns.append(Annotation(aid, r, 1, [v for p in pts for v in (*p, 2.0)], (10, 10, 80, 80)))
            aid += 1
        images.append(make_image(i, 100, 100, ["a", "b"], anns))
    res = calibrate(MultiRaterDataset(images, {1: "person"}, "keypoints"), CalibrationConfig(bootstrap=10))
    assert set(res.distances) == {"mpjpe", "oks"} and res.task == "keypoints"
    assert res.distances["mpjpe"].ks > 0.9
    assert res.distances["mpjpe"].do.mean < res.distances["mpjpe"].de.mean


def test_too_little_data_is_a_clear_error():
    lone = MultiRaterDataset([make_image(1, 10, 10, ["a", "b"], [box(1, "a", 0, 0, 5, 5)])], {1: "x"}, "box")
    with pytest.raises(ValueError, match="at least two images"):
        calibrate(lone)
    with pytest.raises(ValueError, match="unknown distance"):
        calibrate(grid_of_pairs(), CalibrationConfig(distances=("iou", "nope")))


def test_the_draws_follow_image_ids_rater_names_and_annotation_ids_not_the_file_order(demo_path):
    import dataclasses

    data = load_coco(demo_path, "bbox")
    shuffled = dataclasses.replace(data, images=[
        dataclasses.replace(im, raters=tuple(reversed(im.raters)), annotations=list(reversed(list(im.annotations))))
        for im in np.random.default_rng(4).permutation(np.array(data.images, dtype=object))])
    assert [im.id for im in shuffled.images] != [im.id for im in data.images]
    config = CalibrationConfig(distances=("iou", "giou"), bootstrap=20, seed=5, alpha_preview=False)
    first, second = ({k: v for k, v in calibrate(d, config).to_dict().items() if k != "timings"}
                     for d in (data, shuffled))
    assert first == second


def test_strata_without_resamples_give_the_same_point_estimates(demo_path):
    # a stratum whose observations stop before the last image used to size its bootstrap tables
    # from its own largest image index, and --stratify --bootstrap 0 failed on a matmul shape
    data = load_coco(demo_path, "bbox")
    with_ci = calibrate(data, CalibrationConfig(distances=("iou",), bootstrap=10, stratify=True))
    without = calibrate(data, CalibrationConfig(distances=("iou",), bootstrap=0, stratify=True))
    a, b = with_ci.distances["iou"], without.distances["iou"]
    assert (a.ks, a.tau_star) == (b.ks, b.tau_star) and b.tau_ci is None and b.ks_ci is None
    for name in a.strata:
        sa, sb = a.strata[name], b.strata[name]
        same = [(sa.ks, sb.ks), (sa.tau_star, sb.tau_star), (sa.n_do, sb.n_do)]
        assert all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in same), name
        assert sb.tau_ci is None and sb.ks_ci is None
