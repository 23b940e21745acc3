"""What crosses the noise-aware package's boundary: config, the corner-noise fit, the result.

``NoiseAwareResult.to_dict()`` is the JSON contract of ``python -m kalos_core noise-aware
--output`` and what a FiftyOne run stores; AP values are in percent.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

#: corner offsets: left, right, top, bottom edge (Eq. 5's x1, x2, y1, y2)
COMPONENTS = ("x1", "x2", "y1", "y2")
#: AP keys: IoU thresholds (index into .50:.05:.95) and the mean over all ten
AP_KEYS = {"50": 0, "75": 5, "95": 9, "50:95": None}
SIZES = ("small", "medium", "large")


@dataclass(frozen=True)
class NoiseAwareConfig:
    """Settings of a noise-aware evaluation.

    iou_min : pairs of the noise fit with a lower IoU are dropped (the paper: 0.1).
    fence_k : Tukey fence factor (1.5).
    share : ``split`` (two noisy raters: each carries the fitted noise scaled by 1/√2) or
        ``reference`` (the reference is noise-free: all noise on the other side).
    grid_points : ε̄ grid nodes per axis (log-spaced sizes, bilinear interpolation in log size).
    max_size : largest box side on the grid in pixels (None = the largest in the data, at least 64).
    quad_nodes : Gauss-Legendre nodes per half-axis for Eq. 7 (deterministic: no sampling, no seed).
    """

    iou_min: float = 0.1
    fence_k: float = 1.5
    share: str = "split"
    grid_points: int = 24
    max_size: float | None = None
    quad_nodes: int = 8

    def __post_init__(self) -> None:
        if self.share not in ("split", "reference"):
            raise ValueError(f"share must be 'split' or 'reference', got {self.share!r}")
        if not 0.0 <= self.iou_min < 1.0 or self.fence_k <= 0 or self.grid_points < 2 or self.quad_nodes < 2:
            raise ValueError("need 0 <= iou_min < 1, fence_k > 0, grid_points >= 2, quad_nodes >= 2")


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

        return {"kind": "noise_aware", "config": asdict(self.config), "reference": self.reference,
                "n_predictions": self.n_predictions, "n_reference": self.n_reference, "units": "percent",
                "noise": self.noise.to_dict(), "ap": pct(self.ap),
                "by_size": {s: pct(b) for s, b in self.by_size.items()}, "eps_grid": self.eps_grid.to_dict()}
