"""One Do/De pair of samples -> KS, τ* and their bootstrap intervals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bootstrap import percentile_interval
from .density import Grid, LinearBins, find_tau
from .separation import KSData


@dataclass
class Separation:
    """Point estimates on the full sample, intervals from the resamples."""

    ks: float
    ks_ci: tuple[float, float] | None
    tau: float
    tau_ci: tuple[float, float] | None
    method: str
    do_mode: float
    de_mode: float
    bandwidth_do: float
    bandwidth_de: float
    n: int

    @property
    def similarity_ci(self) -> tuple[float, float] | None:
        return None if self.tau_ci is None else (1.0 - self.tau_ci[1], 1.0 - self.tau_ci[0])


def _estimate(ks_data: KSData, do_bins: LinearBins, de_bins: LinearBins, multiplicity=None):
    f_do, h_do, log_do = do_bins.estimate(multiplicity)
    f_de, h_de, log_de = de_bins.estimate(multiplicity)
    anchor = find_tau(do_bins.grid.x, f_do, f_de, log_do, log_de)
    return ks_data.statistic(multiplicity), anchor, f_do, f_de, h_do, h_de


def separate(do: np.ndarray, de: np.ndarray, obs_image: np.ndarray, resamples: np.ndarray,
             grid: Grid, confidence: float) -> Separation:
    """KS and τ* of paired samples (``do[k]``, ``de[k]`` belong to image ``obs_image[k]``).

    ``resamples`` is ``(B, n_images)`` image multiplicities (B = 0: no intervals).
    """
    if len(do) == 0 or len(de) == 0:
        nan = float("nan")
        return Separation(nan, None, nan, None, "no_data", nan, nan, nan, nan, 0)
    n_images = resamples.shape[1] if len(resamples) else int(obs_image.max()) + 1
    ks_data = KSData(do, de, obs_image, n_images)
    do_bins, de_bins = LinearBins(do, grid, obs_image, n_images), LinearBins(de, grid, obs_image, n_images)
    ks, anchor, f_do, f_de, h_do, h_de = _estimate(ks_data, do_bins, de_bins)
    ks_boot, tau_boot = [], []
    used = np.zeros(n_images, bool)
    used[obs_image] = True
    for counts in resamples:
        if not counts[used].any():       # a resample without any image holding observations
            continue
        k, a, *_ = _estimate(ks_data, do_bins, de_bins, counts)
        ks_boot.append(k)
        tau_boot.append(a.tau)
    return Separation(
        ks=ks, ks_ci=percentile_interval(ks_boot, confidence) if len(resamples) else None,
        tau=anchor.tau, tau_ci=percentile_interval(tau_boot, confidence) if len(resamples) else None,
        method=anchor.method, do_mode=float(grid.x[np.argmax(f_do)]), de_mode=float(grid.x[np.argmax(f_de)]),
        bandwidth_do=h_do, bandwidth_de=h_de, n=len(do))
