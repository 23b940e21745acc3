"""Nominal α of many reliability matrices at once, from additive coincidence sums.

Nominal α (METHOD.md §4) depends on a matrix only through three sums over its
pairable units: ``n`` (pairable values), ``Σ o_cc`` (the coincidence matrix's
diagonal) and ``n_c`` per value. All three add over units, so

* the α of every image, every leave-one-rater-out matrix, every rater pair and
  every class is one pass of ``np.unique`` / ``np.bincount`` over
  ``(group, unit, value)`` cells (:func:`group_sums`), not one ``alpha`` call each;
* the α of a union of matrices (the global α, the global pairwise α, ...) is the
  α of the summed sums (:class:`AlphaSums`), so partial results of chunks of
  images merge by addition.

:func:`kalos_core.reliability.alpha` is the one-matrix reference these agree with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable

import numpy as np


@dataclass
class AlphaSums:
    """The additive sums of one reliability matrix (or of a union of matrices)."""

    n: float = 0.0                                   #: pairable values
    occ: float = 0.0                                 #: Σ_c o_cc
    n_c: dict = field(default_factory=dict)          #: value -> pairable count

    def add(self, other: "AlphaSums", sign: float = 1.0) -> "AlphaSums":
        """In place ``self += sign * other``; returns self."""
        self.n += sign * other.n
        self.occ += sign * other.occ
        for v, c in other.n_c.items():
            left = self.n_c.get(v, 0.0) + sign * c
            if left:
                self.n_c[v] = left
            else:
                self.n_c.pop(v, None)
        return self

    def copy(self) -> "AlphaSums":
        return AlphaSums(self.n, self.occ, dict(self.n_c))

    def alpha(self) -> float:
        """α of the summed matrix; 1.0 when nothing is pairable or all values agree."""
        return float(alpha_from_sums(np.array([self.n]), np.array([self.occ]),
                                     np.array([sum(c * (c - 1) for c in self.n_c.values())]))[0])


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

    def alpha(self) -> np.ndarray:
        """(G,) α of every group."""
        expected = np.bincount(self.value_group, weights=self.value_count * (self.value_count - 1),
                               minlength=len(self.n))
        return alpha_from_sums(self.n, self.occ, expected)

    def by_key(self, keys: list[Hashable | None]) -> dict[Hashable, AlphaSums]:
        """Sum the groups that share a key (``keys[g]``; None = leave out)."""
        out: dict[Hashable, AlphaSums] = {}
        for g, k in enumerate(keys):
            if k is not None and k not in out:
                out[k] = AlphaSums()
        if not out:
            return out
        for g, k in enumerate(keys):
            if k is not None:
                s = out[k]
                s.n += float(self.n[g])
                s.occ += float(self.occ[g])
        starts = np.searchsorted(self.value_group, np.arange(len(keys) + 1))
        values, counts = self.value.tolist(), self.value_count.tolist()
        for g, k in enumerate(keys):
            if k is None:
                continue
            n_c = out[k].n_c
            for j in range(starts[g], starts[g + 1]):
                n_c[values[j]] = n_c.get(values[j], 0.0) + counts[j]
        return out


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
    codes, code = np.unique(np.asarray(value, dtype=np.int64), return_inverse=True)
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
    gkey, inverse = np.unique(grp * k + key_code[pairable], return_inverse=True)
    n_c = np.bincount(inverse, weights=cnt, minlength=len(gkey))
    return GroupSums(n, occ, gkey // k, codes[gkey % k] if len(codes) else gkey, n_c)
