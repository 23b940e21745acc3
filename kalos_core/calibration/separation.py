"""How far apart Do and De are: KS statistic, Braylan's σ, summaries, histograms.

* ``KS = max_x (F_Do(x) - F_De(x))`` on the empirical CDFs (one-sided, docs/method.md
  §5: Do is expected to be stochastically smaller), never below 0. It is exact,
  also for weighted (bootstrap) samples: the CDFs are evaluated at every
  distinct value of the pooled sample where the difference can peak (the last of a
  run of Do-only values, see ``_steps``).
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
    The masses are whole numbers (counts times multiplicities), so they are summed as
    integers, in any order, all resamples of a block at once: the cumulative sums, and the
    statistic, are exactly those of floating sums at every support point.
    """

    def __init__(self, do: np.ndarray, de: np.ndarray, groups: np.ndarray | None = None,
                 n_groups: int | None = None) -> None:
        do, de = np.asarray(do, float), np.asarray(de, float)
        point, self.n_points = _support(np.concatenate([do, de]))
        self._point_do, self._point_de = point[: len(do)], point[len(do):]
        step, size = _steps(self._point_do, self._point_de, self.n_points)
        g_do = np.zeros(len(do), np.intp) if groups is None else np.asarray(groups, np.intp)
        g_de = np.zeros(len(de), np.intp) if groups is None else np.asarray(groups, np.intp)
        n = int(n_groups if n_groups is not None else max(g_do.max(initial=0), g_de.max(initial=0)) + 1)
        self._do = _counts(step[self._point_do], g_do, (size, n))
        self._de = _counts(step[self._point_de], g_de, (size, n))

    def statistic(self, multiplicity: np.ndarray | None = None) -> float:
        m = np.ones(self._do.shape[1], np.int64) if multiplicity is None else np.asarray(multiplicity)
        return float(self.statistics(m[None])[0])

    def statistics(self, multiplicities: np.ndarray) -> np.ndarray:
        """The statistic of each resample, ``multiplicities`` ``(B, n_groups)`` whole numbers (NaN where
        a sample has no mass)."""
        m = np.asarray(multiplicities, np.int64)
        out = np.full(len(m), np.nan)
        if self._do.shape[0] == 0:
            return out
        most = max(int((m @ c.sum(axis=0).A1).max(initial=0)) for c in (self._do, self._de))
        kind = np.int32 if most < 2**31 else np.int64   # every partial sum is at most a total
        c_do, c_de = self._do.astype(kind), self._de.astype(kind)
        block = max(1, min(len(m), (1 << 20) // self._do.shape[0]))
        for b in range(0, len(m), block):
            x = np.ascontiguousarray(m[b: b + block].T, kind)
            out[b: b + block] = np.maximum(0.0, _max_difference(c_do @ x, c_de @ x))
        return out

    def sigma(self, p: float = 0.05) -> float:
        """:func:`braylan_sigma` from the support: the De values below each Do value are counted, not searched."""
        if len(self._point_do) == 0 or len(self._point_de) == 0:
            return float("nan")
        at = np.bincount(self._point_de, minlength=self.n_points)
        below = (np.cumsum(at) - at)[self._point_do] / len(self._point_de)
        return float(np.mean(below < p))


def _support(values: np.ndarray) -> tuple[np.ndarray, int]:
    """The index of each value among the distinct values in increasing order (NaNs all one, last), and
    their number: ``np.unique``'s inverse."""
    order = np.argsort(values)
    ordered = values[order]
    new = np.empty(len(values), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    if len(values) and np.isnan(ordered[-1]):
        new[1:] &= ~(np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    point = np.empty(len(values), np.intp)
    point[order] = np.cumsum(new) - 1
    return point, int(new.sum())


#: CDF steps per coarse span of :func:`_max_difference`
SPAN = 32


def _max_difference(mass_do: np.ndarray, mass_de: np.ndarray) -> np.ndarray:
    """``max`` over the steps of ``F_Do - F_De`` for each resample (a column of the ``(steps, B)`` whole-number
    masses; NaN where a sample has no mass): the CDF ``cum / total`` of every step, exactly as
    ``np.cumsum(mass, 0) / total``, but evaluated step by step only in the spans of ``SPAN`` steps that can
    hold the maximum. Over a span the CDFs are monotone and rounding is monotone, so
    ``F_Do(span end) - F_De(end of the previous span)`` bounds every step's difference in it from above;
    the differences at the span ends bound the maximum from below; a span whose upper bound does not exceed
    that is skipped. The maximum is one of the values, so it is the same float as over every step."""
    starts = np.arange(0, len(mass_do), SPAN)
    end_do, end_de = (np.cumsum(np.add.reduceat(m, starts, axis=0), axis=0, dtype=np.int64) for m in (mass_do, mass_de))
    before_de = np.concatenate([np.zeros_like(end_de[:1]), end_de[:-1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        f_do, f_de = end_do / end_do[-1], end_de / end_de[-1]
        best = np.max(f_do - f_de, axis=0)
        open_ = np.flatnonzero(np.any(f_do - before_de / end_de[-1] > best, axis=1))
        if len(open_):
            size = np.minimum(starts[open_] + SPAN, len(mass_do)) - starts[open_]
            owner = np.repeat(np.arange(len(open_)), size)
            rows = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size - starts[open_], size)
            seg = np.cumsum(size) - size                     # first row of each span among ``rows``
            cum = []
            for mass, end in ((mass_do, end_do), (mass_de, end_de)):
                within = np.cumsum(mass[rows], axis=0, dtype=np.int64)
                within -= np.concatenate([np.zeros_like(within[:1]), within[seg[1:] - 1]])[owner]
                prev = np.concatenate([np.zeros_like(end[:1]), end[:-1]])[open_]
                cum.append(within + prev[owner])
            best = np.maximum(best, np.max(cum[0] / end_do[-1] - cum[1] / end_de[-1], axis=0))
    return best


def _counts(step: np.ndarray, group: np.ndarray, shape: tuple[int, int]) -> sparse.csr_matrix:
    """How many values of each group fall in each step (whole numbers: each (step, group) once)."""
    key, count = np.unique(step.astype(np.int64) * shape[1] + group, return_counts=True)
    row, col = np.divmod(key, shape[1])
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum(np.bincount(row, minlength=shape[0]), out=indptr[1:])
    return sparse.csr_matrix((count, col, indptr), shape=shape)


def _steps(do_at: np.ndarray, de_at: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """The CDF step each support point is counted in, and their number. ``F_Do - F_De`` rises along
    points holding only Do values and falls along points holding only De values, so its maximum is
    at a point holding Do values that ends a run of them: the ends of such runs and the points holding
    both end a step, the points in between are counted in the next step (the De values before a
    Do run). The statistic on the steps equals that on every point (tests/core/test_calibration_paths.py)."""
    kind = np.zeros(size, np.int8)
    kind[do_at] = 1
    kind[de_at] |= 2
    end = kind == 3
    end[:-1] |= (kind[:-1] == 1) & (kind[1:] != 1)
    end[-1:] = True
    return np.cumsum(end) - end, int(end.sum())


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
