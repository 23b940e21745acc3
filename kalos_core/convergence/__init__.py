"""Label convergence: modified mAP between raters, its bootstrap interval, Eq. 1, a model placed
against it (docs/convergence.md). No FiftyOne import."""

from .engine import compute_convergence, convergence_steps
from .stats import alpha_from_map, draw_subsets, fit_line, interval_stats, map_from_alpha, normal_interval, place
from .types import ConvergenceConfig, ConvergenceResult

__all__ = ["ConvergenceConfig", "ConvergenceResult", "alpha_from_map", "compute_convergence", "convergence_steps",
           "draw_subsets", "fit_line", "interval_stats", "map_from_alpha", "normal_interval", "place"]
