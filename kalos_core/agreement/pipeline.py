"""The KαLOS pipeline: match, build reliability data, compute α and diagnostics.

``compute_agreement(dataset, AgreementConfig(...)) -> AgreementResult`` is the
one entry point the CLI, the FiftyOne operators and notebooks call.

The run is a map over chunks of images (:func:`kalos_core.agreement.partial.analyse_chunk`:
matching, then the α of every matrix of the chunk in one batch) and a reduce
(:func:`finish`: partials merged, each diagnostic's ``reduce``). The diagnostics
come from one registry (:mod:`kalos_core.agreement.diagnostics`): their switches are
``AgreementConfig`` fields and their result fields ``AgreementResult`` fields.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable, Generator

import numpy as np

from ..coincidence import AlphaSums
from ..data import MultiRaterDataset
from ..io.validation import InputWarnings
from ..progress import run_steps
from .config import DIAGNOSTICS, MAX_DIAGNOSTIC_RATERS, AgreementConfig  # noqa: F401  (re-exported)
from .diagnostics import Reduction
from ..executors import map_images
from .label_map import LabelMap
from .model_rater import compare_models
from .partial import ALPHA, Partial, analyse_chunk, enabled_diagnostics
from .result import AgreementResult

#: images per chunk of the map step (results do not depend on it)
CHUNK_SIZE = 256


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


def _result_warnings(dataset: MultiRaterDataset, single: int, config: AgreementConfig) -> list[dict]:
    """The data set's input warnings, plus what makes its α less than it seems, and the diagnostics
    skipped on images with too many raters."""
    warn = InputWarnings(dataset.warnings)
    for d in enabled_diagnostics(config):
        crowded = [im for im in dataset.images if d.skipped_on(len(im.raters), config)]
        if crowded:
            worst = max(len(im.raters) for im in crowded)
            warn.add(f"{d.name} skipped on images with more than {config.max_diagnostic_raters} raters (up to "
                     f"{worst}): it re-matches an image once per rater or pair of raters, a cost that grows with "
                     f"the cube of the rater count (docs/scale.md); alpha is computed as usual. Raise the limit "
                     f"(--max-diagnostic-raters N / max_diagnostic_raters=N, 0 = none) to compute it there",
                     count=len(crowded), examples=[f"image {im.id} ({len(im.raters)} raters)" for im in crowded[:5]])
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
    config.check_dataset(dataset)
    total = len(dataset.images)
    merged = Partial()
    for done, part in map_images(analyse_chunk, dataset, config, chunk_size, workers, executor):
        merged.merge(part)
        yield done / max(total, 1), f"{done}/{total} images"
    return finish(dataset, config, merged)


def map_partial(dataset: MultiRaterDataset, config: AgreementConfig, workers: int = 1,
                executor: str | None = None) -> Partial:
    """The map step of a run, merged (what :func:`finish` reduces): per-image values by key, for a
    caller that reads them itself (label convergence: α at every COCO threshold at once)."""
    config.check_dataset(dataset)
    merged = Partial()
    for _, part in map_images(analyse_chunk, dataset, config, CHUNK_SIZE, workers, executor):
        merged.merge(part)
    return merged


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
        warnings=_result_warnings(dataset, int(merged.single), config),
    )
    result.models = list(dataset.meta.get("models", []))
    result.rater_summary = {r: {k: float(v) for k, v in c.items()} for r, c in sorted(merged.counts.items())}
    rows = list(dataset.raters)
    for d in enabled_diagnostics(config):
        own = lambda table: {k[1]: v for k, v in table.items() if k[0] == d.name}
        red = Reduction(own(merged.values), own(merged.sums), alphas, global_sums, g, mean,
                             rows, dataset.categories, config, merged.image_ids)
        for name, value in d.reduce(red).items():
            setattr(result, name, value)
    result.model_comparison = compare_models(result)
    return result
