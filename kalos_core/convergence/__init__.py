"""Label convergence: modified mAP between raters, its bootstrap interval, Eq. 1, a model placed
against it (docs/convergence.md). No FiftyOne import.

The names below are imported on first use (PEP 562): a module that needs only
:mod:`.cocoeval` (the noise-aware evaluation) does not pay for :mod:`.stats`' scipy.stats."""

from ..lazy import lazy_attributes

#: name -> the module it is imported from on first use
_LAZY = {
    **dict.fromkeys(("compute_convergence", "convergence_steps"), "engine"),
    **dict.fromkeys(("alpha_from_map", "draw_subsets", "fit_line", "interval_stats", "map_from_alpha",
                     "normal_interval", "place"), "stats"),
    **dict.fromkeys(("ConvergenceConfig", "ConvergenceResult"), "types"),
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = ["ConvergenceConfig", "ConvergenceResult", "alpha_from_map", "compute_convergence", "convergence_steps",
           "draw_subsets", "fit_line", "interval_stats", "map_from_alpha", "normal_interval", "place"]
