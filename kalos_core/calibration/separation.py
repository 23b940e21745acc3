"""How far apart Do and De are: KS statistic, Braylan's σ, summaries, histograms.

* ``KS = max_x (F_Do(x) - F_De(x))`` on the empirical CDFs (one-sided, docs/method.md
  §5: Do is expected to be stochastically smaller), never below 0. It is exact,
  also for weighted (bootstrap) samples: the CDFs are evaluated at every
  distinct value of the pooled sample where the difference can peak (the last of a
  run of Do-only values, see ``_runs``).
* Braylan's σ: the share of Do values ``d`` for which a De value drawn at
  random is smaller than ``d`` with probability below ``p`` (default 0.05),
  with the empirical De distribution, ``P(De < d)``.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .density import Grid
from .types import SampleSummary


class KSData:
    """Do and De on a common sorted support, for fast resampled KS statistics.

    ``groups`` (the image of each observation, shared by ``do[k]`` and ``de[k]``) lets a
    resample be given as a multiplicity per group, as in :class:`~.density.LinearBins`.
    """

    def __init__(self, do: np.ndarray, de: np.ndarray, groups: np.ndarray | None = None,
                 n_groups: int | None = None) -> None:
        support, inverse = np.unique(np.concatenate([do, de]), return_inverse=True)
        inverse = inverse.ravel()
        step = _runs(inverse[: len(do)], inverse[len(do):], len(support))
        g_do = np.zeros(len(do), np.intp) if groups is None else np.asarray(groups, np.intp)
        g_de = np.zeros(len(de), np.intp) if groups is None else np.asarray(groups, np.intp)
        n = int(n_groups if n_groups is not None else max(g_do.max(initial=0), g_de.max(initial=0)) + 1)
        size = int(step[-1]) + 1 if len(step) else 0
        self._do = _counts(step[inverse[: len(do)]], g_do, (size, n))
        self._de = _counts(step[inverse[len(do):]], g_de, (size, n))

    def statistic(self, multiplicity: np.ndarray | None = None) -> float:
        f_do, f_de = _cdf(self._do, multiplicity), _cdf(self._de, multiplicity)
        if f_do is None or f_de is None:
            return float("nan")
        return float(max(0.0, np.max(f_do - f_de)))


def _cdf(by_group, multiplicity) -> np.ndarray | None:
    mass = (np.asarray(by_group.sum(axis=1)).ravel() if multiplicity is None
            else by_group @ np.asarray(multiplicity, float))
    total = mass.sum()
    return np.cumsum(mass) / total if total > 0 else None


def _counts(step: np.ndarray, group: np.ndarray, shape: tuple[int, int]) -> sparse.csr_matrix:
    """How many values of each group fall in each step; whole numbers, so summing the duplicates
    first changes no sum (and a resample's product reads each (step, group) once)."""
    counts = sparse.csr_matrix((np.ones(len(step)), (step, group)), shape=shape)
    counts.sum_duplicates()
    return counts


def _runs(do_at: np.ndarray, de_at: np.ndarray, size: int) -> np.ndarray:
    """The CDF step each support point is counted in: a run of consecutive points holding only Do
    values (``F_Do - F_De`` rises along it: its maximum is at the run's end) or only De values (it
    falls) is one step; a point holding both is a step of its own. The masses are whole numbers
    (counts times image multiplicities), so the cumulative sums at the steps are exact and the
    statistic is the same as on every point, on far fewer of them."""
    kind = np.zeros(size, np.int8)
    kind[do_at] = 1
    kind[de_at] |= 2
    new = np.ones(size, bool)
    new[1:] = (kind[1:] != kind[:-1]) | (kind[1:] == 3)
    return np.cumsum(new) - 1


def ks_statistic(do: np.ndarray, de: np.ndarray) -> float:
    """One-sided KS statistic ``max(F_Do - F_De)`` of two samples."""
    return KSData(np.asarray(do, float), np.asarray(de, float)).statistic()


def braylan_sigma(do: np.ndarray, de: np.ndarray, p: float = 0.05) -> float:
    """Fraction of Do values whose De-CDF (``P(De < d)``) is below ``p``."""
    de_sorted = np.sort(np.asarray(de, float))
    if len(do) == 0 or len(de_sorted) == 0:
        return float("nan")
    below = np.searchsorted(de_sorted, np.asarray(do, float), side="left") / len(de_sorted)
    return float(np.mean(below < p))


def summarise(values: np.ndarray, mode: float) -> SampleSummary:
    v = np.asarray(values, float)
    if len(v) == 0:
        nan = float("nan")
        return SampleSummary(0, nan, nan, nan, nan)
    return SampleSummary(len(v), float(v.mean()), float(np.median(v)), float(v.std()), float(mode))


def histogram(do: np.ndarray, de: np.ndarray, grid: Grid, bins: int) -> dict:
    """Counts of Do and De on ``bins`` equal bins over the grid's range (the last bin is closed)."""
    edges = np.linspace(grid.lo, grid.hi, bins + 1)
    return {"edges": edges.tolist(),
            "do": np.histogram(do, edges)[0].tolist(),
            "de": np.histogram(de, edges)[0].tolist()}
