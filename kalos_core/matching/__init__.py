"""Correspondence: costs and solvers, each in a registry (docs/method.md §3)."""

from .costs import COSTS, get_cost
from .problem import MatchProblem
from .solvers import SOLVERS, canonical_units, get_solver, register_solver
from . import mgm  # noqa: F401  (registers the "mgm" solver)

__all__ = ["COSTS", "SOLVERS", "MatchProblem", "canonical_units", "get_cost", "get_solver", "register_solver"]
