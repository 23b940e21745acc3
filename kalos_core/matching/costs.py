"""Cost functions ψ (docs/method.md §3): lower cost = better match."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..registry import Registry

#: ``cost(similarity, same_class) -> cost``, vectorised over arrays
CostFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def soft_cost(sim: np.ndarray, same_class: np.ndarray) -> np.ndarray:
    """ψsoft, "category lenient": ``-s - 1`` for equal classes, ``-s`` otherwise."""
    return np.where(same_class, -sim - 1.0, -sim)


def neg_cost(sim: np.ndarray, same_class: np.ndarray) -> np.ndarray:
    """ψneg: ``-s``, class-blind."""
    return -np.asarray(sim, dtype=float)


COSTS: Registry[CostFn] = Registry("cost", {"soft": soft_cost, "neg": neg_cost})
get_cost = COSTS.get
