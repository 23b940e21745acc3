"""The KαLOS pipeline: match, build reliability data, compute α and diagnostics.

``compute_agreement(dataset, AgreementConfig(...)) -> AgreementResult`` is the
one entry point the CLI, the FiftyOne operators and notebooks call.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Generator

import numpy as np

from . import diagnostics as diag
from .checks import check_bool, check_fraction, check_int
from .data import MultiRaterDataset
from .geometry import get_distance
from .geometry.registry import DISTANCES
from .io import InputWarnings, check_measurable
from .jsonsafe import json_safe
from .matching import get_cost, get_solver
from .problem import empty_image_cells, prepare_image
from .progress import run_steps
from .reliability import Cells, alpha, interpret, unit_status

#: default of ``AgreementConfig.max_diagnostic_raters`` (one image with 100 raters: about 1 s per diagnostic)
MAX_DIAGNOSTIC_RATERS = 100


@dataclass(frozen=True)
class AgreementConfig:
    """Settings of an agreement run (METHOD.md §3-4, §6)."""

    threshold: float = 0.5           #: similarity threshold (inclusive), e.g. IoU >= 0.5
    distance: str | None = None      #: registered distance name; None = the kind's default
    solver: str = "greedy"           #: greedy | shm | ahc
    cost: str = "soft"               #: soft (ψsoft) | neg (ψneg)
    lsa_thresholds: tuple[float, ...] = ()
    vitality: bool = True
    class_difficulty: bool = True
    collaboration: bool = True
    intra_rater: bool = True
    bootstrap: int = 1000            #: resamples for the CI of the mean α (0 = none)
    confidence: float = 0.95
    seed: int = 0
    #: vitality and collaboration re-match an image once per rater / pair of raters (cost ~ raters³):
    #: refused when an image has more raters than this (None or 0 = no limit); docs/input.md
    max_diagnostic_raters: int | None = MAX_DIAGNOSTIC_RATERS

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
        for name in ("vitality", "class_difficulty", "collaboration", "intra_rater"):
            check_bool(name, getattr(self, name))
        check_int("bootstrap", self.bootstrap)
        check_fraction("confidence", self.confidence, open_low=True, open_high=True)
        check_int("seed", self.seed)
        if self.max_diagnostic_raters is not None:
            check_int("max_diagnostic_raters", self.max_diagnostic_raters)

    def check_dataset(self, dataset: MultiRaterDataset) -> None:
        """Refuse, before any work, what this config cannot measure on ``dataset``."""
        check_measurable(dataset)
        get_distance(dataset.kind, self.distance)
        limit = self.max_diagnostic_raters
        if limit and (self.vitality or self.collaboration):
            worst = max(dataset.images, key=lambda im: len(im.raters))
            if len(worst.raters) > limit:
                raise ValueError(
                    f"image {worst.id} has {len(worst.raters)} raters: vitality and the collaboration matrix "
                    f"re-match an image once per rater and per pair of raters (the cost grows with the cube "
                    f"of the rater count) and are limited to {limit} raters per image. Turn them off "
                    f"(--no-diagnostics / vitality=False, collaboration=False) or raise the limit "
                    f"(--max-diagnostic-raters N / max_diagnostic_raters=N, 0 = none).")


@dataclass
class AgreementResult:
    """Everything one agreement run produces; ``to_dict()`` is the JSON contract."""

    mean_alpha: float
    global_alpha: float
    mean_alpha_ci: tuple[float, float] | None
    per_image_alpha: dict[str, float]
    n_images: int
    n_annotations: int
    n_units: int
    config: dict
    unit_of: dict[Any, str] = field(default_factory=dict)          #: annotation id -> unit id
    status_of: dict[Any, str] = field(default_factory=dict)        #: annotation id -> status
    vitality: dict[str, float] = field(default_factory=dict)
    vitality_global: dict[str, float] = field(default_factory=dict)
    class_difficulty: dict[str, float] = field(default_factory=dict)
    class_difficulty_global: dict[str, float] = field(default_factory=dict)
    collaboration: dict[str, dict[str, float]] = field(default_factory=dict)
    collaboration_global: dict[str, dict[str, float]] = field(default_factory=dict)
    #: images each pair of raters shares (both assigned): the support of ``collaboration`` (DIC masks on it)
    collaboration_n: dict[str, dict[str, int]] = field(default_factory=dict)
    #: raters that are models (predictions added by :mod:`kalos_core.model_rater`)
    models: list = field(default_factory=list)
    lsa: dict[str, float] = field(default_factory=dict)
    lsa_delta: float | None = None
    intra_rater: dict[str, float] = field(default_factory=dict)
    rater_summary: dict[str, dict[str, float]] = field(default_factory=dict)
    n_skipped: int = 0
    skipped: list = field(default_factory=list)
    n_single_rater_images: int = 0
    #: coercions of the input and caveats of the result: ``[{"message", "count", "examples"}]``
    warnings: list = field(default_factory=list)

    @property
    def interpretation(self) -> str:
        return interpret(self.mean_alpha)

    def to_dict(self, include_labels: bool = False) -> dict:
        # no asdict(): it deep-copies the per-label maps (300k entries: seconds)
        skip = () if include_labels else ("unit_of", "status_of")
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        if include_labels:
            d["unit_of"] = {str(k): v for k, v in self.unit_of.items()}
            d["status_of"] = {str(k): v for k, v in self.status_of.items()}
        d["interpretation"] = self.interpretation
        d["mean_alpha_ci"] = list(self.mean_alpha_ci) if self.mean_alpha_ci else None
        return json_safe(d)


def bootstrap_mean_ci(values: np.ndarray, n_resamples: int, confidence: float, seed: int):
    """Percentile bootstrap CI of the mean over images (resampled with replacement)."""
    values = np.asarray(values, dtype=float)
    if n_resamples <= 0 or len(values) == 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // len(values))
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


def _mean_of(lists: dict) -> dict:
    return {k: float(np.mean(v)) for k, v in sorted(lists.items()) if len(v)}


def _nested(pairs: dict[tuple[str, str], float], rows: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {r: {} for r in rows}
    for (p, q), v in pairs.items():
        out[p][q] = v
        out[q][p] = v
    for r in rows:
        out[r][r] = 1.0
    return {r: dict(sorted(v.items())) for r, v in out.items()}


@dataclass
class ImageOutcome:
    """Everything one image contributes (small and picklable, for worker processes)."""

    image_id: Any
    alpha: float
    rows: tuple
    ann_ids: list
    ann_raters: list
    units: list
    status: list
    cells: Cells
    class_alphas: dict = field(default_factory=dict)
    vitality: dict = field(default_factory=dict)
    pairwise: dict = field(default_factory=dict)
    lsa: dict = field(default_factory=dict)
    intra: dict = field(default_factory=dict)


def analyse_image(image, kind: str, config: AgreementConfig) -> ImageOutcome:
    """Match one image, compute its α and every per-image diagnostic."""
    spec = get_distance(kind, config.distance)
    solver, cost = get_solver(config.solver), get_cost(config.cost)
    thr = config.threshold
    ip = prepare_image(image, spec, min((thr, *config.lsa_thresholds)))
    units, cells = ip.match(thr, solver, cost)
    a = alpha(cells)
    out = ImageOutcome(image.id, a, ip.rows, [x.id for x in ip.annotations], [x.rater for x in ip.annotations],
                       units.tolist(), unit_status(units, ip.problem.category).tolist(),
                       cells if cells.n_units else empty_image_cells(ip.n_rows))
    if config.class_difficulty:
        out.class_alphas = diag.class_alphas(cells)
    if config.vitality:
        out.vitality = diag.vitality(ip, a, thr, solver, cost)
    if config.collaboration:
        out.pairwise = diag.pairwise(ip, thr, solver, cost)
    if config.lsa_thresholds:
        out.lsa = diag.localisation_sensitivity(ip, config.lsa_thresholds, solver, cost)
    if config.intra_rater:
        out.intra = diag.intra_rater(ip, thr, solver, cost)
    return out


_POOL_DATA: tuple | None = None  # (dataset, config), inherited by forked workers


def _analyse_index(k: int) -> ImageOutcome:
    dataset, config = _POOL_DATA
    return analyse_image(dataset.images[k], dataset.kind, config)


def _outcomes(dataset: MultiRaterDataset, config: AgreementConfig, workers: int):
    """Per-image outcomes in image order, from this process or a pool of forked workers."""
    global _POOL_DATA
    n = len(dataset.images)
    if workers <= 1 or n < 64 or "fork" not in mp.get_all_start_methods():
        for image in dataset.images:
            yield analyse_image(image, dataset.kind, config)
        return
    _POOL_DATA = (dataset, config)
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            yield from pool.imap(_analyse_index, range(n), chunksize=max(1, min(64, n // (8 * workers))))
    finally:
        _POOL_DATA = None


#: the optional diagnostics: each is a boolean switch of :class:`AgreementConfig`
DIAGNOSTICS = ("vitality", "class_difficulty", "collaboration", "intra_rater")


def compute_agreement(
    dataset: MultiRaterDataset,
    config: AgreementConfig = AgreementConfig(),
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> AgreementResult:
    """Run KαLOS on a multi-rater data set.

    Parameters
    ----------
    dataset : images with assigned raters and annotations (see :mod:`kalos_core.io`).
    config : threshold, distance, solver, cost and which diagnostics to compute.
    progress : optional callback ``progress(done, total)`` called every few images.
    workers : processes to spread the images over (``0`` = all cores); results
        do not depend on it.
    """
    total = len(dataset.images)
    report = None if progress is None else (lambda fraction, _: progress(round(fraction * total), total))
    return run_steps(agreement_steps(dataset, config, workers), report)


def agreement_steps(dataset: MultiRaterDataset, config: AgreementConfig = AgreementConfig(),
                    workers: int = 1) -> Generator[tuple[float, str], None, AgreementResult]:
    """:func:`compute_agreement` as a step generator (:mod:`kalos_core.progress`): yields
    ``(fraction of images done, message)`` every few images; returns the result."""
    config.check_dataset(dataset)
    spec = get_distance(dataset.kind, config.distance)
    workers = (os.cpu_count() or 1) if workers == 0 else workers
    all_rows = dataset.raters
    row_id = {r: k for k, r in enumerate(all_rows)}
    names = dataset.categories

    per_image: dict[str, float] = {}
    unit_of, status_of = {}, {}
    global_parts, global_maps = [], []
    vit, cls_mean = defaultdict(list), defaultdict(list)
    pair_mean, pair_cells = defaultdict(list), defaultdict(list)
    lsa_lists, intra = defaultdict(list), defaultdict(list)
    counts = defaultdict(lambda: defaultdict(int))
    n_units = single = 0
    total = len(dataset.images)

    for k, out in enumerate(_outcomes(dataset, config, workers)):
        per_image[str(out.image_id)] = out.alpha
        single += len(out.rows) < 2
        n_units += len(set(out.units))
        for aid, rater, u, s in zip(out.ann_ids, out.ann_raters, out.units, out.status):
            unit_of[aid] = f"{out.image_id}:{u}"
            status_of[aid] = s
            counts[rater]["annotations"] += 1
            counts[rater][s] += 1
        global_parts.append(out.cells)
        global_maps.append(np.array([row_id[r] for r in out.rows], dtype=np.int64))
        for c, v in out.class_alphas.items():
            cls_mean[names.get(c, str(c))].append(v)
        for r, v in out.vitality.items():
            vit[r].append(v)
        for pair, (v, pc) in out.pairwise.items():
            pair_mean[pair].append(v)
            pair_cells[pair].append(pc)
        for t, v in out.lsa.items():
            lsa_lists[t].append(v)
        for r, v in out.intra.items():
            intra[r].append(v)
        if k % 50 == 0 or k == total - 1:
            yield (k + 1) / total, f"{k + 1}/{total} images"

    alphas = np.array(list(per_image.values()))
    global_cells = Cells.concat(global_parts, global_maps)
    g = alpha(global_cells)
    result = AgreementResult(
        mean_alpha=float(alphas.mean()) if len(alphas) else float("nan"),
        global_alpha=g,
        mean_alpha_ci=bootstrap_mean_ci(alphas, config.bootstrap, config.confidence, config.seed),
        per_image_alpha=per_image,
        n_images=total,
        n_annotations=dataset.n_annotations,
        n_units=n_units,
        config={**asdict(config), "distance": spec.name, "kind": dataset.kind},
        unit_of=unit_of,
        status_of=status_of,
        n_skipped=len(dataset.skipped),
        skipped=list(dataset.skipped),
        n_single_rater_images=int(single),
        warnings=_result_warnings(dataset, int(single)),
    )
    result.models = list(dataset.meta.get("models", []))
    result.rater_summary = {r: {**{k: float(v) for k, v in c.items()}} for r, c in sorted(counts.items())}
    if config.vitality:
        result.vitality = _mean_of(vit)
        for r, idx in row_id.items():
            keep = np.ones(len(all_rows), bool)
            keep[idx] = False
            if len(all_rows) >= 3:
                result.vitality_global[r] = g - alpha(global_cells.select_rows(keep))
    if config.class_difficulty:
        result.class_difficulty = _mean_of(cls_mean)
        result.class_difficulty_global = {
            names.get(c, str(c)): v for c, v in sorted(diag.class_alphas(global_cells).items())
        }
    if config.collaboration:
        result.collaboration = _nested(_mean_of(pair_mean), all_rows)
        shared = _nested({p: len(v) for p, v in pair_mean.items()}, all_rows)
        result.collaboration_n = {r: {q: n for q, n in row.items() if q != r} for r, row in shared.items()}
        result.collaboration_global = _nested(
            {p: alpha(Cells.concat(cs)) for p, cs in pair_cells.items()}, all_rows)
    if config.lsa_thresholds:
        result.lsa = {f"{t:g}": float(np.mean(v)) for t, v in sorted(lsa_lists.items())}
        strict = max(lsa_lists)
        result.lsa_delta = result.mean_alpha - float(np.mean(lsa_lists[strict]))
    if config.intra_rater:
        result.intra_rater = _mean_of(intra)
    return result
