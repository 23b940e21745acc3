"""What crosses the convergence package's boundary: its config and its results.

``ConvergenceResult.to_dict()`` is the JSON contract of ``python -m kalos_core convergence
--output`` and what a FiftyOne run stores; mAP values are in percent, as the paper writes them.
Arrays a panel draws (the bootstrap distribution, per threshold) are plain lists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from ..jsonsafe import json_safe
from ..params import Config, ParamError, param

#: the paper's Eq. 1 (mAP and α as fractions), fitted on LVIS / COCO / Open Images subsets
EQ1_SLOPE, EQ1_INTERCEPT = 0.836, 0.197
#: the most bootstrap subsets a run draws (ten times the paper's 1,000; each costs a re-accumulation)
MAX_BOOTSTRAP = 10_000
THRESHOLD_KEYS = tuple(f"{t:.2f}" for t in np.linspace(0.5, 0.95, 10))


@dataclass(frozen=True)
class ConvergenceConfig(Config):
    """Settings of a label-convergence run (each field a declared parameter, :mod:`kalos_core.params`).

    ``raters``: every pair of them is evaluated (None = all). ``alpha``: also compute per-image α
    at .50:.05:.95, map it through Eq. 1 and refit the line on these data; None = only when there
    are more than two raters.
    """

    task: str = param("bbox", "choice", "bbox (boxes) or segm (masks / polygons)", choices=("bbox", "segm"))
    bootstrap: int = param(1000, "int", "image subsets (the paper: 1,000; 0 = full set only; at most 10,000)",
                           hi=MAX_BOOTSTRAP, label="Bootstrap subsets")
    fraction: float = param(0.1, "fraction", "share of the images in each subset, drawn without replacement "
                            "(the paper: 0.1)", lo_open=True, label="Subset fraction")
    seed: int = param(0, "int", "seed of the bootstrap subsets: same seed, same result")
    confidence: float = param(0.95, "fraction", "level of both intervals (normal: mean ± z·SD; percentile)",
                              lo_open=True, hi_open=True, advanced=True)
    raters: tuple[str, ...] | None = param(None, "names", "comma-separated raters to compare (default: all)",
                                           optional=True)
    alpha: bool | None = param(None, "bool", "also map alpha through Eq. 1 and refit the line (default: only "
                               "with > 2 raters)", optional=True, label="Map α through Eq. 1 (and refit)")

    def check(self) -> None:
        if self.raters is not None and len(self.raters) < 2:
            raise ParamError("raters", f"raters must name at least two raters, got {', '.join(self.raters)}")


def _pct(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(100.0 * float(x), 6)


@dataclass
class MapSummary:
    """mAP@[.5:.95], AP50, AP75 (fractions), AP per threshold and per class (fractions)."""

    map: float
    ap50: float
    ap75: float
    per_threshold: dict[str, float] = field(default_factory=dict)
    per_class: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"map": _pct(self.map), "ap50": _pct(self.ap50), "ap75": _pct(self.ap75),
                "per_threshold": {k: _pct(v) for k, v in self.per_threshold.items()},
                "per_class": {k: _pct(v) for k, v in self.per_class.items()}}


@dataclass
class IntervalStats:
    """A bootstrap distribution (fractions) and its summary."""

    values: np.ndarray
    mean: float
    std: float
    min: float
    max: float
    ci_normal: tuple[float, float]
    ci_percentile: tuple[float, float]
    n_valid: int

    def to_dict(self, include_values: bool = True, percent: bool = True) -> dict:
        f = _pct if percent else (lambda x: None if not math.isfinite(x) else float(x))
        d = {"mean": f(self.mean), "std": f(self.std), "min": f(self.min), "max": f(self.max),
             "ci_normal": [f(v) for v in self.ci_normal], "ci_percentile": [f(v) for v in self.ci_percentile],
             "n_valid": self.n_valid}
        if include_values:
            d["values"] = [f(v) for v in self.values]
        return d


@dataclass
class BootstrapSummary:
    """The subset distribution of mAP and of AP at each IoU threshold."""

    map: IntervalStats
    per_threshold: dict[str, IntervalStats] = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = self.map.to_dict()
        d["per_threshold"] = {k: s.to_dict() for k, s in self.per_threshold.items()}
        return d


@dataclass
class PairResult:
    """Two raters: both directions and their average, on the images both were assigned."""

    raters: tuple[str, str]
    n_images: int
    full_set: MapSummary
    directions: dict[str, MapSummary]
    bootstrap: BootstrapSummary | None = None
    #: annotation id -> matched (bool) at each IoU threshold .50:.95, for both raters' labels
    matched: Mapping = field(default_factory=dict)

    def to_dict(self, include_labels: bool = False) -> dict:
        d = {"raters": list(self.raters), "n_images": self.n_images, "full_set": self.full_set.to_dict(),
             "directions": {k: v.to_dict() for k, v in self.directions.items()},
             "bootstrap": self.bootstrap.to_dict() if self.bootstrap else None}
        if include_labels:
            d["matched"] = {str(k): v for k, v in self.matched.items()}
        return d


@dataclass
class AlphaMapping:
    """Per-subset α (mean per-image α, averaged over .50:.95) mapped to mAP through Eq. 1, and a
    line refitted on these data (per subset and threshold: α@t against the raters' AP@t)."""

    full_set_alpha: float
    alpha_per_threshold: dict[str, float]
    alpha: IntervalStats
    eq1_map: IntervalStats
    refit: dict
    refit_map: IntervalStats | None
    note: str = ("Eq. 1 was fitted with Tschirschwitz's K-alpha on LVIS/COCO/Open Images subsets; "
                 "KaLOS alpha (matched units, mean per-image alpha) is another variant, so prefer the refit line "
                 "when mAP between raters is available.")

    def to_dict(self) -> dict:
        return {"full_set_alpha": self.full_set_alpha, "alpha_per_threshold": self.alpha_per_threshold,
                "alpha": self.alpha.to_dict(percent=False),
                "eq1": {"slope": EQ1_SLOPE, "intercept": EQ1_INTERCEPT, **self.eq1_map.to_dict()},
                "refit": dict(self.refit, **(self.refit_map.to_dict() if self.refit_map else {})),
                "note": self.note}


@dataclass
class ModelResult:
    """A model's predictions against each rater, the rater average, and where it falls."""

    per_rater: dict[str, MapSummary]
    rater_averaged: MapSummary
    bootstrap: IntervalStats | None
    placement: dict[str, str]
    per_rater_placement: dict[str, dict[str, str]]
    n_predictions: int

    def to_dict(self) -> dict:
        return {"per_rater": {r: s.to_dict() for r, s in self.per_rater.items()},
                "rater_averaged": self.rater_averaged.to_dict(), "map": _pct(self.rater_averaged.map),
                "bootstrap": self.bootstrap.to_dict() if self.bootstrap else None,
                "placement": self.placement, "per_rater_placement": self.per_rater_placement,
                "n_predictions": self.n_predictions}


@dataclass
class ConvergenceResult:
    """A label-convergence run. ``full_set`` and ``bootstrap`` pool the rater pairs (their mean;
    with two raters, the one pair)."""

    config: ConvergenceConfig
    raters: list[str]
    n_images: int
    full_set: MapSummary
    bootstrap: BootstrapSummary | None
    pairs: list[PairResult]
    alpha: AlphaMapping | None = None
    model: ModelResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self, include_labels: bool = False) -> dict:
        """JSON-safe dict; ``include_labels`` adds each pair's per-label ``matched`` flags."""
        return json_safe({"kind": "convergence", "config": asdict(self.config), "raters": self.raters,
                          "n_images": self.n_images, "units": "percent",
                          "full_set": self.full_set.to_dict(),
                          "bootstrap": self.bootstrap.to_dict() if self.bootstrap else None,
                          "pairs": [p.to_dict(include_labels) for p in self.pairs],
                          "alpha": self.alpha.to_dict() if self.alpha else None,
                          "model": self.model.to_dict() if self.model else None,
                          "seconds": self.seconds})
