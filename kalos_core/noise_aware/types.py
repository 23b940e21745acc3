"""What crosses the noise-aware package's boundary: config, the corner-noise fit, the result.

``NoiseAwareResult.to_dict()`` is the JSON contract of ``python -m kalos_core noise-aware
--output`` and what a FiftyOne run stores; AP values are in percent.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..jsonsafe import json_safe
from ..params import Config, param
from .tables import AP_KEYS, SIZES  # noqa: F401 (part of the package's boundary)

#: corner offsets: left, right, top, bottom edge (Eq. 5's x1, x2, y1, y2)
COMPONENTS = ("x1", "x2", "y1", "y2")


@dataclass(frozen=True)
class NoiseAwareConfig(Config):
    """Settings of a noise-aware evaluation (each field a declared parameter, :mod:`kalos_core.params`).

    ``share``: ``split`` (two noisy raters: each carries the fitted noise scaled by 1/√2) or
    ``reference`` (the reference is noise-free: all noise on the other side). The ε̄ grid has
    ``grid_points`` log-spaced sizes per axis (bilinear interpolation in log size); Eq. 7 is
    integrated with ``quad_nodes`` Gauss-Legendre nodes per half-axis (no sampling, no seed).
    """

    iou_min: float = param(0.1, "fraction", "noise-fit pairs with a lower IoU are dropped (the paper: 0.1)",
                           hi_open=True, advanced=True, label="Minimum IoU of a noise-fit pair")
    fence_k: float = param(1.5, "float", "Tukey fence factor of the corner offsets", lo=0.0, lo_open=True,
                           advanced=True, label="Tukey fence factor")
    share: str = param("split", "choice", "split: both raters noisy (scale / sqrt 2); reference: the reference "
                       "is noise-free", choices=("split", "reference"), label="Noise sharing")
    grid_points: int = param(24, "int", "ε̄ grid nodes per axis", lo=2, hi=100, advanced=True,
                             label="ε̄ grid points")
    max_size: float | None = param(None, "float", "largest box side on the ε̄ grid in pixels (default: the "
                                   "largest in the data, at least 64)", lo=0.0, lo_open=True, optional=True,
                                   advanced=True, label="ε̄ grid: largest box side (px)")
    quad_nodes: int = param(8, "int", "Gauss-Legendre nodes per half-axis for Eq. 7 (the cost grows "
                            "as its 4th power)", lo=2, hi=16, advanced=True,
                            label="Quadrature nodes")


def _num(x):
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class NoiseFit:
    """Truncated-Laplace corner noise: per component σ and M in pixels (per rater, after sharing)."""

    sigma: dict[str, float]
    M: dict[str, float]
    n_pairs: int
    n_inliers: int
    share: str = "split"
    observed_sigma: dict[str, float] = field(default_factory=dict)   #: σ of the observed offsets
    mean_iou_inliers: float = float("nan")
    fences: dict[str, list[float]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["mean_iou_inliers"] = _num(self.mean_iou_inliers)
        return d


@dataclass
class EpsGrid:
    """ε̄(W, H) = 1 − E[IoU] on a log-spaced grid (rows: widths, columns: heights), in pixels."""

    widths: np.ndarray
    heights: np.ndarray
    eps: np.ndarray

    def to_dict(self) -> dict:
        return {"widths": self.widths.tolist(), "heights": self.heights.tolist(), "eps": self.eps.tolist()}


@dataclass
class NoiseAwareResult:
    """AP^l ≤ AP ≤ AP^u (fractions) per IoU key, overall (``ap``) and per size (``by_size``)."""

    noise: NoiseFit
    ap: dict[str, dict[str, float]]
    by_size: dict[str, dict[str, dict[str, float]]]
    eps_grid: EpsGrid
    reference: str
    n_predictions: int
    n_reference: int
    config: NoiseAwareConfig
    #: per prediction (``noise_aware_evaluation(per_detection=True)``), keyed by its ``id``; not in ``to_dict``
    detections: dict | None = None

    def to_dict(self) -> dict:
        def pct(block):
            return {k: {b: (None if not math.isfinite(v) else round(100.0 * v, 6)) for b, v in d.items()}
                    for k, d in block.items()}

        return json_safe({"kind": "noise_aware", "config": asdict(self.config), "reference": self.reference,
                          "n_predictions": self.n_predictions, "n_reference": self.n_reference, "units": "percent",
                          "noise": self.noise.to_dict(), "ap": pct(self.ap),
                          "by_size": {s: pct(b) for s, b in self.by_size.items()},
                          "eps_grid": self.eps_grid.to_dict()})
