"""Subsets of images, interval statistics, Eq. 1 and its inverse, the refitted line."""

from __future__ import annotations

import numpy as np

from .types import EQ1_INTERCEPT, EQ1_SLOPE, IntervalStats


def draw_subsets(n_images: int, n_subsets: int, fraction: float, seed: int) -> np.ndarray:
    """(n_subsets, n_images) bool: each row a subset of ``round(fraction · n)`` images (at least
    one) drawn without replacement; the same seed gives the same subsets."""
    rng = np.random.default_rng(seed)
    size = max(1, int(round(fraction * n_images)))
    masks = np.zeros((n_subsets, n_images), dtype=bool)
    for s in range(n_subsets):
        masks[s, rng.choice(n_images, size=size, replace=False)] = True
    return masks


def normal_quantile(confidence: float) -> float:
    """z of the two-sided normal interval at ``confidence``: ``scipy.special.ndtri(0.5 + confidence / 2)``,
    what ``scipy.stats.norm.ppf`` computes, bit for bit; at the default 95 % its value, without the
    import (scipy.special ~0.1 s, scipy.stats ~0.5 s CPU)."""
    if confidence == 0.95:
        return 1.959963984540054
    from scipy.special import ndtri

    return float(ndtri(0.5 + confidence / 2))


def interval_stats(values, confidence: float = 0.95) -> IntervalStats:
    """Mean, SD (ddof 1), min, max, the normal interval mean ± z·SD (the paper's Table 3, z = 1.96
    at 95 %) and the percentile interval, over the finite values."""
    values = np.asarray(values, dtype=float)
    ok = values[np.isfinite(values)]
    nan = float("nan")
    if len(ok) == 0:
        return IntervalStats(values, nan, nan, nan, nan, (nan, nan), (nan, nan), 0)
    mean = float(ok.mean())
    sd = float(ok.std(ddof=1)) if len(ok) > 1 else 0.0
    z = normal_quantile(confidence)
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(ok, [tail, 100 - tail])
    return IntervalStats(values, mean, sd, float(ok.min()), float(ok.max()), (mean - z * sd, mean + z * sd),
                         (float(lo), float(hi)), int(len(ok)))


def normal_interval(mean: float, sd: float, confidence: float = 0.95) -> tuple[float, float]:
    """mean ± z·SD (z = 1.96 at 95 %): how Table 3's CI columns follow from its Mean and Std."""
    z = normal_quantile(confidence)
    return mean - z * sd, mean + z * sd


def map_from_alpha(alpha, slope: float = EQ1_SLOPE, intercept: float = EQ1_INTERCEPT):
    """Eq. 1: mAP = 0.836 α + 0.197 (both as fractions)."""
    return slope * np.asarray(alpha, dtype=float) + intercept if np.ndim(alpha) else slope * alpha + intercept


def alpha_from_map(map_value, slope: float = EQ1_SLOPE, intercept: float = EQ1_INTERCEPT):
    """Eq. 1 inverted: α = (mAP − 0.197) / 0.836."""
    return (np.asarray(map_value, dtype=float) - intercept) / slope if np.ndim(map_value) \
        else (map_value - intercept) / slope


def fit_line(x, y) -> dict:
    """Least-squares line y = slope·x + intercept over the finite pairs, with Pearson r and R²."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    nan = float("nan")
    if len(x) < 2 or np.ptp(x) == 0:
        return {"slope": nan, "intercept": nan, "r": nan, "r2": nan, "n": int(len(x))}
    slope, intercept = np.polyfit(x, y, 1)
    r = float(np.corrcoef(x, y)[0, 1]) if np.ptp(y) > 0 else nan
    return {"slope": float(slope), "intercept": float(intercept), "r": r, "r2": r * r, "n": int(len(x))}


def place(value: float, interval: tuple[float, float]) -> str:
    """``below``, ``inside`` or ``above`` an interval (inclusive); ``unknown`` for NaN."""
    lo, hi = interval
    if not (np.isfinite(value) and np.isfinite(lo) and np.isfinite(hi)):
        return "unknown"
    return "below" if value < lo else "above" if value > hi else "inside"
