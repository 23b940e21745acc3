"""Noise-aware evaluation (kalos_core.noise_aware): the truncated Laplace, the corner-noise IoU
(Eqs. 5-6), ε̄(W, H) and its large-box limit, the fit, AP^l ≤ AP ≤ AP^u, the CLI contract."""

import json

import numpy as np
import pytest
from scipy.integrate import quad

from kalos_core import load_coco
from kalos_core.cli import main
from kalos_core.convergence.cocoeval import rater_labels
from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.noise_aware import NoiseAwareConfig, NoiseFit, fit_reference_noise, noise_aware_evaluation
from kalos_core.noise_aware import laplace
from kalos_core.noise_aware.corner_noise import box_iou, corner_offsets, fit_offsets, pair_boxes, tukey_fences
from kalos_core.noise_aware.expected_iou import EpsInterpolator, corner_iou, eps_grid, expected_iou

COMPONENTS = ("x1", "x2", "y1", "y2")


def uniform_fit(sigma, M):
    return NoiseFit({c: sigma for c in COMPONENTS}, {c: M for c in COMPONENTS}, 0, 0)


def sample_truncated_laplace(rng, sigma, M, n):
    u = rng.random(n)
    mag = -sigma * np.log1p(-u * -np.expm1(-M / sigma))
    return np.where(rng.random(n) < 0.5, -mag, mag)


def noisy_dataset(n_images=40, sigma=2.0, M=8.0, seed=0, outliers=0):
    rng = np.random.default_rng(seed)
    images, aid = [], 1
    for i in range(n_images):
        anns = []
        for _ in range(int(rng.integers(1, 6))):
            c = int(rng.integers(1, 3))
            x, y = rng.uniform(0, 300, 2)
            w, h = rng.choice([16.0, 60.0, 200.0]) * rng.uniform(0.8, 1.2, 2)
            for r in ("r1", "r2"):
                e = sample_truncated_laplace(rng, sigma, M, 4)
                if outliers and r == "r2" and rng.random() < outliers:
                    e = e + 60.0
                x1, x2, y1, y2 = x + e[0], x + w + e[1], y + e[2], y + h + e[3]
                anns.append(Annotation(aid, r, c, (x1, y1, max(x2 - x1, 1.0), max(y2 - y1, 1.0))))
                aid += 1
        images.append(make_image(i + 1, 640, 480, ("r1", "r2"), anns))
    return MultiRaterDataset(images, {1: "a", 2: "b"}, "box")


@pytest.mark.parametrize("sigma, M", [(0.5, 2.0), (2.0, 8.0), (5.0, 3.0), (1.0, 40.0)])
def test_truncated_laplace_integrates_to_one_and_quadrature_agrees(sigma, M):
    assert quad(lambda x: float(laplace.pdf(x, sigma, M)), -M, M, points=[0.0])[0] == pytest.approx(1.0, abs=1e-9)
    assert laplace.pdf(M * 1.01, sigma, M) == 0.0
    x, w = laplace.quadrature(sigma, M, 8)
    assert w.sum() == pytest.approx(1.0) and np.all(np.abs(x) <= M)
    exact = quad(lambda x: abs(x) * float(laplace.pdf(x, sigma, M)), -M, M, points=[0.0])[0]
    assert laplace.mean_abs(sigma, M) == pytest.approx(exact, rel=1e-9)
    assert float(w @ np.abs(x)) == pytest.approx(exact, rel=1e-4)


def test_corner_noise_iou_equals_direct_iou():
    rng = np.random.default_rng(0)
    for _ in range(200):
        W, H = rng.uniform(5, 300, 2)
        x1, x2 = rng.uniform(-W / 2, W / 2, 2)
        y1, y2 = rng.uniform(-H / 2, H / 2, 2)
        gt = np.array([[0.0, 0.0, W, H]])
        ann = np.array([[x1, y1, W + x2 - x1, H + y2 - y1]])
        assert corner_iou(W, H, x1, x2, y1, y2) == pytest.approx(box_iou(gt, ann)[0, 0], abs=1e-12)
        np.testing.assert_allclose(corner_offsets(gt, ann)[0], [x1, x2, y1, y2], atol=1e-9)


def test_expected_iou_matches_monte_carlo_and_the_large_box_limit():
    fit = uniform_fit(2.0, 8.0)
    rng = np.random.default_rng(1)
    eta = sample_truncated_laplace(rng, 2.0, 8.0, (4, 400_000))
    mc = corner_iou(40.0, 25.0, *eta).mean()
    assert expected_iou(40.0, 25.0, fit) == pytest.approx(mc, abs=5e-4)
    e_abs = laplace.mean_abs(2.0, 8.0)
    for W, H in ((2000.0, 3000.0), (5000.0, 4000.0)):
        limit = 2 * e_abs * (1 / W + 1 / H)
        assert 1 - expected_iou(W, H, fit) == pytest.approx(limit, rel=0.01)
    # ε̄ shrinks as boxes grow, and the interpolated grid reproduces the direct value at its nodes
    grid = eps_grid(fit, 1000.0, points=12)
    assert np.all(np.diff(grid.eps, axis=0) < 0) and np.all(np.diff(grid.eps, axis=1) < 0)
    f = EpsInterpolator(grid)
    W, H = grid.widths[5], grid.heights[8]
    assert float(f(W, H)) == pytest.approx(1 - expected_iou(W, H, fit), abs=1e-12)
    between = float(f(np.sqrt(grid.widths[5] * grid.widths[6]), H))
    assert grid.eps[6, 8] < between < grid.eps[5, 8]


def test_sigma_by_maximum_likelihood_recovers_the_scale():
    rng = np.random.default_rng(2)
    x = sample_truncated_laplace(rng, 3.0, 12.0, 20_000)
    assert laplace.fit_sigma(x, 12.0) == pytest.approx(3.0, rel=0.05)


def test_tukey_fence_drops_outliers_and_split_shares_the_scale():
    rng = np.random.default_rng(3)
    off = sample_truncated_laplace(rng, 2.0, 50.0, (500, 4)).T.T
    off[:10, 2] = 500.0
    lo, hi = tukey_fences(off)[2]
    assert hi < 500.0
    ref = fit_offsets(off, share="reference")
    split = fit_offsets(off, share="split")
    assert ref.n_inliers <= 490 and ref.n_pairs == 500
    for c in COMPONENTS:
        assert split.sigma[c] == pytest.approx(ref.sigma[c] / np.sqrt(2))
        assert split.M[c] == pytest.approx(ref.M[c] / np.sqrt(2))
        assert ref.M[c] == pytest.approx(max(abs(v) for v in ref.fences[c]))


def test_pairing_is_per_class_and_drops_iou_below_0_1():
    im = make_image(1, 100, 100, ("a", "b"), [
        Annotation(1, "a", 1, (0, 0, 10, 10)), Annotation(2, "b", 1, (1, 0, 10, 10)),
        Annotation(3, "a", 1, (50, 50, 10, 10)), Annotation(4, "b", 1, (58, 58, 10, 10)),   # IoU 0.02
        Annotation(5, "a", 2, (0, 0, 10, 10)), Annotation(6, "b", 1, (80, 80, 5, 5))])
    ref, oth, iou = pair_boxes(MultiRaterDataset([im], {1: "x", 2: "y"}, "box"), "a", "b", 0.1)
    assert len(iou) == 1 and iou[0] == pytest.approx(90 / 110)


def test_fit_recovers_the_simulated_noise():
    ds = noisy_dataset(200, sigma=2.0, M=8.0, seed=4, outliers=0.05)
    fit = fit_reference_noise(ds, "r1", config=NoiseAwareConfig(share="reference"))
    assert fit.n_inliers < fit.n_pairs
    # the observed offset is a difference of two rater errors: its mean |x| is above one rater's
    for c in COMPONENTS:
        assert laplace.mean_abs(fit.observed_sigma[c], fit.M[c]) > laplace.mean_abs(2.0, 8.0)


def _predictions(ds, rng, rater="r2", fp=0.3):
    preds = [dict(image_id=d["image_id"], category_id=d["category_id"], bbox=d["bbox"],
                  score=float(rng.uniform(0.2, 1))) for d in rater_labels(ds, rater, [im.id for im in ds.images])]
    for im in ds.images:
        if rng.random() < fp:
            preds.append(dict(image_id=im.id, category_id=1, bbox=[400.0, 300.0, 30.0, 30.0], score=float(rng.random())))
    return preds


def _assert_ordered(result):
    for block in [result.ap, *result.by_size.values()]:
        for key, b in block.items():
            if np.isfinite(b["ap"]):
                assert b["lower"] <= b["ap"] + 1e-12 and b["ap"] <= b["upper"] + 1e-12, key


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lower_ap_upper_on_synthetic_cases(seed):
    ds = noisy_dataset(60, seed=seed)
    r = noise_aware_evaluation(ds, _predictions(ds, np.random.default_rng(seed)), "r1")
    _assert_ordered(r)
    assert r.ap["50:95"]["upper"] > r.ap["50:95"]["lower"]
    gap = {s: b["50:95"]["upper"] - b["50:95"]["lower"] for s, b in r.by_size.items()}
    assert gap["small"] > gap["large"]


@pytest.mark.realdata
def test_lvis_bounds_hold_and_small_boxes_are_most_uncertain(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    r = noise_aware_evaluation(ds, _predictions(ds, np.random.default_rng(0)), "r1")
    _assert_ordered(r)
    gap = {s: b["50:95"]["upper"] - b["50:95"]["lower"] for s, b in r.by_size.items()}
    assert gap["small"] > gap["medium"] > gap["large"] >= 0
    assert r.noise.n_pairs > 1000 and 0 < r.noise.n_inliers < r.noise.n_pairs


def test_cli_writes_the_contract(tmp_path):
    from kalos_core.io.coco import dataset_to_coco

    ds = noisy_dataset(40, seed=5)
    (tmp_path / "ref.json").write_text(json.dumps(dataset_to_coco(ds)))
    (tmp_path / "p.json").write_text(json.dumps(_predictions(ds, np.random.default_rng(5))))
    out = tmp_path / "out.json"
    assert main(["noise-aware", "--predictions", str(tmp_path / "p.json"), "--reference", str(tmp_path / "ref.json"),
                 "--rater", "r1", "--task", "bbox", "--output", str(out)]) == 0
    d = json.loads(out.read_text())
    assert {"sigma", "M", "n_pairs", "n_inliers"} <= set(d["noise"])
    assert set(d["ap"]) == {"50", "75", "95", "50:95"} and set(d["ap"]["50"]) == {"lower", "ap", "upper"}
    assert set(d["by_size"]) == {"small", "medium", "large"}
    assert 1.0 < d["ap"]["50"]["ap"] <= 100.0                                      # percent
    assert main(["noise-aware", "--predictions", str(tmp_path / "p.json"), "--reference",
                 str(tmp_path / "ref.json"), "--rater", "nobody"]) == 2


def test_config_parameters_are_command_line_options(tmp_path):
    from kalos_core.io.coco import dataset_to_coco
    from kalos_core.params import ParamError

    with pytest.raises(ParamError, match="share") as e:
        NoiseAwareConfig(share="both")
    assert e.value.param == "share"
    ds = noisy_dataset(20, seed=6)
    (tmp_path / "ref.json").write_text(json.dumps(dataset_to_coco(ds)))
    (tmp_path / "p.json").write_text(json.dumps(_predictions(ds, np.random.default_rng(6))))
    out = tmp_path / "out.json"
    assert main(["noise-aware", "--predictions", str(tmp_path / "p.json"), "--reference", str(tmp_path / "ref.json"),
                 "--share", "reference", "--grid-points", "6", "--noise-raters", "r2", "--output", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["config"]["share"] == "reference" and d["config"]["grid_points"] == 6 and d["reference"] == "r1"
    assert len(d["eps_grid"]["widths"]) == 6
    assert main(["noise-aware", "--predictions", str(tmp_path / "none.json"), "--reference",
                 str(tmp_path / "ref.json")]) == 2


# -- issue 22: bad input -------------------------------------------------------------------------
def test_empty_reference_is_refused_not_an_index_error(tmp_path, capsys):
    ref, preds = tmp_path / "ref.json", tmp_path / "p.json"
    ref.write_text(json.dumps({"images": [], "annotations": [], "categories": [{"id": 1, "name": "cat"}]}))
    preds.write_text("[]")
    assert main(["noise-aware", "--predictions", str(preds), "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert "no images: nothing to measure" in err and "IndexError" not in err


def test_summary_prints_n_a_for_a_size_without_reference_boxes():
    from kalos_core.noise_aware.measure import summary

    ds = noisy_dataset(20, seed=3)            # boxes of about 16, 60 and 200 px: the 200 px ones dropped
    for im in ds.images:
        im.annotations = [a for a in im.annotations if max(a.geometry[2:]) < 90]   # no large box (> 96 px)
    result = noise_aware_evaluation(ds, _predictions(ds, np.random.default_rng(3)), "r1")
    assert result.to_dict()["by_size"]["large"]["50"] == {"lower": None, "ap": None, "upper": None}
    text = summary(result)
    assert "nan" not in text
    large = [line.split() for line in text.splitlines() if line.startswith("large")]
    assert large and all(row[2:] == ["n/a"] * 3 for row in large)
    assert "n/a: no reference boxes of that size" in text
