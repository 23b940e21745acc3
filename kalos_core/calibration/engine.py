"""``calibrate(dataset, CalibrationConfig(...)) -> CalibrationResult``: the entry point.

Steps (docs/method.md §5): draw the Do / De pairs once (seeded), compute both samples of
every distance (those of a kind in one pass over the pairs), then for each distance the KS
separation, τ* with its bootstrap interval, Braylan's σ, summaries and histograms, optionally
per size stratum;
finally recommend the distance with the highest KS (flagging a scale-dependent
winner and naming the best scale-invariant alternative), and compute the α each
recommendation would give.

``calibrate_steps`` is the same as a generator of ``(fraction, message)``
progress steps whose return value is the result (for the FiftyOne operator).
"""

from __future__ import annotations

import time
from typing import Callable, Generator

import numpy as np

from ..agreement.pipeline import AgreementConfig, compute_agreement
from ..io.records import check_measurable
from ..data import MultiRaterDataset, in_canonical_order
from ..geometry import distances_for, get_distance
from ..progress import run_steps
from .analysis import Separation, separate
from .bootstrap import image_resamples
from .density import Grid
from .drill import Observations
from ..executors import map_chunks, resolve_executor
from .recommend import recommend
from .sampling import (PreparedCache, build_plan, observation_span, observe_many, observe_pairs,
                       pair_groups, relative_areas, size_strata)
from .separation import histogram, summarise
from .types import (STRATA, TASK_OF_KIND, CalibrationConfig, CalibrationResult, DistanceCalibration,
                    Recommendation, StratumCalibration)

Steps = Generator[tuple[float, str], None, CalibrationResult]


def default_distances(kind: str) -> tuple[str, ...]:
    """The kind's default distance first, then every other one registered for ``kind``
    (except the rasterised ``mask_iou`` on polygons); ties in KS go to the earlier one."""
    first = get_distance(kind).name
    rest = [n for n in distances_for(kind) if n != first and not (kind == "polygon" and n == "mask_iou")]
    return (first, *rest)


def calibrate_steps(dataset: MultiRaterDataset, config: CalibrationConfig = CalibrationConfig(), workers: int = 1,
                    executor: str | None = None) -> Steps:
    """Calibrate, yielding ``(fraction done, message)`` along the way; returns the result. ``workers``,
    ``executor``: where the distances (chunks of images) and the bootstraps (one per distance) run
    (:mod:`kalos_core.executors`); the result does not depend on them. The α preview (one agreement run
    without diagnostics, ~0.4 s on 5,000 images) stays in this process: a pool costs it more than it saves."""
    check_measurable(dataset)
    resolve_executor(workers, executor)   # a bad executor or worker count fails here, before any work
    names = tuple(config.distances or default_distances(dataset.kind))
    specs = [get_distance(dataset.kind, n) for n in names]   # unknown names fail here, before any work
    t0 = time.perf_counter()
    plan_rng, boot_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(2))
    plan = build_plan(in_canonical_order(dataset), plan_rng)   # draws follow ids, not the file's order
    if plan.n_observations == 0:
        raise ValueError("calibration needs at least one image with two raters and an annotation (no Do pairs)")
    resamples = image_resamples(len(dataset.images), config.bootstrap, boot_rng)
    cache = PreparedCache(plan)
    strata = None
    if config.stratify:
        areas = relative_areas(plan, cache)
        strata = None if areas is None else size_strata(areas)[plan.obs_query]
    timings = {"plan_s": time.perf_counter() - t0}
    observed = Observations(plan, cache, {s.name: s for s in specs}, {})
    yield 0.0, f"calibrating {', '.join(names)}: Do / De distances"
    t1 = time.perf_counter()
    observed.values.update(observe_many(plan, [s for s in specs if s.pairs is None], cache))
    for group in pair_groups(specs):     # the distances of a kind walk the pairs together
        cache.get(group[0])              # prepared here, once, not in every worker
        parts = []
        for done, part in map_chunks(observe_images, range(len(dataset.images)), (plan, group, cache),
                                    len(dataset.images), workers, executor):
            parts.append(part)
            yield 0.5 * done / len(dataset.images), f"Do / De distances: {done}/{len(dataset.images)} images"
        observed.values.update({s.name: tuple(np.concatenate([p[s.name][k] for p in parts]) for k in (0, 1))
                                for s in group})
    timings["distances_s"] = time.perf_counter() - t1
    yield 0.5, f"calibrating {', '.join(names)}: {config.bootstrap} bootstrap resamples"
    t2 = time.perf_counter()
    results: dict[str, DistanceCalibration] = {}
    job = (observed.values, plan.obs_image, strata, resamples, config)
    for done, part in map_chunks(calibrate_distances, names, job, 1, workers, executor):
        results.update(part)
        yield 0.5 + 0.45 * done / len(names), f"bootstrap: {done}/{len(names)} distances"
    timings["bootstrap_s"] = time.perf_counter() - t2
    rec = recommend(results, config.confidence, {s.name: s.scale_invariant for s in specs})
    if config.alpha_preview:
        yield 0.97, "agreement at the recommended threshold"
        t3 = time.perf_counter()
        for r in (rec, rec.alternative):
            if r is not None:
                r.mean_alpha, r.global_alpha = _alpha_at(dataset, r)
        timings["alpha_preview_s"] = time.perf_counter() - t3
    yield 1.0, "calibration done"
    timings["total_s"] = time.perf_counter() - t0
    return CalibrationResult(
        task=dataset.meta.get("task") or TASK_OF_KIND[dataset.kind], kind=dataset.kind,
        n_images=len(dataset.images), n_annotations=dataset.n_annotations, seed=config.seed,
        bootstrap=config.bootstrap, confidence=config.confidence, distances=results,
        recommended=rec, timings=timings, observations=observed)


def calibrate(dataset: MultiRaterDataset, config: CalibrationConfig = CalibrationConfig(),
              progress: Callable[[float, str], None] | None = None) -> CalibrationResult:
    """Calibrate the distance function and the threshold τ* of a multi-rater data set.

    Parameters
    ----------
    dataset : images with assigned raters and annotations (see :mod:`kalos_core.io`).
    config : distances to compare, seed, bootstrap resamples, stratification.
    progress : optional ``progress(fraction, message)`` callback.
    """
    return run_steps(calibrate_steps(dataset, config), progress)


def _alpha_at(dataset: MultiRaterDataset, rec: Recommendation) -> tuple[float, float]:
    """Mean and global α (no diagnostics) at a recommendation's distance and similarity threshold."""
    threshold = min(max(rec.similarity_threshold, 0.0), 1.0)
    res = compute_agreement(dataset, AgreementConfig(
        threshold=threshold, distance=rec.distance, vitality=False, class_difficulty=False,
        collaboration=False, intra_rater=False, bootstrap=0))
    return res.mean_alpha, res.global_alpha


def observe_images(images: range, first: int, job: tuple) -> dict[str, tuple]:
    """The map step of the distances: ``(do, de)`` of the observations whose query is on ``images``
    (:func:`kalos_core.calibration.sampling.observe_pairs`), for each distance of one ``prepare``."""
    plan, group, cache = job
    return observe_pairs(plan, group, cache, *observation_span(plan, first, first + len(images)))


def calibrate_distances(names: list[str], first: int, job: tuple) -> dict[str, DistanceCalibration]:
    """The map step of the bootstraps: the calibration of each distance of ``names`` from its Do / De values
    (one distance's does not depend on another's)."""
    values, obs_image, strata, resamples, config = job
    return {name: _calibrate_distance(name, *values[name], obs_image, strata, resamples, config) for name in names}


def _calibrate_distance(name: str, do: np.ndarray, de: np.ndarray, obs_image: np.ndarray,
                        strata: np.ndarray | None, resamples: np.ndarray,
                        config: CalibrationConfig) -> DistanceCalibration:
    grid = Grid.for_values(np.concatenate([do, de]), config.grid_points)
    sep = separate(do, de, obs_image, resamples, grid, config.confidence)
    by_size = None
    if strata is not None:
        by_size = {}
        for s, label in enumerate(STRATA):
            keep = strata == s
            part = separate(do[keep], de[keep], obs_image[keep], resamples, grid, config.confidence)
            by_size[label] = _stratum(part)
    return DistanceCalibration(
        **sep.threshold(), name=name,
        sigma=sep.support.sigma(config.sigma_p) if sep.support else float("nan"), tau_method=sep.tau_method,
        do=summarise(do, sep.do_mode), de=summarise(de, sep.de_mode),
        histogram=histogram(do, de, grid, config.histogram_bins),
        bandwidth={"do": sep.bandwidth_do, "de": sep.bandwidth_de}, strata=by_size)


def _stratum(sep: Separation) -> StratumCalibration:
    return StratumCalibration(**sep.threshold(), tau_method=sep.tau_method, n_do=sep.n, n_de=sep.n)
