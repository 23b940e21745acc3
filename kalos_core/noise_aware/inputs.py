"""The noise-aware evaluation's predictions as columns, in the canonical order of
:func:`kalos_core.io.predictions.prepare_predictions` (image id, then annotation id), the order
``loadRes`` takes them in; the data set's boxes come from :mod:`kalos_core.dataset_boxes` in the
same order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data import MultiRaterDataset
from ..dataset_boxes import id_order
from ..io.predictions import check_predictions


def prediction_columns(predictions: Sequence[dict], dataset: MultiRaterDataset, images: list) -> tuple:
    """``(xywh, image position in images, class, score)`` of the predictions on ``images``, checked
    (:func:`~kalos_core.io.predictions.check_predictions`) and in ``prepare_predictions``' order."""
    check_predictions(predictions, (im.id for im in dataset.images), "bbox")
    at = {im_id: n for n, im_id in enumerate(images)}
    order = id_order([p["image_id"] for p in predictions], [p.get("id", n) for n, p in enumerate(predictions)])
    where = np.array([at.get(predictions[k]["image_id"], -1) for k in order], dtype=np.int64).reshape(-1)
    order = order[where >= 0]
    picked = [predictions[k] for k in order]
    xywh = np.array([p["bbox"] for p in picked], dtype=float).reshape(-1, 4)
    return (xywh, where[where >= 0], np.array([int(p["category_id"]) for p in picked], dtype=np.int64),
            np.array([float(p["score"]) for p in picked], dtype=float))
