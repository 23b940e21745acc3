"""What crosses the calibration package's boundary: its config and its results.

``CalibrationResult.to_dict()`` is the JSON contract shared by the CLI
(``calibrate --output``), the FiftyOne run results and the Calibration panel.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


from ..data import KIND_TASKS
from ..jsonsafe import json_safe
from ..params import Config, param

#: COCO size cut-offs (32² and 96² pixels) scaled to a 640 x 480 image: relative areas
COCO_REFERENCE_AREA = 640.0 * 480.0
SIZE_CUTOFFS = (32.0**2 / COCO_REFERENCE_AREA, 96.0**2 / COCO_REFERENCE_AREA)
STRATA = ("small", "medium", "large")
#: floats in the JSON contract are rounded to this many digits (same seed: byte-identical output)
DIGITS = 6
#: CLI task name of each geometry kind (the ``task`` key of the result)
TASK_OF_KIND = KIND_TASKS
#: the most bootstrap resamples (each one re-estimates both densities of every distance on the grid:
#: memory ~ resamples x grid points x 16 bytes per distance, 160 MB at this cap and the default grid)
MAX_BOOTSTRAP = 10_000
#: the finest KDE grid (16x the default; the smoothing bandwidth, not the grid, limits the resolution)
MAX_GRID_POINTS = 16_384


@dataclass(frozen=True)
class CalibrationConfig(Config):
    """Settings of a calibration (docs/method.md §5); ``distances`` None = every distance registered
    for the geometry kind except ``mask_iou`` on polygons (a rasterised duplicate of the exact
    polygon IoU), the kind's default first (:func:`kalos_core.calibration.default_distances`)."""

    distances: tuple[str, ...] | None = param(
        None, "names", "distances to compare (default: all of the task's, e.g. iou,giou,centroid); the one "
        "with the highest KS separation is recommended", optional=True, label="Distances to compare")
    seed: int = param(0, "int", "seeds the cross-image draws and the bootstrap: same seed, same result", lo=0)
    bootstrap: int = param(100, "int", "percentile bootstrap resamples over images for the intervals of "
                           "τ* and KS (0 = no intervals)", lo=0, hi=MAX_BOOTSTRAP, label="Bootstrap resamples")
    confidence: float = param(0.95, "fraction", "confidence level of the bootstrap intervals", lo_open=True,
                              hi_open=True, advanced=True)
    stratify: bool = param(False, "bool", "also calibrate per size stratum (small/medium/large)",
                           label="Size strata")
    grid_points: int = param(1024, "int", "resolution of the KDE grid", lo=16, hi=MAX_GRID_POINTS,
                             advanced=True)
    histogram_bins: int = param(50, "int", "bins of the stored Do / De histograms", lo=1, advanced=True)
    sigma_p: float = param(0.05, "fraction", "significance level of Braylan's σ", lo_open=True, hi_open=True,
                           advanced=True)
    alpha_preview: bool = param(True, "bool", "also compute mean and global α (no diagnostics) at the "
                                "recommended threshold, and at the alternative's when there is one", advanced=True)


@dataclass
class SampleSummary:
    """Summary of one distance sample (Do or De); ``mode`` is the KDE maximum."""

    n: int
    mean: float
    median: float
    std: float
    mode: float


@dataclass
class Threshold:
    """How well one Do/De pair of samples separates, and where: KS, the distance threshold τ* and
    the similarity threshold 1 − τ*, each with its bootstrap interval (None without resamples).
    The common part of :class:`~kalos_core.calibration.analysis.Separation` (what the analysis
    finds), :class:`StratumCalibration` and :class:`DistanceCalibration` (what the result holds);
    its fields lead their JSON in this order."""

    ks: float
    ks_ci: tuple[float, float] | None
    tau_star: float
    tau_ci: tuple[float, float] | None
    similarity_threshold: float
    similarity_ci: tuple[float, float] | None

    def threshold(self) -> dict:
        """This object's :class:`Threshold` fields, by name (to build a result from an analysis)."""
        return {f.name: getattr(self, f.name) for f in fields(Threshold)}


@dataclass
class StratumCalibration(Threshold):
    """Calibration restricted to query annotations of one size stratum."""

    tau_method: str
    n_do: int
    n_de: int


@dataclass
class DistanceCalibration(Threshold):
    """Everything calibrated for one distance function (``name``; ``to_dict()`` keys it by name,
    then the :class:`Threshold` fields, ``sigma``, ``tau_method``, ``histogram``, ``bandwidth``,
    ``do``, ``de``, ``strata``)."""

    sigma: float
    tau_method: str
    do: SampleSummary
    de: SampleSummary
    histogram: dict
    bandwidth: dict
    name: str
    strata: dict[str, StratumCalibration] | None = None


@dataclass
class Recommendation:
    """The distance to use and its threshold (``standard_threshold``: a rounded value inside the CI).

    ``scale_dependent``: the distance measures offsets relative to the image, not
    the object (image-diagonal centroid), so one threshold means different things
    for small and large objects. Then ``alternative`` holds the best scale-invariant
    distance with its own τ*, so the user can choose. ``mean_alpha`` / ``global_alpha``:
    the agreement each would give at its similarity threshold (None when not computed).
    """

    distance: str
    tau_star: float
    similarity_threshold: float
    standard_threshold: float | None
    reason: str
    ks: float = float("nan")
    scale_dependent: bool = False
    mean_alpha: float | None = None
    global_alpha: float | None = None
    alternative: "Recommendation | None" = None

    def to_dict(self) -> dict:
        out = {k: v for k, v in vars(self).items() if k != "alternative"}
        out["alternative"] = None if self.alternative is None else self.alternative.to_dict()
        return out


@dataclass
class CalibrationResult:
    """A calibration of a data set; ``to_dict()`` is the JSON contract."""

    task: str
    kind: str
    n_images: int
    n_annotations: int
    seed: int
    bootstrap: int
    confidence: float
    distances: dict[str, DistanceCalibration]
    recommended: Recommendation
    timings: dict = field(default_factory=dict)
    #: the pairs measured (:class:`kalos_core.calibration.drill.Observations`), for the histogram
    #: drill-down; not part of ``to_dict()``
    observations: Any = field(default=None, repr=False, compare=False)

    @property
    def similarity_threshold(self) -> float:
        """The recommended similarity threshold (what ``compute_agreement`` should use)."""
        return self.recommended.similarity_threshold

    def to_dict(self) -> dict:
        out = {
            "task": self.task, "kind": self.kind, "n_images": self.n_images, "n_annotations": self.n_annotations,
            "seed": self.seed, "bootstrap": self.bootstrap, "confidence": self.confidence,
            "distances": {name: _distance_dict(d) for name, d in self.distances.items()},
            "recommended": self.recommended.to_dict(),
            "similarity_threshold": self.similarity_threshold,
        }
        return json_safe(out, DIGITS)


def _distance_dict(d: DistanceCalibration) -> dict:
    out = {k: v for k, v in vars(d).items() if k not in ("name", "do", "de", "strata")}
    out["do"], out["de"] = vars(d.do).copy(), vars(d.de).copy()
    out["strata"] = None if d.strata is None else {s: vars(c).copy() for s, c in d.strata.items()}
    return out

