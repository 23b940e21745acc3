"""Percentile bootstrap over images (Sec. 11): resample images with replacement.

A resample is a vector of image multiplicities; an observation (Do or De)
weighs as much as its query image was drawn. The same resamples are used for
every distance and stratum of a calibration, so their intervals are comparable.
"""

from __future__ import annotations

import numpy as np


def image_resamples(n_images: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_resamples, n_images)`` multiplicities of each image in each resample."""
    out = np.zeros((n_resamples, n_images), np.int64)
    for b in range(n_resamples):
        out[b] = np.bincount(rng.integers(0, n_images, n_images), minlength=n_images)
    return out


def percentile_interval(values, confidence: float) -> tuple[float, float] | None:
    """Central ``confidence`` interval of the bootstrap values (NaNs ignored); None if none are finite."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(v, [tail, 1.0 - tail])
    return float(lo), float(hi)
