"""The settings of an agreement run, declared once (:mod:`kalos_core.params`; docs/method.md §3-4, §6).

Each optional diagnostic of :mod:`.diagnostic_defs` is switched by the boolean field of its
name; :func:`check_diagnostic_switches` refuses, at import, a registered diagnostic without one.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

import numpy as np

from ..data import MultiRaterDataset
from ..geometry.registry import DISTANCES, get_distance  # its package registers all kinds
from ..io.records import check_measurable
from ..matching.costs import COSTS
from ..matching.solvers import SOLVERS
from ..params import Config, param
from .diagnostic_defs import chunk_cells  # noqa: F401  (registers the diagnostics the switches below name)
from .diagnostics import get_diagnostic, switches

#: default of ``AgreementConfig.max_diagnostic_raters``: above it an image's vitality and collaboration are
#: skipped with a warning (docs/scale.md: one image with 100 raters, about 1 s per diagnostic)
MAX_DIAGNOSTIC_RATERS = 100
#: the most resamples of the mean α's bootstrap (cost ~ resamples x images: 5,000 images, about 20 s)
MAX_BOOTSTRAP = 100_000


def _distance_names() -> list[str]:
    return sorted({name for _, name in DISTANCES})


def _switch(name: str):
    return param(True, "bool", get_diagnostic(name).help, label=name.replace("_", " ").capitalize(),
                 group="diagnostics")


#: the similarity thresholds localisation sensitivity is computed at where a run asks for it without
#: naming them (the demos, the sensitivity panel's Recompute)
SENSITIVITY_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)


@dataclass(frozen=True)
class AgreementConfig(Config):
    """Settings of an agreement run: matching (threshold, distance, solver, cost), the diagnostics
    to compute, the bootstrap of the mean α, and the limits of the costly diagnostics."""

    threshold: float = param(0.5, "fraction", "similarity threshold in [0, 1] (inclusive), e.g. IoU >= 0.5",
                             label="Similarity threshold")
    distance: str | None = param(None, "choice", "distance name (default: iou, mpjpe for keypoints, iou3d for cuboids)",
                                 choices=_distance_names, optional=True)
    solver: str = param("greedy", "choice", "how the raters' instances are matched into units",
                        choices=lambda: SOLVERS)
    cost: str = param("soft", "choice", "soft (ψsoft: same-class pairs first) or neg (ψneg: class-blind)",
                      choices=lambda: COSTS)
    lsa_thresholds: tuple[float, ...] = param((), "fractions", "thresholds for localisation sensitivity, "
                                              "e.g. 0.1,0.3,0.5", flag="--lsa", label="LSA thresholds")
    vitality: bool = _switch("vitality")
    class_difficulty: bool = _switch("class_difficulty")
    collaboration: bool = _switch("collaboration")
    intra_rater: bool = _switch("intra_rater")
    bootstrap: int = param(1000, "int", "resamples for the CI of the mean alpha (0 = none)", advanced=True,
                           hi=MAX_BOOTSTRAP)
    confidence: float = param(0.95, "fraction", "confidence of the bootstrap CI", lo_open=True, hi_open=True,
                              advanced=True)
    seed: int = param(0, "int", "seed of the bootstrap: same seed, same interval", advanced=True)
    # vitality and collaboration re-match an image once per rater / pair of raters (cost ~ raters³)
    max_diagnostic_raters: int | None = param(
        MAX_DIAGNOSTIC_RATERS, "int", f"skip vitality/collaboration, with a warning, on an image with more raters "
        f"(default {MAX_DIAGNOSTIC_RATERS}; 0 = no limit; their cost grows with the cube of the rater count)",
        optional=True, none_as=0, advanced=True)
    keypoint_sigmas: tuple[float, ...] | None = param(
        None, "floats", "OKS per-joint sigmas, comma-separated (default: COCO's 17 person sigmas, else 0.05)",
        lo=0.0, lo_open=True, optional=True, advanced=True)

    def check(self) -> None:
        if self.keypoint_sigmas is not None and not self.keypoint_sigmas:
            raise ValueError("keypoint_sigmas must be positive numbers, one per joint, got ()")

    def distance_spec(self, kind: str):
        """The run's distance for geometry ``kind``, with its options bound (OKS: ``keypoint_sigmas``)."""
        spec = get_distance(kind, self.distance)
        if self.keypoint_sigmas is not None and kind == "keypoints":
            if "sigmas" not in inspect.signature(spec.similarity).parameters:
                raise ValueError(f"keypoint_sigmas are used by the oks distance only, not by {spec.name!r}")
            return get_distance(kind, self.distance, sigmas=np.asarray(self.keypoint_sigmas))
        return spec

    def check_dataset(self, dataset: MultiRaterDataset) -> None:
        """Refuse, before any work, what this config cannot measure on ``dataset``."""
        check_measurable(dataset)
        self.distance_spec(dataset.kind)
        if self.keypoint_sigmas is not None and dataset.kind == "keypoints":
            joints = {len(a.geometry) // 3 for im in dataset.images for a in im.annotations}
            if joints - {len(self.keypoint_sigmas)}:
                raise ValueError(f"{len(self.keypoint_sigmas)} keypoint_sigmas given, but the keypoint sets have "
                                 f"{', '.join(map(str, sorted(joints)))} joints")


def check_diagnostic_switches() -> None:
    """Every registered diagnostic with a switch has its boolean field on :class:`AgreementConfig`."""
    names = {f.name for f in dataclasses.fields(AgreementConfig)}
    missing = [name for name in switches() if name not in names]
    if missing:
        raise TypeError(f"diagnostic(s) {', '.join(missing)} registered without a switch: add "
                        f"`{missing[0]}: bool = _switch({missing[0]!r})` to AgreementConfig")


check_diagnostic_switches()

#: the optional diagnostics' switches (fields of :class:`AgreementConfig`), in registration order
DIAGNOSTICS = switches()
