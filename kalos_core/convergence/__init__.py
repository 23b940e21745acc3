"""Label convergence: modified mAP between raters, its bootstrap interval, Eq. 1, a model placed
against it (docs/convergence.md). No FiftyOne import.

The names below are imported on first use (PEP 562): a module that needs only
:mod:`.cocoeval` (the noise-aware evaluation) does not pay for :mod:`.stats`' scipy.stats."""

from importlib import import_module

#: name -> the module it is imported from on first use
_LAZY = {
    **dict.fromkeys(("compute_convergence", "convergence_steps"), "engine"),
    **dict.fromkeys(("alpha_from_map", "draw_subsets", "fit_line", "interval_stats", "map_from_alpha",
                     "normal_interval", "place"), "stats"),
    **dict.fromkeys(("ConvergenceConfig", "ConvergenceResult"), "types"),
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ConvergenceConfig", "ConvergenceResult", "alpha_from_map", "compute_convergence", "convergence_steps",
           "draw_subsets", "fit_line", "interval_stats", "map_from_alpha", "normal_interval", "place"]
