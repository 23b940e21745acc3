"""Whole-array index helpers shared across measures (no KaLOS imports: a leaf of the import graph)."""

from __future__ import annotations

import numpy as np


def ranges(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, value)``: for each k, the values ``first[k] .. first[k] + count[k] - 1``, owned by k."""
    owner = np.repeat(np.arange(len(count)), count)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(count) - count - first, count)

