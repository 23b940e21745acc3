"""A model's predictions against every rater, on the same images, placed against the interval."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import MultiRaterDataset
from ..io.predictions import prepare_predictions
from .cocoeval import evaluate_direction, label_columns, side_labels
from .stats import interval_stats, place
from .summaries import Side, average_summaries, direction_summary, full_set_ap, nanmean
from .types import BootstrapSummary, ConvergenceConfig, ModelResult


def evaluate_model(dataset: MultiRaterDataset, raters: list[str], predictions: Sequence[dict],
                   config: ConvergenceConfig, index_of: dict, masks: np.ndarray | None,
                   interval: BootstrapSummary | None) -> ModelResult:
    """The model's mAP with each rater as ground truth (on that rater's images), the rater average,
    the same on the bootstrap subsets, and ``below`` / ``inside`` / ``above`` for both intervals."""
    preds = prepare_predictions(predictions, dataset, config.task)
    per_rater, sides, columns = {}, [], label_columns(dataset, config.task)
    for r in raters:
        shared = [im.id for im in dataset.images if r in im.raters]
        keep = set(shared)
        side = Side(evaluate_direction(dataset, side_labels(dataset, r, shared, columns),
                                       [p for p in preds if p["image_id"] in keep], shared, config.task), index_of)
        per_rater[r] = direction_summary(full_set_ap(side.table), side.table.cat_ids, dataset.categories)
        sides.append(side)
    averaged = average_summaries(list(per_rater.values()))
    boot = None
    if masks is not None:
        values = nanmean(nanmean(np.stack([s.per_threshold(masks) for s in sides]), axis=0), axis=1)
        boot = interval_stats(values, config.confidence)

    def where(value: float) -> dict[str, str]:
        if interval is None:
            return {"ci_normal": "unknown", "ci_percentile": "unknown"}
        return {"ci_normal": place(value, interval.map.ci_normal),
                "ci_percentile": place(value, interval.map.ci_percentile)}

    return ModelResult(per_rater, averaged, boot, where(averaged.map),
                       {r: where(s.map) for r, s in per_rater.items()}, len(preds))
