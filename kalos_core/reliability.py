"""Reliability data and nominal Krippendorff's α (docs/method.md §4).

A reliability matrix has one row per rater (or rater-session) and one column
per unit. A cell holds the category the rater gave the unit, ``NO_OBJECT`` if
the rater takes part but drew nothing there, and NaN (missing) if the rater
was not assigned. Internally the matrix travels in *cell* form - three equal
length arrays ``(row, unit, value)`` listing only the non-missing cells - so
that a data set's global matrix (hundreds of thousands of units, a thousand
classes) costs memory in proportion to its labels, not to units x classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: value of a cell where an assigned rater has no annotation in the unit
NO_OBJECT = -1


@dataclass
class Cells:
    """Non-missing cells of a reliability matrix."""

    row: np.ndarray
    unit: np.ndarray
    value: np.ndarray
    n_units: int

    def select_rows(self, keep_rows: np.ndarray) -> "Cells":
        """Cells of the rows where boolean ``keep_rows[row]`` holds (unit count unchanged)."""
        k = keep_rows[self.row]
        return Cells(self.row[k], self.unit[k], self.value[k], self.n_units)

    def select_units(self, keep_units: np.ndarray) -> "Cells":
        """Cells of the units where boolean ``keep_units[unit]`` holds, renumbered."""
        new_index = np.cumsum(keep_units) - 1
        k = keep_units[self.unit]
        return Cells(self.row[k], new_index[self.unit[k]], self.value[k], int(keep_units.sum()))

    def to_matrix(self, n_rows: int) -> np.ndarray:
        """Dense ``(n_rows, n_units)`` float matrix with NaN for missing cells."""
        m = np.full((n_rows, self.n_units), np.nan)
        m[self.row, self.unit] = self.value
        return m

    @staticmethod
    def from_matrix(matrix: np.ndarray) -> "Cells":
        m = np.asarray(matrix, dtype=float)
        if m.ndim != 2:
            raise ValueError(f"a reliability matrix is 2-D (raters x units), got shape {m.shape}")
        r, u = np.nonzero(~np.isnan(m))
        return Cells(r, u, integer_codes(m[r, u]), m.shape[1])

    @staticmethod
    def concat(parts: Sequence["Cells"], row_maps: Sequence[np.ndarray] | None = None) -> "Cells":
        """Stack units side by side; ``row_maps[k]`` maps part k's rows to global rows."""
        rows, units, values, offset = [], [], [], 0
        for k, p in enumerate(parts):
            rows.append(p.row if row_maps is None else np.asarray(row_maps[k])[p.row])
            units.append(p.unit + offset)
            values.append(p.value)
            offset += p.n_units
        if not parts:
            e = np.empty(0, np.int64)
            return Cells(e, e, e, 0)
        return Cells(np.concatenate(rows), np.concatenate(units), np.concatenate(values), offset)


def build_cells(
    units: np.ndarray,
    rater: np.ndarray,
    category: np.ndarray,
    n_rows: int,
    row_classes: Sequence[frozenset | None] | None = None,
) -> Cells:
    """Reliability cells of one image.

    Parameters
    ----------
    units : (n,) unit label of each annotation (``0..U-1``).
    rater : (n,) row of each annotation.
    category : (n,) category id of each annotation.
    n_rows : number of rows (assigned raters or rater-sessions of the image).
    row_classes : optional, per row, the class ids that row was assigned
        (``None`` = all). A row with no annotation in a unit gets NO_OBJECT if
        it was assigned at least one class present in the unit, else missing.
    """
    n_units = int(units.max()) + 1 if len(units) else 0
    value = np.full((n_rows, n_units), NO_OBJECT, dtype=np.int64)
    value[rater, units] = category
    if row_classes is None or all(c is None for c in row_classes):   # every cell kept, row-major
        r, u = np.divmod(np.arange(n_rows * n_units), max(n_units, 1))
        return Cells(r, u, value.ravel(), n_units)
    present = np.zeros((n_rows, n_units), bool)
    present[rater, units] = True
    keep = np.ones((n_rows, n_units), bool)
    unit_classes: list[set] = [set() for _ in range(n_units)]
    for u, c in zip(units.tolist(), category.tolist()):
        unit_classes[u].add(c)
    for r, allowed in enumerate(row_classes):
        if allowed is None:
            continue
        for u in range(n_units):
            if not present[r, u] and not (unit_classes[u] & allowed):
                keep[r, u] = False
    r, u = np.nonzero(keep)
    return Cells(r, u, value[r, u], n_units)


def empty_image_cells(n_rows: int) -> Cells:
    """The virtual unit of an image without units: every assigned row says NO_OBJECT."""
    r = np.arange(n_rows)
    return Cells(r, np.zeros(n_rows, np.int64), np.full(n_rows, -1, np.int64), 1 if n_rows else 0)


def integer_codes(values: np.ndarray) -> np.ndarray:
    """Category codes as int64; a non-integer or infinite code is an error, not truncated."""
    v = np.asarray(values)
    if v.dtype.kind in "iu":
        return v.astype(np.int64)
    if v.dtype.kind == "b" or v.dtype.kind not in "f":
        raise ValueError(f"category codes must be integers, got values of type {v.dtype}")
    bad = ~np.isfinite(v) | (v != np.round(v))
    if bad.any():
        raise ValueError(f"category codes must be integers (NaN = missing); got {v[bad][:5].tolist()}")
    return v.astype(np.int64)


def alpha(cells: Cells | np.ndarray) -> float:
    """Nominal Krippendorff's α through the coincidence matrix.

    Accepts :class:`Cells` or a dense matrix (rows x units, NaN = missing).
    Units with fewer than two values are not pairable. When every present
    value is identical, or nothing is pairable, the data show no disagreement
    and α = 1.0 (docs/method.md §4).
    """
    if not isinstance(cells, Cells):
        cells = Cells.from_matrix(cells)
    values = cells.value
    if values.dtype.kind != "i":
        values = integer_codes(values)
    if len(values) == 0 or (values == values[0]).all():
        return 1.0
    codes, code = np.unique(values, return_inverse=True)
    n_codes = len(codes)
    key, count = np.unique(cells.unit.astype(np.int64) * n_codes + code, return_counts=True)
    unit_of_key = key // n_codes
    code_of_key = key % n_codes
    m_u = np.bincount(unit_of_key, weights=count)
    m_key = m_u[unit_of_key]
    pairable = m_key >= 2
    if not pairable.any():
        return 1.0
    cnt = count[pairable].astype(float)
    n = m_u[m_u >= 2].sum()
    sum_occ = (cnt * (cnt - 1) / (m_key[pairable] - 1)).sum()
    n_c = np.bincount(code_of_key[pairable], weights=cnt, minlength=n_codes)
    expected = (n_c * (n_c - 1)).sum()
    denominator = n * (n - 1) - expected
    if denominator == 0:
        return 1.0
    return float(((n - 1) * sum_occ - expected) / denominator)


#: a label's status in its unit, by code (:func:`status_codes`); the order is the codes' order
STATUS = ("unmatched", "class_disagreement", "agreed")


def status_codes(units: np.ndarray, category: np.ndarray) -> np.ndarray:
    """Per annotation, the code (index into :data:`STATUS`) of: ``unmatched``
    (alone in its unit), ``class_disagreement`` (its unit holds more than one class) or ``agreed``.
    Units may be numbered across many images (labels need not start at 0)."""
    units = np.asarray(units, np.int64)
    if len(units) == 0:
        return np.zeros(0, np.int64)
    size = np.bincount(units)
    n_classes = np.bincount(unique_pairs(units, category)[0], minlength=len(size))
    return np.where(size[units] == 1, 0, np.where(n_classes[units] > 1, 1, 2))


def unit_status(units: np.ndarray, category: np.ndarray) -> np.ndarray:
    """Per annotation its status name (:func:`status_codes`), as an object array."""
    return np.array(STATUS, dtype=object)[status_codes(units, category)]


def unique_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct ``(a, b)`` pairs as a ``(2, k)`` array, sorted by ``a`` then ``b``
    (what ``np.unique(np.stack([a, b]), axis=1)`` gives, without its structured-array cost)."""
    a, b = np.asarray(a), np.asarray(b)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.ones(len(a), bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return np.stack([a[new], b[new]])


#: the interpretation bands of α (Sec. 3.3), low to high: ``(lo, hi, name)``, α in a band when lo <= α < hi
ALPHA_BANDS = (
    (-math.inf, 0.0, "systematic disagreement"),
    (0.0, 0.4, "weak"),
    (0.4, 0.6, "moderate"),
    (0.6, 0.8, "substantial"),
    (0.8, math.inf, "near-perfect"),
)


def interpret(a: float | None) -> str:
    """The :data:`ALPHA_BANDS` band of an α value ("undefined" for None or NaN). α is read to 12
    decimals first, so summation noise (−8e-17 where the exact value is 0) does not cross a band's edge."""
    if a is None or np.isnan(a):
        return "undefined"
    a = round(float(a), 12)
    return [name for lo, _, name in ALPHA_BANDS if a >= lo][-1]
