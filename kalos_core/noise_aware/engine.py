"""Noise-aware evaluation (Murrugarra-Llerena et al.): a model's COCO AP with lower and upper
bounds from the corner noise of the reference labels.

1. fit the corner noise from two label sets on the same images (:mod:`.corner_noise`);
2. tabulate ε̄(W, H) = 1 − E[IoU] (:mod:`.expected_iou`);
3. evaluate the predictions against the reference rater with IoU − ε̄, IoU, IoU + ε̄ (:mod:`.bounds`).

:func:`evaluation_steps` yields ``(fraction, message)`` progress steps and returns the result;
:func:`noise_aware_evaluation` runs it.
"""

from __future__ import annotations

import contextlib
import io
from typing import Generator, Sequence

from pycocotools.coco import COCO

from ..convergence.cocoeval import rater_labels
from ..convergence.model import prepare_predictions
from ..data import MultiRaterDataset, order_key
from ..progress import run_steps
from .box_eval import bounded_ap_columns
from .corner_noise import fit_corner_noise
from .expected_iou import EpsInterpolator, eps_grid
from .types import NoiseAwareConfig, NoiseAwareResult, NoiseFit


def fit_reference_noise(dataset: MultiRaterDataset, reference: str, others: Sequence[str] | None = None,
                        config: NoiseAwareConfig = NoiseAwareConfig()) -> NoiseFit:
    """Corner noise between ``reference`` and ``others`` (default: every other rater of the data set).

    (Not :func:`kalos_core.noise.fit_noise_profile`, which fits the empirical noise generator's profile.)"""
    if dataset.kind != "box":
        raise ValueError("the corner-noise model needs boxes (task bbox)")
    dataset.check_raters(reference, "reference rater")
    if others:
        dataset.check_raters(others, "noise raters")
    others = [r for r in (others or dataset.raters) if r != reference]
    if not others:
        raise ValueError(f"noise raters: need a rater besides the reference {reference!r} to fit the corner "
                         f"noise; the data's raters are: {', '.join(dataset.raters)}")
    return fit_corner_noise(dataset, reference, others, config.iou_min, config.fence_k, config.share)


def evaluation_steps(dataset: MultiRaterDataset, predictions: Sequence[dict], reference: str,
                     noise: NoiseFit | None = None, config: NoiseAwareConfig = NoiseAwareConfig(),
                     noise_raters: Sequence[str] | None = None,
                     per_detection: bool = False) -> Generator[tuple[float, str], None, NoiseAwareResult]:
    """AP^l ≤ AP ≤ AP^u of ``predictions`` (COCO results with scores) against ``reference``, as a
    generator of ``(fraction, message)`` progress steps that returns the result.

    Parameters
    ----------
    dataset : multi-rater boxes; the reference rater's labels are the ground truth.
    predictions : COCO results (``image_id``, ``category_id``, ``bbox``, ``score``).
    reference : the rater whose labels are the ground truth.
    noise : a corner-noise fit; None = fit ``reference`` against ``noise_raters`` (default: the
        other raters) with ``config``.
    per_detection : also fill ``result.detections`` (per prediction, keyed by its ``id``: matched
        under each bound at each threshold, status, IoU and its bounds, size; :mod:`.per_detection`).
    """
    if noise is None:
        yield 0.0, "fitting the corner noise"
        noise = fit_reference_noise(dataset, reference, noise_raters, config)
    images = sorted((im.id for im in dataset.images if reference in im.raters), key=order_key)
    gt_labels = rater_labels(dataset, reference, images)
    on_images = set(images)
    preds = [p for p in prepare_predictions(predictions, dataset, "bbox") if p["image_id"] in on_images]
    sizes = [max(d["bbox"][2], d["bbox"][3]) for d in gt_labels]
    yield 0.15, "the expected IoU grid"
    grid = eps_grid(noise, config.max_size or max([64.0, *sizes]), config.grid_points, config.quad_nodes)
    eps = EpsInterpolator(grid)
    yield 0.3, "AP with IoU bounds"
    cats = sorted({d["category_id"] for d in gt_labels} | {d["category_id"] for d in preds})
    detections = {} if per_detection else None
    if not gt_labels or not preds:
        nan = float("nan")
        empty = {k: {"lower": 0.0, "ap": 0.0, "upper": 0.0} if gt_labels else {"lower": nan, "ap": nan, "upper": nan}
                 for k in ("50", "75", "95", "50:95")}
        table = {a: {k: dict(v) for k, v in empty.items()} for a in ("all", "small", "medium", "large")}
    else:
        table = bounded_ap_columns(gt_labels, preds, images, cats, eps)
        if per_detection:
            from .per_detection import detection_outcomes

            yield 0.7, "per-prediction outcomes"
            gt, dt, max_dets = coco_pair(dataset, images, gt_labels, preds, cats)
            detections = detection_outcomes(gt, dt, eps, images, cats, max_dets, [p["source_id"] for p in preds])
    yield 1.0, "done"
    return NoiseAwareResult(noise=noise, ap=table["all"], by_size={s: table[s] for s in ("small", "medium", "large")},
                            eps_grid=grid, reference=reference, n_predictions=len(preds),
                            n_reference=len(gt_labels), config=config, detections=detections)


def coco_pair(dataset: MultiRaterDataset, images: list, gt_labels: list[dict], preds: list[dict], cats: list):
    """pycocotools' ground truth (ids 1..n) and ``loadRes`` detections, and a ``maxDets`` that truncates nothing."""
    gt, on_images = COCO(), set(images)
    gt.dataset = {"images": [{"id": im.id, "width": im.width, "height": im.height}
                             for im in dataset.images if im.id in on_images],
                  "annotations": [{"id": n, "image_id": d["image_id"], "category_id": d["category_id"],
                                   "bbox": d["bbox"], "area": d["bbox"][2] * d["bbox"][3], "iscrowd": 0}
                                  for n, d in enumerate(gt_labels, start=1)],
                  "categories": [{"id": c} for c in cats]}
    counts: dict = {}
    for p in preds:
        counts[p["image_id"], p["category_id"]] = counts.get((p["image_id"], p["category_id"]), 0) + 1
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes([{k: p[k] for k in ("image_id", "category_id", "bbox", "score")} for p in preds])
    return gt, dt, max(counts.values()) + 1


def noise_aware_evaluation(dataset: MultiRaterDataset, predictions: Sequence[dict], reference: str,
                           noise: NoiseFit | None = None, config: NoiseAwareConfig = NoiseAwareConfig(),
                           noise_raters: Sequence[str] | None = None,
                           per_detection: bool = False) -> NoiseAwareResult:
    """:func:`evaluation_steps` run to the end (same parameters)."""
    return run_steps(evaluation_steps(dataset, predictions, reference, noise, config, noise_raters, per_detection))
