"""Gaussian kernel densities on a grid and the calibration anchor τ*.

The KDE is *binned*: each value is split linearly between its two neighbouring
grid points, and the grid counts are convolved with a sampled Gaussian kernel.
On a 1,024-point grid over ``[0, 1]`` this agrees with an exact Gaussian KDE
to about 1e-4 (checked in the tests against ``scipy.stats.gaussian_kde``), and
it makes a weighted density (a bootstrap resample) cost two ``bincount`` calls.

The bandwidth is Scott's rule, ``h = std * n**(-1/5)`` (scipy's default), with
``n`` the (weighted) number of values; it never goes below two grid steps, so a
sample of identical values still has a density.

τ* (docs/method.md §5) is the first point right of the Do mode where the Do density
stops exceeding the De density. Choices the method leaves open:

* the *Do mode* is the highest point of the Do density **where it exceeds the De
  density** (the signal region). A point mass of "nothing of the other rater
  nearby" distances at 1.0 is chance, not signal, and must not be taken as the
  mode; where the global Do maximum is in the signal region (the usual case)
  the two definitions agree;
* ``tau_method = "crossing"``: the crossing is linearly interpolated between
  the two grid points around the sign change of ``f_Do - f_De``. The binned
  kernel reaches 5 bandwidths; where a density is 0 on the grid (a gap between
  Do and De wider than that, e.g. very clean data), the exact log-densities are
  compared instead and the crossing is interpolated on the log scale;
* ``"density_minimum"`` (fallback): no crossing right of the mode, but the De
  mode lies right of the Do mode: the minimum of the pooled density
  ``f_Do + f_De`` between the two modes;
* ``"no_separation"`` (last resort): the Do density nowhere exceeds the De
  density, or the De mode is not right of the Do mode. τ* is then the Do
  density's 95 % quantile, a lenient threshold; the KS statistic is then near
  zero and the threshold carries no evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import sparse


@dataclass(frozen=True)
class Grid:
    """``n`` equally spaced evaluation points on ``[lo, hi]``."""

    lo: float
    hi: float
    n: int = 1024

    @property
    def x(self) -> np.ndarray:
        return np.linspace(self.lo, self.hi, self.n)

    @property
    def dx(self) -> float:
        return (self.hi - self.lo) / (self.n - 1)

    @classmethod
    def for_values(cls, values: np.ndarray, n: int = 1024) -> "Grid":
        """``[0, 1]`` when every value lies in it (all registered distances do);
        otherwise the observed range (padded by 5 % on each side)."""
        lo, hi = float(np.min(values)), float(np.max(values))
        if lo >= 0.0 and hi <= 1.0:
            return cls(0.0, 1.0, n)
        pad = 0.05 * max(hi - lo, 1e-9)
        return cls(lo - pad, hi + pad, n)


class LinearBins:
    """Values pre-assigned to grid points (linear binning), for fast resampled densities.

    ``groups`` (e.g. the image of each value, ``0 .. n_groups-1``) lets a resample be
    given as a multiplicity per group: the per-group grid counts and moments are
    aggregated once, so a resampled density costs O(grid + groups), not O(values).
    """

    def __init__(self, values: np.ndarray, grid: Grid, groups: np.ndarray | None = None,
                 n_groups: int | None = None) -> None:
        self.values = np.asarray(values, float)
        self.grid = grid
        pos = np.clip((self.values - grid.lo) / grid.dx, 0.0, grid.n - 1)
        left = np.minimum(pos.astype(np.intp), grid.n - 2)
        frac = pos - left
        groups = np.zeros(len(self.values), np.intp) if groups is None else np.asarray(groups, np.intp)
        n_groups = int(n_groups if n_groups is not None else (groups.max() + 1 if len(groups) else 1))
        self.n_groups = n_groups
        rows = np.concatenate([left, left + 1])
        self._by_group = sparse.csr_matrix((np.concatenate([1.0 - frac, frac]), (rows, np.tile(groups, 2))),
                                           shape=(grid.n, n_groups))
        # sums of values**0, **1, **2 per group (x**0 == 1.0 and x**1 == x exactly: whole counts, the values)
        self._moments = np.stack([np.bincount(groups, None, n_groups), np.bincount(groups, self.values, n_groups),
                                  np.bincount(groups, self.values**2, n_groups)])

    def counts(self, multiplicity: np.ndarray | None = None) -> np.ndarray:
        """Grid counts ``(grid.n,)``; ``multiplicity`` per group (None = each group once)."""
        if multiplicity is None:
            return np.asarray(self._by_group.sum(axis=1)).ravel()
        return self._by_group @ np.asarray(multiplicity, float)

    def counts_of(self, multiplicities: np.ndarray) -> np.ndarray:
        """:meth:`counts` of each resample, ``(B, grid.n)`` for ``(B, n_groups)`` multiplicities: one sparse product
        for all (scipy's ``csr_matvecs``), whose sum at each grid point runs over the same terms in the same order
        as ``csr_matvec``'s (``y += a * x`` per term from 0.0), so the rows are the same bits as :meth:`counts`
        (tests/core/test_calibration_paths.py; scipy's x86-64 wheels hold no fused multiply-add). Should a
        build round the two loops differently (the first resample's counts differ), each is computed alone."""
        m = np.asarray(multiplicities, float)
        counts = np.ascontiguousarray((self._by_group @ m.T).T)
        if len(m) and not np.array_equal(counts[0], self.counts(m[0])):
            counts = np.stack([self.counts(x) for x in m])
        return counts

    def bandwidth(self, multiplicity: np.ndarray | None = None) -> float:
        """Scott's rule on the (resampled) values, floored at two grid steps."""
        s0, s1, s2 = self._moments.sum(1) if multiplicity is None else self._moments @ multiplicity
        if s0 <= 0:
            return 2.0 * self.grid.dx
        var = max(s2 / s0 - (s1 / s0) ** 2, 0.0)
        return max(float(np.sqrt(var)) * s0 ** (-0.2), 2.0 * self.grid.dx)

    def density(self, multiplicity: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """``(f on the grid, bandwidth)``; ``f`` integrates to 1 over the real line."""
        f, h, _ = self.estimate(multiplicity)
        return f, h

    def estimate(self, multiplicity: np.ndarray | None = None,
                 counts: np.ndarray | None = None) -> tuple[np.ndarray, float, Callable]:
        """``(f, bandwidth, log_f)``: the density plus the exact log-density at grid indices (``counts``: the
        multiplicity's :meth:`counts`, if already known)."""
        counts = self.counts(multiplicity) if counts is None else counts
        h = self.bandwidth(multiplicity)
        return kde_from_counts(counts, self.grid, h), h, lambda index: log_density(counts, self.grid, h, index)


def kde_from_counts(counts: np.ndarray, grid: Grid, h: float) -> np.ndarray:
    """Gaussian KDE with bandwidth ``h`` of grid counts, evaluated on the grid."""
    total = counts.sum()
    if total <= 0:
        return np.zeros(grid.n)
    half = int(min(np.ceil(5.0 * h / grid.dx), grid.n - 1))
    u = np.arange(-half, half + 1) * grid.dx / h
    kernel = np.exp(-0.5 * u * u) / (np.sqrt(2.0 * np.pi) * h)
    full = np.convolve(counts, kernel, mode="full")
    return full[half: half + grid.n] / total


@dataclass(frozen=True)
class Anchor:
    """τ* and how it was found."""

    tau: float
    method: str
    do_mode: float


def log_density(counts: np.ndarray, grid: Grid, h: float, index: np.ndarray) -> np.ndarray:
    """Exact log of the Gaussian KDE of grid ``counts`` at grid points ``index`` (no kernel cut-off,
    no underflow): used where the binned density is 0, i.e. more than 5 bandwidths from any value."""
    nz = np.flatnonzero(counts > 0)
    x = grid.x
    z = (x[index][:, None] - x[nz][None, :]) / h
    terms = np.log(counts[nz])[None, :] - 0.5 * z * z
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1)) - np.log(counts.sum() * h * np.sqrt(2 * np.pi))


def find_tau(x: np.ndarray, f_do: np.ndarray, f_de: np.ndarray,
             log_do: Callable | None = None, log_de: Callable | None = None) -> Anchor:
    """τ* from the two densities on the grid ``x`` (see the module docstring).

    ``log_do(index)`` / ``log_de(index)`` give exact log-densities; where either binned
    density is 0 (a gap between the samples wider than the kernel's reach) they decide
    which density is larger, and the crossing is interpolated on the log scale.
    """
    signal = f_do > f_de
    if not signal.any():
        return Anchor(_quantile(x, f_do, 0.95), "no_separation", float(x[np.argmax(f_do)]))
    mode = int(np.argmax(np.where(signal, f_do, -np.inf)))
    diff = f_do[mode:] - f_de[mode:]
    unknown = (f_do[mode:] <= 0) | (f_de[mode:] <= 0)
    exact = log_do is not None and log_de is not None and unknown.any()
    if exact:  # decide the sign on the log scale up to the first point where both are known to differ
        known_chance = np.flatnonzero(~unknown & (diff <= 0))
        stop = int(known_chance[0]) if len(known_chance) else len(diff)
        idx = np.flatnonzero(unknown[:stop])
        if len(idx):
            diff[idx] = np.sign(log_do(mode + idx) - log_de(mode + idx))
    after = np.flatnonzero(diff <= 0)
    if len(after):
        k = mode + int(after[0])            # first grid point where f_Do <= f_De
        if exact and (unknown[k - mode] or unknown[k - 1 - mode]):
            pair = np.array([k - 1, k])
            d0, d1 = log_do(pair) - log_de(pair)
        else:
            d0, d1 = f_do[k - 1] - f_de[k - 1], f_do[k] - f_de[k]
        t = d0 / (d0 - d1) if d0 != d1 else 1.0
        return Anchor(float(x[k - 1] + t * (x[k] - x[k - 1])), "crossing", float(x[mode]))
    de_mode = int(np.argmax(f_de))
    if de_mode > mode:
        pooled = f_do[mode: de_mode + 1] + f_de[mode: de_mode + 1]
        return Anchor(float(x[mode + int(np.argmin(pooled))]), "density_minimum", float(x[mode]))
    return Anchor(_quantile(x, f_do, 0.95), "no_separation", float(x[mode]))


def _quantile(x: np.ndarray, f: np.ndarray, q: float) -> float:
    cdf = np.cumsum(f)
    if cdf[-1] <= 0:
        return float(x[-1])
    return float(x[min(int(np.searchsorted(cdf / cdf[-1], q)), len(x) - 1)])
