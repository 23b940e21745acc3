"""Noise-aware evaluation (Murrugarra-Llerena et al.): a model's COCO AP with lower and upper
bounds from the corner noise of the reference labels.

1. fit the corner noise from two label sets on the same images (:mod:`.corner_noise`);
2. tabulate ε̄(W, H) = 1 − E[IoU] (:mod:`.expected_iou`);
3. evaluate the predictions against the reference rater with IoU − ε̄, IoU, IoU + ε̄ (:mod:`.bounds`).

:func:`evaluation_steps` yields ``(fraction, message)`` progress steps and returns the result;
:func:`noise_aware_evaluation` runs it.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import numpy as np

from ..data import MultiRaterDataset, order_key
from ..dataset_boxes import BoxColumns, box_columns, reference_boxes
from ..progress import run_steps
from .box_eval import bounded_ap_arrays, coco_boxes
from .corner_noise import fit_corner_noise
from .expected_iou import EpsInterpolator, eps_grid
from .inputs import prediction_columns
from .types import NoiseAwareConfig, NoiseAwareResult, NoiseFit


def fit_reference_noise(dataset: MultiRaterDataset, reference: str, others: Sequence[str] | None = None,
                        config: NoiseAwareConfig = NoiseAwareConfig(), columns: BoxColumns | None = None) -> NoiseFit:
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
    return fit_corner_noise(dataset, reference, others, config.iou_min, config.fence_k, config.share, columns)


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
    if dataset.kind != "box":
        raise ValueError("the corner-noise model needs boxes (task bbox)")
    columns = box_columns(dataset)
    if noise is None:
        yield 0.0, "fitting the corner noise"
        noise = fit_reference_noise(dataset, reference, noise_raters, config, columns)
    images = sorted((im.id for im in dataset.images if reference in im.raters), key=order_key)
    gt_xywh, gt_img, gt_cat, _ = reference_boxes(dataset, reference, images, columns)
    dt_xywh, dt_img, dt_cat, scores = prediction_columns(predictions, dataset, images)
    yield 0.15, "the expected IoU grid"
    largest = float(gt_xywh[:, 2:].max()) if len(gt_xywh) else 0.0
    grid = eps_grid(noise, config.max_size or max(64.0, largest), config.grid_points, config.quad_nodes)
    eps = EpsInterpolator(grid)
    yield 0.3, "AP with IoU bounds"
    cats = np.unique(np.concatenate([gt_cat, dt_cat]))
    detections = {} if per_detection else None
    if not len(gt_xywh) or not len(dt_xywh):
        nan = float("nan")
        empty = {k: {"lower": 0.0, "ap": 0.0, "upper": 0.0} if len(gt_xywh) else {"lower": nan, "ap": nan, "upper": nan}
                 for k in ("50", "75", "95", "50:95")}
        table = {a: {k: dict(v) for k, v in empty.items()} for a in ("all", "small", "medium", "large")}
    else:
        table = bounded_ap_arrays(coco_boxes(gt_img, gt_cat, gt_xywh, images, cats),
                                  coco_boxes(dt_img, dt_cat, dt_xywh, images, cats), scores, len(cats), eps)
        if per_detection:
            from .per_detection import prediction_outcomes

            yield 0.7, "per-prediction outcomes"
            detections = prediction_outcomes(dataset, predictions, reference, images, cats.tolist(), eps)
    yield 1.0, "done"
    return NoiseAwareResult(noise=noise, ap=table["all"], by_size={s: table[s] for s in ("small", "medium", "large")},
                            eps_grid=grid, reference=reference, n_predictions=len(dt_xywh),
                            n_reference=len(gt_xywh), config=config, detections=detections)


def noise_aware_evaluation(dataset: MultiRaterDataset, predictions: Sequence[dict], reference: str,
                           noise: NoiseFit | None = None, config: NoiseAwareConfig = NoiseAwareConfig(),
                           noise_raters: Sequence[str] | None = None,
                           per_detection: bool = False) -> NoiseAwareResult:
    """:func:`evaluation_steps` run to the end (same parameters)."""
    return run_steps(evaluation_steps(dataset, predictions, reference, noise, config, noise_raters, per_detection))
