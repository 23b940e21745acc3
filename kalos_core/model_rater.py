"""A model as one more rater: its predictions join the data set as a rater flagged as a model.

``add_model_rater(dataset, predictions, name="model", score_threshold=0.5)`` returns a new
data set in which the model is an assigned rater of every image it was run on (an image
without a kept prediction is the model saying "nothing here"), with the detections whose
score reaches the threshold. ``dataset.meta["models"]`` lists the model raters;
:func:`kalos_core.agreement.compute_agreement` copies it to ``AgreementResult.models``, so
reports and panels can mark them. The model's pairwise α with each human
(``collaboration[model][rater]``) answers: does it disagree with the humans more than they
disagree with each other?
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np

from .data import Annotation, MultiRaterDataset


def _polygon_bbox(rings) -> tuple:
    xy = np.concatenate([np.asarray(r, float).reshape(-1, 2) for r in rings])
    lo, hi = xy.min(0), xy.max(0)
    return (float(lo[0]), float(lo[1]), float(hi[0] - lo[0]), float(hi[1] - lo[1]))


def _geometry(pred: Mapping, kind: str):
    if kind == "box":
        return tuple(float(v) for v in pred["bbox"]), tuple(float(v) for v in pred["bbox"])
    if kind in ("polygon", "rle"):
        seg = pred["segmentation"]
        bbox = pred.get("bbox")
        if bbox is None and isinstance(seg, list):
            bbox = _polygon_bbox(seg)
        return seg, None if bbox is None else tuple(float(v) for v in bbox)
    if kind == "keypoints":
        return [float(v) for v in pred["keypoints"]], None
    raise ValueError(f"model predictions are not supported for {kind!r} geometry")


def add_model_rater(dataset: MultiRaterDataset, predictions: Iterable[Mapping[str, Any]], name: str = "model",
                    score_threshold: float = 0.5, images: Iterable[Any] | None = None) -> MultiRaterDataset:
    """The data set with the model's kept predictions as rater ``name``.

    Parameters
    ----------
    predictions : COCO detection results: ``image_id``, ``category_id``, ``score`` and the
        geometry of the data set's kind (``bbox``, ``segmentation`` or ``keypoints``).
    score_threshold : detections with ``score >= score_threshold`` are kept (a missing score
        counts as 1).
    images : ids of the images the model was run on (default: all).
    """
    if any(name in im.raters for im in dataset.images):
        raise ValueError(f"rater name {name!r} is taken; name the model differently")
    run_on = None if images is None else set(images)
    by_image: dict[Any, list[Annotation]] = {}
    for k, pred in enumerate(predictions):
        score = float(pred.get("score", 1.0))
        if score < score_threshold:
            continue
        geometry, bbox = _geometry(pred, dataset.kind)
        by_image.setdefault(pred["image_id"], []).append(
            Annotation(pred.get("id", f"{name}:{k}"), name, int(pred["category_id"]), geometry, bbox, score))
    out = []
    for im in dataset.images:
        if run_on is not None and im.id not in run_on:
            out.append(im)
            continue
        row_rater = None if im.row_rater is None else {**im.row_rater, name: name}
        rater_classes = None if im.rater_classes is None else {**im.rater_classes}
        out.append(replace(im, raters=(*im.raters, name), annotations=[*im.annotations, *by_image.get(im.id, [])],
                           row_rater=row_rater, rater_classes=rater_classes))
    meta = {**dataset.meta, "models": [*dataset.meta.get("models", []), name]}
    return replace(dataset, images=out, meta=meta)


def rater_as_predictions(dataset: MultiRaterDataset, rater: str, score: float = 1.0) -> list[dict]:
    """A rater's labels as COCO detection results (for checks: a model equal to a rater)."""
    key = {"box": "bbox", "polygon": "segmentation", "rle": "segmentation", "keypoints": "keypoints"}[dataset.kind]
    out = []
    for im in dataset.images:
        for a in im.annotations:
            if a.rater == rater:
                out.append({"image_id": im.id, "category_id": a.category, "score": score,
                            **({"bbox": a.bbox} if a.bbox else {}), key: a.geometry})
    return out
