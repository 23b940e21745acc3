"""The matching's parameters, declared once (:mod:`kalos_core.params`): threshold, distance,
solver and cost of the instance matching (docs/method.md §3).

Every measure that matches labels the way an agreement run does takes them from here with
:func:`kalos_core.params.same_param`, so that their kind, default, choices and help are written
once::

    @dataclass(frozen=True)
    class ConsensusConfig(Config):
        threshold: float = same_param(MatchingConfig, "threshold")
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import DISTANCES
from ..params import Config, param, params_of
from .costs import COSTS
from .solvers import SOLVERS


def distance_names() -> set[str]:
    """Every registered distance name (of any geometry kind)."""
    return {name for _, name in DISTANCES}


@dataclass(frozen=True)
class MatchingConfig(Config):
    """Settings of the instance matching (what makes two raters' labels one unit)."""

    threshold: float = param(0.5, "fraction", "similarity threshold in [0, 1] (inclusive)")
    distance: str | None = param(None, "choice", "distance name (default: iou, or mpjpe for keypoints)",
                                 choices=distance_names, optional=True)
    solver: str = param("greedy", "choice", "matching solver", choices=lambda: SOLVERS)
    cost: str = param("soft", "choice", "matching cost: soft (psi_soft) or neg (psi_neg)", choices=lambda: COSTS)


#: the names of the matching's parameters, in declaration order
MATCHING_PARAMS = tuple(p.name for p in params_of(MatchingConfig))
