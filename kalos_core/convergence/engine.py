"""Label convergence (Tschirschwitz & Rodehorst, WACV 2025): modified mAP between raters.

``convergence_steps`` (``compute_convergence`` runs it) evaluates every rater pair in both
directions with pycocotools' COCOeval (once per direction; boxes vectorised in kalos_core/coco_eval.py,
bit-identical), re-accumulates AP on 1,000 seeded subsets of 10 % of the images from the
per-image results, pools the pairs, and optionally maps α through Eq. 1 and places a model's
predictions against the interval. See docs/convergence.md. The directions, the subsets and α's
chunks of images are independent: each of the three steps maps them on the run's executor
(:mod:`kalos_core.executors`); the result does not depend on it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from itertools import combinations
from typing import Callable, Generator, Sequence

import numpy as np

from ..data import MultiRaterDataset, order_key
from ..executors import map_chunks
from ..progress import run_steps
from ..variations.types import LabelTable
from .cocoeval import IOU_THRESHOLDS, BoxLabels, evaluate_direction, label_columns, side_labels
from .stats import draw_subsets, interval_stats
from .summaries import Side, average_summaries, direction_summary, full_set_ap, nanmean
from .types import THRESHOLD_KEYS, BootstrapSummary, ConvergenceConfig, ConvergenceResult, PairResult

Progress = Callable[[float, str], None]


def _annotation_raters(annotations) -> set:
    """The raters who drew ``annotations`` (column-held ones read without making objects)."""
    names = getattr(annotations, "names", None)
    return set(names) if names is not None else {a.rater for a in annotations}


def restrict_raters(dataset: MultiRaterDataset, raters: Sequence[str]) -> MultiRaterDataset:
    """The data set seen by ``raters`` only (other rows and their annotations dropped); the data set
    itself when that drops nothing (its column-held annotations keep agreement's fast kernel)."""
    keep = set(raters)
    if all(keep.issuperset(im.raters) and keep.issuperset(_annotation_raters(im.annotations))
           for im in dataset.images):
        return dataset
    images = [replace(im, raters=tuple(r for r in im.raters if r in keep),
                      annotations=[a for a in im.annotations if a.rater in keep]) for im in dataset.images]
    return replace(dataset, images=images)


def _on_images(labels: list[dict], image_ids: list, own: list) -> list[dict]:
    """``labels`` (on the images ``own``) restricted to ``image_ids``."""
    if len(image_ids) == len(own):
        return labels
    if isinstance(labels, BoxLabels):
        return labels.on_images(image_ids)
    keep = set(image_ids)
    return [d for d in labels if d["image_id"] in keep]


def per_image_alpha(dataset: MultiRaterDataset, ids: list, workers: int = 1, executor: str | None = None,
                    ) -> np.ndarray:
    """(T, I) per-image α at each COCO IoU threshold (default distance, Greedy, ψsoft); NaN for
    images without a value.

    One agreement map step: each image's own matrix at .50 and, as localisation-sensitivity
    re-matches, its matrix at every other threshold - the candidate pairs and their order are
    prepared once (at the lowest threshold) and each threshold's matching keeps those at or above
    it, so every value is the one a run at that threshold alone gives, bit for bit (an image
    without units has α 1.0 either way: its virtual NO_OBJECT unit, or an empty matrix)."""
    from ..agreement.pipeline import AgreementConfig, map_partial

    thresholds = [float(round(t, 2)) for t in IOU_THRESHOLDS]
    cfg = AgreementConfig(threshold=thresholds[0], lsa_thresholds=tuple(thresholds[1:]), bootstrap=0,
                          vitality=False, class_difficulty=False, collaboration=False, intra_rater=False)
    merged = map_partial(dataset, cfg, workers, executor)
    per_image = np.full((len(thresholds), len(merged.image_ids)), np.nan)
    per_image[0] = merged.alphas
    for t, thr in enumerate(thresholds[1:], start=1):
        if ("lsa", thr) in merged.values:
            values = merged.values[("lsa", thr)]
            per_image[t, values.images] = values.alphas
    column = {str(i): k for k, i in enumerate(merged.image_ids)}    # as the result's per_image_alpha keys
    pick = np.array([column.get(str(i), -1) for i in ids], dtype=np.int64)
    out = np.full((len(thresholds), len(ids)), np.nan)   # C order: the means over images sum in that order
    out[:, pick >= 0] = per_image[:, pick[pick >= 0]]
    return out


def image_order(dataset: MultiRaterDataset) -> list:
    return sorted((im.id for im in dataset.images), key=order_key)


def bootstrap_summary(per_subset: np.ndarray, confidence: float) -> BootstrapSummary:
    """(S, T) AP per subset and threshold -> mAP distribution (mean over thresholds) and one per
    threshold."""
    return BootstrapSummary(interval_stats(nanmean(per_subset, axis=1), confidence),
                            {k: interval_stats(per_subset[:, t], confidence) for t, k in enumerate(THRESHOLD_KEYS)})


#: bootstrap subsets per chunk of the map step (one progress step each)
CHUNK_SUBSETS = 50


def evaluate_chunk(directions: list, first: int, job: tuple) -> list:
    """A map step (:func:`kalos_core.executors.map_chunks`): the table of each direction ``(ground-truth
    rater, detecting rater, shared image ids)``; ``job`` = (data set, each rater's labels, each rater's
    image ids, task). A direction's table does not depend on the others."""
    dataset, labels, own, task = job
    return [evaluate_direction(dataset, _on_images(labels[gt], shared, own[gt]),
                               _on_images(labels[dt], shared, own[dt]), shared, task) for gt, dt, shared in directions]


def bootstrap_chunk(masks: np.ndarray, first: int, sides: list) -> np.ndarray:
    """A map step (:func:`kalos_core.executors.map_chunks`): (P, S, T) AP per pair of the subsets
    ``masks`` (rows) alone, the mean of its two directions; a subset's values do not depend on the others."""
    return np.stack([nanmean(np.stack([ab.per_threshold(masks), ba.per_threshold(masks)]), axis=0)
                     for ab, ba in sides])


def convergence_steps(dataset: MultiRaterDataset, config: ConvergenceConfig = ConvergenceConfig(),
                      predictions: Sequence[dict] | None = None, workers: int = 1, executor: str | None = None,
                      chunk_size: int = CHUNK_SUBSETS) -> Generator[tuple[float, str], None,
                                                                               ConvergenceResult]:
    """Modified mAP between raters, its bootstrap interval, optionally Eq. 1 and a model, as a
    generator of ``(fraction, message)`` progress steps that returns the result.

    Parameters
    ----------
    dataset : a multi-rater data set of boxes (``bbox``) or polygons / RLE masks (``segm``).
    config : see :class:`ConvergenceConfig`.
    predictions : optional COCO results (``image_id``, ``category_id``, ``bbox`` or
        ``segmentation``, ``score``) on the data set's images.
    workers, executor : where the directions, the bootstrap's subsets and α's images run
        (:mod:`kalos_core.executors`); the result does not depend on them.
    chunk_size : subsets per chunk of the bootstrap.
    """
    run_on = {"workers": workers, "executor": executor}
    raters = dataset.check_raters(config.raters or dataset.raters, "raters", at_least=2)
    if not any(a.rater in raters for im in dataset.images for a in im.annotations):
        raise ValueError(f"raters {', '.join(raters)} drew no labels: there is no mAP between them")
    names = dataset.categories
    ids = image_order(dataset)
    index_of = {i: n for n, i in enumerate(ids)}
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    own = {r: [im.id for im in dataset.images if r in im.raters] for r in raters}
    shared_by = {(a, b): [im.id for im in dataset.images if a in im.raters and b in im.raters]
                 for a, b in combinations(raters, 2)}
    directions = [d for (a, b), shared in shared_by.items() if shared for d in ((a, b, shared), (b, a, shared))]
    if not directions:
        raise ValueError("no image was assigned to two of the chosen raters")
    columns = label_columns(dataset, config.task)
    labels = {r: side_labels(dataset, r, own[r], columns) for r in raters}   # each rater's once, not per pair
    tables = []
    for done, part in map_chunks(evaluate_chunk, directions, (dataset, labels, own, config.task), 1, **run_on):
        tables += part
        yield 0.4 * done / len(directions), f"evaluated {done}/{len(directions)} rater pair directions"
    pairs, sides = [], []
    for (a, b, shared), t_ab, t_ba in zip(directions[::2], tables[::2], tables[1::2]):
        ab, ba = Side(t_ab, index_of), Side(t_ba, index_of)
        both = {f"{a}->{b}": direction_summary(full_set_ap(ab.table), ab.table.cat_ids, names),
                f"{b}->{a}": direction_summary(full_set_ap(ba.table), ba.table.cat_ids, names)}
        matched = LabelTable()   # built when first read (the operator, --include-labels), ba's flags last
        for t in (ab.table, ba.table):
            matched.add(lambda into, t=t: into.update(zip(t.det_source, t.matched.T.tolist())))
        pairs.append(PairResult((a, b), len(shared), average_summaries(list(both.values())), both,
                                matched=matched))
        sides.append((ab, ba))
    seconds["evaluate"] = time.perf_counter() - start
    full = average_summaries([p.full_set for p in pairs])

    masks = draw_subsets(len(ids), config.bootstrap, config.fraction, config.seed) if config.bootstrap else None
    pooled = None
    if masks is not None:
        start = time.perf_counter()
        T = len(THRESHOLD_KEYS)
        per_pair = np.full((len(pairs), len(masks), T), np.nan)
        lo = 0
        for done, part in map_chunks(bootstrap_chunk, masks, sides, chunk_size, **run_on):
            per_pair[:, lo:done], lo = part, done
            yield 0.4 + 0.3 * done / len(masks), f"bootstrap: {done}/{len(masks)} subsets"
        for p, pair in enumerate(pairs):
            pair.bootstrap = bootstrap_summary(per_pair[p], config.confidence)
        pooled = nanmean(per_pair, axis=0)
        seconds["bootstrap"] = time.perf_counter() - start
    result = ConvergenceResult(config, raters, len(ids), full,
                               bootstrap_summary(pooled, config.confidence) if pooled is not None else None, pairs,
                               seconds=seconds)
    if config.alpha or (config.alpha is None and len(raters) > 2):
        from .alpha_map import alpha_mapping

        yield 0.75, "alpha per threshold"
        start = time.perf_counter()
        result.alpha = alpha_mapping(per_image_alpha(restrict_raters(dataset, raters), ids, **run_on), masks,
                                     pooled, config.confidence)
        seconds["alpha"] = time.perf_counter() - start
    if predictions is not None:
        from .model import evaluate_model

        yield 0.9, "model predictions"
        start = time.perf_counter()
        result.model = evaluate_model(dataset, raters, predictions, config, index_of, masks, result.bootstrap)
        seconds["model"] = time.perf_counter() - start
    yield 1.0, "done"
    return result


def compute_convergence(dataset: MultiRaterDataset, config: ConvergenceConfig = ConvergenceConfig(),
                        predictions: Sequence[dict] | None = None,
                        progress: Progress | None = None, **executor) -> ConvergenceResult:
    """:func:`convergence_steps` run to the end; ``progress(fraction, message)`` per step (optional);
    ``executor``: its ``workers``, ``executor``, ``chunk_size``."""
    return run_steps(convergence_steps(dataset, config, predictions, **executor), progress)
