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

from ..data import Annotation, MultiRaterDataset
from ..io.predictions import check_predictions

#: geometry kind -> the key of a prediction's geometry
GEOMETRY_KEYS = {"box": "bbox", "polygon": "segmentation", "rle": "segmentation", "keypoints": "keypoints"}


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
        counts as 1; any other must lie in [0, 1]).
    images : ids of the images the model was run on (default: all).
    """
    if any(name in im.raters for im in dataset.images):
        raise ValueError(f"rater name {name!r} is taken; name the model differently")
    run_on = None if images is None else set(images)
    predictions = list(predictions)
    key = GEOMETRY_KEYS.get(dataset.kind)
    if key is None:
        raise ValueError(f"model predictions are not supported for {dataset.kind!r} geometry")
    check_predictions(predictions, (im.id for im in dataset.images), key, score_required=False)
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


def _finite_mean(values) -> float | None:
    v = [float(x) for x in values if x is not None and np.isfinite(x)]
    return float(np.mean(v)) if v else None


def compare_model(model: str, collaboration: Mapping, vitality: Mapping | None, models: Iterable[str]) -> dict:
    """Does ``model`` disagree with the humans more than they disagree with each other?

    From the pairwise α (``collaboration``, ``{rater: {rater: α}}``): the model's α with each
    human, their mean, the mean α over the pairs of humans, and the model's vitality. The
    verdict compares the two means: *more* when the model–human mean is below the
    human–human mean, *less* when above (a gap under 0.01 reads "as much as")."""
    machines = set(models)
    humans = sorted(r for r in collaboration if r not in machines)
    pair = lambda a, b: (collaboration.get(a) or {}).get(b, (collaboration.get(b) or {}).get(a))
    with_humans = {h: pair(model, h) for h in humans}
    mh = _finite_mean(with_humans.values())
    hh = _finite_mean(pair(a, b) for k, a in enumerate(humans) for b in humans[k + 1:])
    vit = None if vitality is None else vitality.get(model)
    if mh is None or hh is None:
        verdict, more = (f"{model} (model): no model–human and human–human pairwise α to compare"
                         " (needs the collaboration diagnostic and two humans)"), None
    else:
        more = mh < hh - 0.01
        how = ("more than" if more else "less than" if mh > hh + 0.01 else "about as much as")
        verdict = (f"{model} (model) disagrees with the humans {how} they disagree with each other: "
                   f"mean model–human α {mh:.3f} vs mean human–human α {hh:.3f}"
                   + (f"; vitality {vit:+.3f}" if vit is not None and np.isfinite(vit) else ""))
    return {"alpha_with_humans": with_humans, "mean_model_human": mh, "mean_human_human": hh,
            "vitality": vit, "disagrees_more": more, "verdict": verdict}


def compare_models(result) -> dict:
    """:func:`compare_model` of every model rater of an :class:`AgreementResult`, per scope:
    ``{"per_image": {model: ...}, "global": {model: ...}}`` (empty without models)."""
    models = list(getattr(result, "models", None) or [])
    if not models:
        return {}
    scopes = {"per_image": ("collaboration", "vitality"), "global": ("collaboration_global", "vitality_global")}
    return {scope: {m: compare_model(m, getattr(result, c, None) or {}, getattr(result, v, None), models)
                    for m in models} for scope, (c, v) in scopes.items()}
