"""The KαLOS pipeline: match, build reliability data, compute α and diagnostics.

``compute_agreement(dataset, AgreementConfig(...)) -> AgreementResult`` is the
one entry point the CLI, the FiftyOne operators and notebooks call.

The run is a map over chunks of images (:func:`kalos_core.partial.analyse_chunk`:
matching, then the α of every matrix of the chunk in one batch) and a reduce
(:func:`finish`: partials merged, each diagnostic's ``reduce``). The diagnostics
come from one registry (:mod:`kalos_core.diagnostics`): their switches are
``AgreementConfig`` fields and their result fields ``AgreementResult`` fields.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import asdict, field, fields, make_dataclass
from typing import Any, Callable, Generator, Mapping

import numpy as np

from . import diagnostic_defs  # noqa: F401  (registers the diagnostics before the config is built)
from . import diagnostics as diag
from .checks import check_bool, check_fraction, check_int
from .coincidence import AlphaSums
from .data import MultiRaterDataset
from .geometry import get_distance
from .geometry.registry import DISTANCES
from .io import InputWarnings, check_measurable
from .jsonsafe import json_safe
from .label_map import LabelMap
from .model_rater import compare_models
from .matching import get_cost, get_solver
from .executors import get_executor
from .partial import ALPHA, Partial, chunk_bounds, enabled_diagnostics
from .progress import run_steps
from .reliability import interpret

#: default of ``AgreementConfig.max_diagnostic_raters`` (one image with 100 raters: about 1 s per diagnostic)
MAX_DIAGNOSTIC_RATERS = 100
#: images per chunk of the map step (results do not depend on it)
CHUNK_SIZE = 256

#: the optional diagnostics: each is a boolean switch of :class:`AgreementConfig` (from the registry)
DIAGNOSTICS = diag.switches()


class _ConfigChecks:
    """Validation of :class:`AgreementConfig` (its fields come from the registry below)."""

    def __post_init__(self) -> None:
        check_fraction("threshold", self.threshold)
        if isinstance(self.lsa_thresholds, (str, bytes)) or not hasattr(self.lsa_thresholds, "__iter__"):
            raise ValueError(f"lsa_thresholds must be a list of numbers in [0, 1], got {self.lsa_thresholds!r}")
        object.__setattr__(self, "lsa_thresholds",
                           tuple(check_fraction("LSA threshold", t) for t in self.lsa_thresholds))
        if self.distance is not None and (not isinstance(self.distance, str)
                                          or self.distance not in {n for _, n in DISTANCES}):
            known = sorted({n for _, n in DISTANCES})
            raise ValueError(f"unknown distance {self.distance!r}; known: {', '.join(known)}")
        if not isinstance(self.solver, str) or not isinstance(self.cost, str):
            raise ValueError(f"solver and cost must be names, got {self.solver!r} and {self.cost!r}")
        get_solver(self.solver)
        get_cost(self.cost)
        for name in DIAGNOSTICS:
            check_bool(name, getattr(self, name))
        check_int("bootstrap", self.bootstrap)
        check_fraction("confidence", self.confidence, open_low=True, open_high=True)
        check_int("seed", self.seed)
        if self.max_diagnostic_raters is not None:
            check_int("max_diagnostic_raters", self.max_diagnostic_raters)
        if self.keypoint_sigmas is not None:
            sigmas = tuple(self.keypoint_sigmas) if hasattr(self.keypoint_sigmas, "__iter__") else ()
            if not sigmas or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in sigmas):
                raise ValueError(f"keypoint_sigmas must be positive numbers, one per joint, got {self.keypoint_sigmas!r}")
            object.__setattr__(self, "keypoint_sigmas", tuple(float(v) for v in sigmas))

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
        limit = self.max_diagnostic_raters
        costly = [d.name for d in enabled_diagnostics(self) if d.rematches_per_rater]
        if limit and costly and dataset.images:
            worst = max(dataset.images, key=lambda im: len(im.raters))
            if len(worst.raters) > limit:
                raise ValueError(
                    f"image {worst.id} has {len(worst.raters)} raters: {' and '.join(costly)} "
                    f"re-match an image once per rater or per pair of raters (the cost grows with the cube "
                    f"of the rater count) and are limited to {limit} raters per image. Turn them off "
                    f"(--no-diagnostics / {', '.join(f'{n}=False' for n in costly)}) or raise the limit "
                    f"(--max-diagnostic-raters N / max_diagnostic_raters=N, 0 = none).")


#: Settings of an agreement run (METHOD.md §3-4, §6); one boolean per registered diagnostic switch.
AgreementConfig = make_dataclass("AgreementConfig", [
    ("threshold", float, field(default=0.5)),            # similarity threshold (inclusive), e.g. IoU >= 0.5
    ("distance", "str | None", field(default=None)),     # registered distance name; None = the kind's default
    ("solver", str, field(default="greedy")),            # greedy | shm | ahc | mgm
    ("cost", str, field(default="soft")),                # soft (ψsoft) | neg (ψneg)
    ("lsa_thresholds", "tuple[float, ...]", field(default=())),
    *[(name, bool, field(default=True)) for name in DIAGNOSTICS],
    ("bootstrap", int, field(default=1000)),             # resamples for the CI of the mean α (0 = none)
    ("confidence", float, field(default=0.95)),
    ("seed", int, field(default=0)),
    # vitality and collaboration re-match an image once per rater / pair of raters (cost ~ raters³):
    # refused when an image has more raters than this (None or 0 = no limit); docs/input.md
    ("max_diagnostic_raters", "int | None", field(default=MAX_DIAGNOSTIC_RATERS)),
    # OKS per-joint sigmas (keypoints); None = COCO's 17 person sigmas, or 0.05 per joint otherwise
    ("keypoint_sigmas", "tuple[float, ...] | None", field(default=None)),
], bases=(_ConfigChecks,), frozen=True)
AgreementConfig.__module__ = __name__
AgreementConfig.__doc__ = "Settings of an agreement run (METHOD.md §3-4, §6); diagnostics from the registry."


class _ResultMethods:
    @property
    def interpretation(self) -> str:
        return interpret(self.mean_alpha)

    def to_dict(self, include_labels: bool = False) -> dict:
        """The JSON contract (README "Command line")."""
        # no asdict(): it deep-copies the per-label maps (300k entries: seconds)
        skip = () if include_labels else ("unit_of", "status_of")
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        if include_labels:
            d["unit_of"] = {str(k): v for k, v in self.unit_of.items()}
            d["status_of"] = {str(k): v for k, v in self.status_of.items()}
        d["interpretation"] = self.interpretation
        d["mean_alpha_ci"] = list(self.mean_alpha_ci) if self.mean_alpha_ci else None
        return json_safe(d)


#: Everything one agreement run produces; ``to_dict()`` is the JSON contract. The
#: diagnostics' fields (vitality, class_difficulty, ...) come from the registry.
AgreementResult = make_dataclass("AgreementResult", [
    ("mean_alpha", float), ("global_alpha", float), ("mean_alpha_ci", "tuple[float, float] | None"),
    ("per_image_alpha", "dict[str, float]"), ("n_images", int), ("n_annotations", int), ("n_units", int),
    ("config", dict),
    # annotation id -> unit id / status: read-only mappings built on first read (label_map.LabelMap)
    ("unit_of", Mapping, field(default_factory=dict)),
    ("status_of", Mapping, field(default_factory=dict)),
    *[(name, Any, field(default_factory=make)) for name, make in diag.result_fields()],
    ("models", list, field(default_factory=list)),           # raters that are models (kalos_core.model_rater)
    # per scope and model: α with each human, mean model-human vs mean human-human α, verdict
    ("model_comparison", dict, field(default_factory=dict)),
    ("rater_summary", dict, field(default_factory=dict)),
    ("n_skipped", int, field(default=0)),
    ("skipped", list, field(default_factory=list)),
    ("n_single_rater_images", int, field(default=0)),
    # coercions of the input and caveats of the result: [{"message", "count", "examples"}]
    ("warnings", list, field(default_factory=list)),
], bases=(_ResultMethods,))
AgreementResult.__module__ = __name__
AgreementResult.__doc__ = "Everything one agreement run produces; ``to_dict()`` is the JSON contract."
def bootstrap_mean_ci(values: np.ndarray, n_resamples: int, confidence: float, seed: int):
    """Percentile bootstrap CI of the mean over images (resampled with replacement)."""
    values = np.asarray(values, dtype=float)
    if n_resamples <= 0 or len(values) == 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 200_000 // len(values))   # rows that stay in the CPU cache (same draws, same means)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, len(values), (stop - start, len(values)))].mean(1)
    lo = (1 - confidence) / 2
    return float(np.quantile(means, lo)), float(np.quantile(means, 1 - lo))


def _result_warnings(dataset: MultiRaterDataset, single: int) -> list[dict]:
    """The data set's input warnings, plus what makes its α less than it seems."""
    warn = InputWarnings(dataset.warnings)
    if single:
        warn.add("images with fewer than two raters: nothing to compare there, their alpha is 1.0 by convention",
                 count=single, examples=[f"image {im.id}" for im in dataset.images if len(im.raters) < 2][:5])
    if dataset.n_annotations == 0:
        warn.add("no annotations at all: alpha 1.0 only says that the raters agree there is nothing to label")
    return warn.to_list()


def compute_agreement(
    dataset: MultiRaterDataset,
    config: AgreementConfig = AgreementConfig(),
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    executor: str | None = None,
) -> AgreementResult:
    """Run KαLOS on a multi-rater data set.

    Parameters
    ----------
    dataset : images with assigned raters and annotations (see :mod:`kalos_core.io`).
    config : threshold, distance, solver, cost and which diagnostics to compute.
    progress : optional callback ``progress(done, total)`` called every few images.
    workers : processes to spread the images over (``0`` = all cores); results
        do not depend on it.
    executor : ``local`` | ``processes`` | ``dask`` (:mod:`kalos_core.executors`);
        default ``local`` for one worker, else ``processes``. Results do not depend on it.
    """
    total = len(dataset.images)
    report = None if progress is None else (lambda fraction, _: progress(round(fraction * total), total))
    return run_steps(agreement_steps(dataset, config, workers, executor=executor), report)


def agreement_steps(dataset: MultiRaterDataset, config: AgreementConfig = AgreementConfig(),
                    workers: int = 1, chunk_size: int = CHUNK_SIZE, executor: str | None = None,
                    ) -> Generator[tuple[float, str], None, AgreementResult]:
    """:func:`compute_agreement` as a step generator (:mod:`kalos_core.progress`): yields
    ``(fraction of images done, message)`` after each chunk of images; returns the result."""
    run = get_executor(executor or ("local" if workers == 1 else "processes"))
    config.check_dataset(dataset)
    workers = (os.cpu_count() or 1) if workers == 0 else workers
    total = len(dataset.images)
    if executor != "local" and workers > 1:   # at least ~4 chunks per worker (results do not change)
        chunk_size = max(1, min(chunk_size, -(-total // (4 * workers))))
    bounds = chunk_bounds(total, chunk_size)
    merged = Partial()
    for (_, done), part in zip(bounds, run(dataset, config, bounds, workers)):
        merged.merge(part)
        yield done / max(total, 1), f"{done}/{total} images"
    return finish(dataset, config, merged)


def finish(dataset: MultiRaterDataset, config, merged: Partial) -> AgreementResult:
    """The reduce step: the result of a data set from the merged partial of all its images."""
    spec = config.distance_spec(dataset.kind)
    alphas = np.array(merged.alphas, dtype=float)
    global_sums = merged.sums.get(ALPHA, AlphaSums())
    g = global_sums.alpha()
    mean = float(alphas.mean()) if len(alphas) else float("nan")
    result = AgreementResult(
        mean_alpha=mean,
        global_alpha=g,
        mean_alpha_ci=bootstrap_mean_ci(alphas, config.bootstrap, config.confidence, config.seed),
        per_image_alpha={str(i): a for i, a in zip(merged.image_ids, merged.alphas)},
        n_images=len(dataset.images),
        n_annotations=dataset.n_annotations,
        n_units=merged.n_units,
        config={**asdict(config), "distance": spec.name, "kind": dataset.kind},
        unit_of=LabelMap(merged.labels, "unit"),
        status_of=LabelMap(merged.labels, "status"),
        n_skipped=len(dataset.skipped),
        skipped=list(dataset.skipped),
        n_single_rater_images=int(merged.single),
        warnings=_result_warnings(dataset, int(merged.single)),
    )
    result.models = list(dataset.meta.get("models", []))
    result.rater_summary = {r: {k: float(v) for k, v in c.items()} for r, c in sorted(merged.counts.items())}
    rows = list(dataset.raters)
    for d in enabled_diagnostics(config):
        own = lambda table: {k[1]: v for k, v in table.items() if k[0] == d.name}
        red = diag.Reduction(own(merged.values), own(merged.sums), alphas, global_sums, g, mean,
                             rows, dataset.categories, config)
        for name, value in d.reduce(red).items():
            setattr(result, name, value)
    result.model_comparison = compare_models(result)
    return result
