"""Noise-aware detector evaluation: corner-noise fit, ε̄(W, H), AP^l ≤ AP ≤ AP^u
(docs/convergence.md, "Noise-aware evaluation"). No FiftyOne import."""

from .engine import evaluation_steps, fit_reference_noise, noise_aware_evaluation
from .types import NoiseAwareConfig, NoiseAwareResult, NoiseFit

__all__ = ["NoiseAwareConfig", "NoiseAwareResult", "NoiseFit", "evaluation_steps", "fit_reference_noise",
           "noise_aware_evaluation"]
