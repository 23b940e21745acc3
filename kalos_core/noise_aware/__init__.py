"""Noise-aware detector evaluation: corner-noise fit, ε̄(W, H), AP^l ≤ AP ≤ AP^u
(docs/convergence.md, "Noise-aware evaluation"). No FiftyOne import.

The names below are imported on first use (PEP 562): a module that needs only :mod:`.inputs` does
not pay for the engine's scipy.optimize and scipy.interpolate."""

from ..lazy import lazy_attributes

#: name -> the module it is imported from on first use
_LAZY = {
    **dict.fromkeys(("evaluation_steps", "fit_reference_noise", "noise_aware_evaluation"), "engine"),
    **dict.fromkeys(("NoiseAwareConfig", "NoiseAwareResult", "NoiseFit"), "types"),
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = ["NoiseAwareConfig", "NoiseAwareResult", "NoiseFit", "evaluation_steps", "fit_reference_noise",
           "noise_aware_evaluation"]
