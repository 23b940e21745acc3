"""Nominal α of many reliability matrices at once, from additive coincidence sums.

Nominal α (docs/method.md §4) depends on a matrix only through three sums over its
pairable units: ``n`` (pairable values), ``Σ o_cc`` (the coincidence matrix's
diagonal) and ``n_c`` per value. All three add over units, so

* the α of every image, every leave-one-rater-out matrix, every rater pair and
  every class is one pass of ``np.unique`` / ``np.bincount`` over
  ``(group, unit, value)`` cells (:func:`group_sums`), not one ``alpha`` call each;
* the α of a union of matrices (the global α, the global pairwise α, ...) is the
  α of the summed sums (:class:`AlphaSums`), so partial results of chunks of
  images merge by addition. The sums are kept exact (integers; ``Σ o_cc`` as
  integer numerators per denominator ``m_u - 1``), so the merged α does not
  depend on how the images were chunked.

:func:`kalos_core.reliability.alpha` is the one-matrix reference these agree with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable

import numpy as np


@dataclass
class AlphaSums:
    """The additive sums of one reliability matrix (or of a union of matrices)."""

    n: int = 0                                       #: pairable values
    occ: dict = field(default_factory=dict)          #: m_u - 1 -> Σ n_uc (n_uc - 1) over such units
    n_c: dict = field(default_factory=dict)          #: value -> pairable count

    def add(self, other: "AlphaSums", sign: int = 1) -> "AlphaSums":
        """In place ``self += sign * other``; returns self."""
        self.n += sign * other.n
        for mine, theirs in ((self.occ, other.occ), (self.n_c, other.n_c)):
            for k, c in theirs.items():
                left = mine.get(k, 0) + sign * c
                if left:
                    mine[k] = left
                else:
                    mine.pop(k, None)
        return self

    def copy(self) -> "AlphaSums":
        return AlphaSums(self.n, dict(self.occ), dict(self.n_c))

    def alpha(self) -> float:
        """α of the summed matrix; 1.0 when nothing is pairable or all values agree."""
        occ = math.fsum(num / den for den, num in self.occ.items())   # exactly rounded: order-free
        return float(alpha_from_sums(np.array([float(self.n)]), np.array([occ]),
                                     np.array([float(sum(c * (c - 1) for c in self.n_c.values()))]))[0])


def alpha_from_sums(n: np.ndarray, occ: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """α per group from ``n``, ``Σ o_cc`` and ``Σ_c n_c (n_c - 1)`` (arrays of one length)."""
    denominator = n * (n - 1) - expected
    ok = (n > 0) & (denominator != 0)
    out = np.ones(len(n))
    out[ok] = ((n[ok] - 1) * occ[ok] - expected[ok]) / denominator[ok]
    return out


@dataclass
class GroupSums:
    """:class:`AlphaSums` of ``G`` groups as arrays; ``value_group``/``value``/``value_count``
    list ``n_c`` sparsely (one entry per group and value present)."""

    n: np.ndarray
    occ: np.ndarray
    value_group: np.ndarray
    value: np.ndarray
    value_count: np.ndarray
    occ_group: np.ndarray      #: with occ_den / occ_num: Σ n_uc (n_uc - 1) per group and m_u - 1, exact
    occ_den: np.ndarray
    occ_num: np.ndarray

    def alpha(self) -> np.ndarray:
        """(G,) α of every group."""
        expected = np.bincount(self.value_group, weights=self.value_count * (self.value_count - 1),
                               minlength=len(self.n))
        return alpha_from_sums(self.n, self.occ, expected)

    def by_key(self, keys: list[Hashable | None]) -> dict[Hashable, AlphaSums]:
        """Sum the groups that share a key (``keys[g]``; None = leave out)."""
        index: dict[Hashable, int] = {}
        kid = [-1 if k is None else index.setdefault(k, len(index)) for k in keys]
        return self.by_key_id(np.array(kid, dtype=np.int64), list(index))

    def by_key_id(self, kid: np.ndarray, keys: list) -> dict[Hashable, AlphaSums]:
        """Sum the groups that share a key id (``kid[g]`` indexes ``keys``; -1 = leave out); keys in
        order of their first group."""
        kid = np.asarray(kid, np.int64)
        ok = kid >= 0
        present, first = np.unique(kid[ok], return_index=True)
        if not len(present):
            return {}
        present = present[np.argsort(first)]
        local = np.full(len(keys), -1, np.int64)
        local[present] = np.arange(len(present))
        kid = np.where(ok, local[np.maximum(kid, 0)], -1)
        out = [AlphaSums() for _ in present]
        n = np.bincount(kid[ok], weights=self.n[ok], minlength=len(out))   # exact: integer sums < 2**53
        for s, v in zip(out, n.astype(np.int64).tolist()):
            s.n = v
        _sparse_add(out, "n_c", kid[self.value_group], self.value, self.value_count)
        _sparse_add(out, "occ", kid[self.occ_group], self.occ_den, self.occ_num)
        return {keys[k]: s for k, s in zip(present.tolist(), out)}


def _sparse_add(out: list, name: str, key: np.ndarray, what: np.ndarray, count: np.ndarray) -> None:
    """``getattr(out[key[j]], name)[what[j]] += count[j]`` for every entry with ``key[j] >= 0``."""
    ok = key >= 0
    key, what, count = key[ok], np.asarray(what, np.int64)[ok], np.asarray(count).astype(np.int64)[ok]
    if not len(key):
        return
    order = np.lexsort((what, key))
    key, what, count = key[order], what[order], count[order]
    new = np.ones(len(key), bool)
    new[1:] = (key[1:] != key[:-1]) | (what[1:] != what[:-1])
    first = np.flatnonzero(new)
    total = np.add.reduceat(count, first)
    key, what = key[first], what[first]
    bounds = np.searchsorted(key, np.arange(len(out) + 1)).tolist()
    what_l, total_l = what.tolist(), total.tolist()
    for k, s in enumerate(out):
        if bounds[k] < bounds[k + 1]:
            getattr(s, name).update(zip(what_l[bounds[k]:bounds[k + 1]], total_l[bounds[k]:bounds[k + 1]]))


def group_sums(unit: np.ndarray, value: np.ndarray, unit_group: np.ndarray, n_groups: int) -> GroupSums:
    """The α sums of many reliability matrices given as cells.

    Parameters
    ----------
    unit : (m,) unit of each cell, numbered ``0..U-1`` across all groups (a unit belongs to one group).
    value : (m,) integer value of each cell (``NO_OBJECT`` included; missing cells are absent).
    unit_group : (U,) group ``0..n_groups-1`` of each unit.
    n_groups : number of groups; a group without cells has α 1.0.
    """
    unit = np.asarray(unit, dtype=np.int64)
    codes, code = value_codes(np.asarray(value, dtype=np.int64))
    k = max(len(codes), 1)
    key, count = np.unique(unit * k + code, return_counts=True)
    key_unit, key_code = key // k, key % k
    m_u = np.bincount(key_unit, weights=count)
    m_key = m_u[key_unit]
    pairable = m_key >= 2
    cnt = count[pairable].astype(float)
    grp = np.asarray(unit_group, dtype=np.int64)[key_unit[pairable]]
    occ = np.bincount(grp, weights=cnt * (cnt - 1) / (m_key[pairable] - 1), minlength=n_groups)
    n = np.bincount(grp, weights=cnt, minlength=n_groups)
    gkey, n_c = _sum_by_key(grp * k + key_code[pairable], cnt, n_groups * k)
    den = m_key[pairable].astype(np.int64) - 1
    width = int(den.max()) + 1 if len(den) else 1
    okey, num = _sum_by_key(grp * width + den, cnt * (cnt - 1), n_groups * width)
    return GroupSums(n, occ, gkey // k, codes[gkey % k] if len(codes) else gkey, n_c, okey // width, okey % width,
                     num.astype(np.int64))


def value_codes(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(value, return_inverse=True)`` of integers; by counting when they span a short range."""
    if len(value) and int(value.max()) - int(value.min()) < 4 * len(value) + 1024:
        lo = int(value.min())
        present = np.bincount(value - lo) > 0
        return np.flatnonzero(present) + lo, (np.cumsum(present) - 1)[value - lo]
    codes, code = np.unique(value, return_inverse=True)
    return codes, code.reshape(-1)


def _sum_by_key(key: np.ndarray, weight: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys (sorted; every key that occurs, whatever its weight) and the sum of
    ``weight`` over each; by counting when the keys span a short range (``0 <= key < n_keys``)."""
    if n_keys < 8 * len(key) + 1024:
        total = np.bincount(key, weights=weight, minlength=n_keys)
        present = np.flatnonzero(np.bincount(key, minlength=n_keys))
        return present, total[present]
    distinct, inverse = np.unique(key, return_inverse=True)
    return distinct, np.bincount(inverse.reshape(-1), weights=weight, minlength=len(distinct))
