"""One Do/De pair of samples -> KS, τ* and their bootstrap intervals."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bootstrap import percentile_interval
from .density import Grid, LinearBins, find_tau
from .separation import KSData
from .types import Threshold


@dataclass
class Separation(Threshold):
    """Point estimates on the full sample, intervals from the resamples; ``tau_method`` how τ* was
    found, the KDE modes and bandwidths of Do and De, ``n`` the pairs."""

    tau_method: str
    do_mode: float
    de_mode: float
    bandwidth_do: float
    bandwidth_de: float
    n: int
    support: KSData | None = field(default=None, repr=False)   #: Do and De on their sorted support


def _separation(ks, ks_ci, tau: float, tau_ci, **rest) -> Separation:
    """A :class:`Separation` whose similarity threshold and interval are ``1 - τ*`` and its interval's."""
    similarity_ci = None if tau_ci is None else (1.0 - tau_ci[1], 1.0 - tau_ci[0])
    return Separation(ks=ks, ks_ci=ks_ci, tau_star=tau, tau_ci=tau_ci, similarity_threshold=1.0 - tau,
                      similarity_ci=similarity_ci, **rest)


def _estimate(do_bins: LinearBins, de_bins: LinearBins, multiplicity=None, counts=(None, None)):
    f_do, h_do, log_do = do_bins.estimate(multiplicity, counts[0])
    f_de, h_de, log_de = de_bins.estimate(multiplicity, counts[1])
    return find_tau(do_bins.grid.x, f_do, f_de, log_do, log_de), f_do, f_de, h_do, h_de


def separate(do: np.ndarray, de: np.ndarray, obs_image: np.ndarray, resamples: np.ndarray,
             grid: Grid, confidence: float) -> Separation:
    """KS and τ* of paired samples (``do[k]``, ``de[k]`` belong to image ``obs_image[k]``).

    ``resamples`` is ``(B, n_images)`` image multiplicities (B = 0: no intervals).
    """
    if len(do) == 0 or len(de) == 0:
        nan = float("nan")
        return _separation(nan, None, nan, None, tau_method="no_data", do_mode=nan, de_mode=nan, bandwidth_do=nan,
                           bandwidth_de=nan, n=0)
    # the data set's image count, also without resamples ((0, n_images)): a stratum's own largest image
    # index may be smaller
    n_images = resamples.shape[1] if resamples.ndim == 2 else int(obs_image.max()) + 1
    ks_data = KSData(do, de, obs_image, n_images)
    do_bins, de_bins = LinearBins(do, grid, obs_image, n_images), LinearBins(de, grid, obs_image, n_images)
    anchor, f_do, f_de, h_do, h_de = _estimate(do_bins, de_bins)
    used = np.zeros(n_images, bool)
    used[obs_image] = True
    if len(resamples):      # a resample without any image holding observations is left out
        resamples = resamples[resamples[:, used].any(axis=1)]
    ks_boot = ks_data.statistics(resamples)
    grid_counts = zip(do_bins.counts_of(resamples), de_bins.counts_of(resamples)) if len(resamples) else ()
    tau_boot = [_estimate(do_bins, de_bins, m, c)[0].tau for m, c in zip(resamples, grid_counts)]
    return _separation(
        ks_data.statistic(), percentile_interval(ks_boot, confidence), anchor.tau,
        percentile_interval(tau_boot, confidence), tau_method=anchor.method, do_mode=float(grid.x[np.argmax(f_do)]), de_mode=float(grid.x[np.argmax(f_de)]),
        bandwidth_do=h_do, bandwidth_de=h_de, n=len(do), support=ks_data)
