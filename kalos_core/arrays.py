"""Whole-array index helpers shared across measures (no KaLOS imports: a leaf of the import graph)."""

from __future__ import annotations

import numpy as np


def ranges(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, value)``: for each k, the values ``first[k] .. first[k] + count[k] - 1``, owned by k."""
    owner = np.repeat(np.arange(len(count)), count)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(count) - count - first, count)


def take_rows(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` (``np.take`` along the first axis: the same rows, several times faster on 2D arrays);
    a column-major 2D array (:func:`columnar`) gives column-major rows."""
    if values.ndim == 2 and values.flags.f_contiguous and not values.flags.c_contiguous:
        return np.take(values.T, index, axis=1).T
    return np.take(values, index, axis=0)


def columnar(values: np.ndarray) -> np.ndarray:
    """``values`` with each column contiguous (2D: Fortran order), the same values: formulas over pairs of
    rows that read one column of every pair at a time (``A[..., 2]``) run about twice as fast."""
    return np.asfortranarray(values) if values.ndim == 2 else values
