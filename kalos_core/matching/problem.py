"""The matching problem of one image."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .costs import CostFn


@dataclass
class MatchProblem:
    """Annotations of one image, ready for a solver.

    Attributes
    ----------
    sim : (n, n) similarity matrix (only entries between different raters are used).
    rater : (n,) row index of each annotation's rater.
    category : (n,) category id of each annotation.
    """

    sim: np.ndarray
    rater: np.ndarray
    category: np.ndarray

    @property
    def n(self) -> int:
        return len(self.rater)

    def subset(self, keep: np.ndarray) -> "MatchProblem":
        """The problem restricted to the annotations where ``keep`` is True."""
        idx = np.flatnonzero(keep)
        return MatchProblem(self.sim[np.ix_(idx, idx)], self.rater[idx], self.category[idx])

    def candidates(self, threshold: float, cost: CostFn):
        """Candidate pairs ``i < j`` of different raters with ``s >= threshold``, and their costs."""
        i, j = np.nonzero(np.triu(self.sim >= threshold, 1) & (self.rater[:, None] != self.rater[None, :]))
        c = cost(self.sim[i, j], self.category[i] == self.category[j])
        return i, j, c
