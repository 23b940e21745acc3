"""Krippendorff's α of one variable under a metric, for many groups of units at once.

The cells are ``(unit, value)`` pairs: a rater's value in a unit (a missing value is no cell).
Units with fewer than two values are not pairable. With ``n`` pairable values, ``o_ck`` the
coincidence matrix and ``δ²`` the metric's difference (Krippendorff 2011)::

    α = 1 - (n - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck

Metrics: ``nominal`` (δ² 0 or 1: :func:`kalos_core.coincidence.group_sums`, the agreement's own
sums), ``interval`` (``(c - k)²``), ``ordinal`` (interval on the values' midranks, ``Σ_{g<c} n_g +
n_c / 2``, which gives Krippendorff's ``(Σ_{g=c..k} n_g - (n_c + n_k) / 2)²``), ``ratio``
(``((c - k) / (c + k))²``) and ``levenshtein`` (text: edit distance / length of the longer text, in
[0, 1]; 1 for two texts with no character in common, as nominal's δ²).

Interval and ordinal need no coincidence matrix: ``Σ o δ²`` is a sum of squared deviations from
each unit's mean and ``Σ n_c n_k δ²`` one from the group's mean (``2 m Σ (v - mean)²``), both
bincounts over the cells. Ratio and levenshtein sum δ² over the pairs of distinct values in each
unit and over all pairs of distinct values (in blocks). A group with no pairable value has no α
(NaN); one whose pairable values are all equal has α 1.0 (docs/method.md §4).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from ..coincidence import group_sums

METRICS = ("nominal", "ordinal", "interval", "ratio", "levenshtein")
#: metrics that read the values as numbers
NUMERIC = ("ordinal", "interval", "ratio")
#: the most distinct texts a levenshtein α compares (all their pairs: 2,000 texts, 2 million pairs)
MAX_TEXTS = 2000
_BLOCK = 1 << 21   # pairs of distinct values per block of the expected disagreement


def group_alpha(unit: np.ndarray, value: np.ndarray, unit_group: np.ndarray, n_groups: int, metric: str,
                domain=None) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, n)`` per group: α (NaN where nothing is pairable) and the pairable values.

    Parameters
    ----------
    unit : (m,) unit code of each cell, ``0..U-1``.
    value : (m,) integer code of each cell's value.
    unit_group : (U,) group ``0..n_groups-1`` of each unit.
    metric : one of :data:`METRICS`.
    domain : the values the codes index: numbers (array) for the numeric metrics, texts (list)
        for levenshtein; unused by nominal.
    """
    unit, value = np.asarray(unit, np.int64), np.asarray(value, np.int64)
    unit_group = np.asarray(unit_group, np.int64)
    m_u = np.bincount(unit, minlength=len(unit_group))
    keep = m_u[unit] >= 2
    unit, value = unit[keep], value[keep]
    if metric == "nominal":
        sums = group_sums(unit, value, unit_group, n_groups)
        alpha, n = sums.alpha(), sums.n
    elif metric in ("interval", "ordinal"):
        alpha, n = _interval(unit, value, m_u, unit_group, n_groups, np.asarray(domain, float), metric == "ordinal")
    else:
        delta = _ratio(np.asarray(domain, float)) if metric == "ratio" else _levenshtein(tuple(domain))
        group = unit_group[unit]
        alpha, n = np.full(n_groups, np.nan), np.bincount(group, minlength=n_groups).astype(float)
        order = np.argsort(group, kind="stable")
        bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
        for g in np.flatnonzero(n).tolist():
            at = order[bounds[g]:bounds[g + 1]]
            alpha[g] = _pairwise(unit[at], value[at], m_u, delta)
    alpha = np.where(n > 0, alpha, np.nan)
    return alpha, n.astype(np.int64)


def _interval(unit, value, m_u, unit_group, n_groups, domain, ordinal):
    """α per group with δ² = (c - k)² (on midranks when ``ordinal``), from squared deviations."""
    group = unit_group[unit]
    if ordinal:
        value = _midranks(group, value)
    else:
        value = domain[value]
    n = np.bincount(group, minlength=n_groups).astype(float)
    m = m_u.astype(float)
    deviation = value - (np.bincount(unit, weights=value, minlength=len(m)) / np.maximum(m, 1))[unit]
    within = np.bincount(unit, weights=deviation ** 2, minlength=len(m))
    pairable = m >= 2
    observed = np.bincount(unit_group[pairable], weights=(2 * m / np.maximum(m - 1, 1) * within)[pairable],
                           minlength=n_groups)
    mean = np.bincount(group, weights=value, minlength=n_groups) / np.maximum(n, 1)
    expected = 2 * n * np.bincount(group, weights=(value - mean[group]) ** 2, minlength=n_groups)
    return _alpha(n, observed, expected), n


def _midranks(group: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Each cell's value as its midrank among its group's pairable values (``Σ_{g<c} n_g + n_c / 2``)."""
    width = int(code.max()) + 1 if len(code) else 1
    key, inverse, count = np.unique(group * width + code, return_inverse=True, return_counts=True)
    before = np.cumsum(count) - count
    first = np.flatnonzero(np.r_[True, key[1:] // width != key[:-1] // width])
    start = np.repeat(before[first], np.diff(np.r_[first, len(key)]))
    return (before - start + count / 2)[inverse.reshape(-1)]


def _alpha(n, observed, expected):
    """``1 - (n - 1) observed / expected``; 1.0 where the values do not vary (expected 0)."""
    ok = expected > 0
    out = np.ones(len(n))
    out[ok] = 1 - (n[ok] - 1) * observed[ok] / expected[ok]
    return out


def _pairwise(unit: np.ndarray, value: np.ndarray, m_u: np.ndarray,
              delta: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
    """α of one group's pairable cells from δ² over the pairs of distinct values (within units; all)."""
    codes, code = np.unique(value, return_inverse=True)
    width = len(codes)
    key, count = np.unique(unit * width + code.reshape(-1), return_counts=True)
    key_unit, key_code = key // width, key % width
    a, b = _pairs_within(key_unit)
    observed = (count[a] * count[b] * delta(codes[key_code[a]], codes[key_code[b]]) / (m_u[key_unit[a]] - 1)).sum()
    n_c = np.bincount(key_code, weights=count, minlength=width)
    expected = 0.0
    rows = max(1, _BLOCK // width)
    for start in range(0, width, rows):
        i = np.repeat(np.arange(start, min(start + rows, width)), width)
        j = np.tile(np.arange(width), len(i) // width)
        expected += (n_c[i] * n_c[j] * delta(codes[i], codes[j])).sum()
    return float(_alpha(np.array([n_c.sum()]), np.array([observed]), np.array([expected]))[0])


def _pairs_within(sorted_groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(i, j)``, ``i != j``, of positions with equal ``sorted_groups`` (sorted)."""
    n = len(sorted_groups)
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]) if n else np.empty(0, np.int64)
    size = np.diff(np.r_[starts, n])
    run = np.repeat(np.arange(len(starts)), size)
    rep = size[run]
    a = np.repeat(np.arange(n), rep)
    b = np.arange(rep.sum()) - np.repeat(np.cumsum(rep) - rep, rep) + np.repeat(starts[run], rep)
    keep = a != b
    return a[keep], b[keep]


def _ratio(domain: np.ndarray):
    def delta(a, b):
        x, y = domain[a], domain[b]
        total = x + y
        return np.where(total != 0, ((x - y) / np.where(total != 0, total, 1)) ** 2, 0.0)
    return delta


@lru_cache(maxsize=1)
def _levenshtein(texts: tuple[str, ...]):
    """δ²(a, b): edit distance of texts ``a`` and ``b`` / the longer one's length, every pair of
    ``texts`` computed once (vectorised over pairs, in blocks) and looked up by every group (and by
    the per-class α that follows the overall one; :func:`forget_texts` drops it)."""
    length = np.array([len(t) for t in texts], np.int64)
    chars = np.zeros((len(texts), max(int(length.max(initial=0)), 1)), np.int64)
    for k, t in enumerate(texts):
        chars[k, :len(t)] = [ord(c) for c in t]
    table = np.zeros((len(texts), len(texts)))
    first, second = np.triu_indices(len(texts), 1)
    for start in range(0, len(first), _BLOCK // 8):
        i, j = first[start:start + _BLOCK // 8], second[start:start + _BLOCK // 8]
        table[i, j] = table[j, i] = edit_distance(chars[i], length[i], chars[j], length[j]) / np.maximum(
            np.maximum(length[i], length[j]), 1)
    return lambda a, b: table[a, b]


def forget_texts() -> None:
    """Drop the cached table of edit distances (up to 32 MB at :data:`MAX_TEXTS` texts)."""
    _levenshtein.cache_clear()


def edit_distance(a: np.ndarray, len_a: np.ndarray, b: np.ndarray, len_b: np.ndarray) -> np.ndarray:
    """Levenshtein distance of each pair of rows of ``a`` and ``b`` (character codes, padded), of
    lengths ``len_a`` and ``len_b``: Wagner-Fischer one row at a time over all pairs, the insertions
    of a row as a running minimum."""
    wide = int(len_b.max(initial=0))
    steps = np.arange(wide + 1)
    prev = np.broadcast_to(steps, (len(a), wide + 1)).copy()
    out = len_b.astype(np.int64).copy()              # pairs whose first text is empty
    for i in range(1, int(len_a.max(initial=0)) + 1):
        best = np.minimum(prev[:, :-1] + (a[:, i - 1:i] != b[:, :wide]), prev[:, 1:] + 1)
        base = np.concatenate([np.full((len(a), 1), i), best], axis=1)
        prev = np.minimum.accumulate(base - steps, axis=1) + steps
        done = np.flatnonzero(len_a == i)
        out[done] = prev[done, len_b[done]]
    return out
