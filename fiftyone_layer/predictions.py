"""A model's predictions field as COCO results (``image_id`` = sample id, ``id`` = label id),
in the geometry convention of the raters' data set that :func:`.adapter.read_dataset` built."""

from __future__ import annotations

import fiftyone as fo

from kalos_core.data import MultiRaterDataset
from kalos_core.io.predictions import score_problem

from .adapter import _geometry, _read_mask, label_fields, what_field
from .errors import SetupError

#: what a predictions field may hold, per task
PREDICTION_TYPES = {"bbox": (fo.Detections,), "segm": (fo.Detections, fo.Polylines)}


def prediction_fields(collection, task: str = "bbox") -> dict[str, type]:
    """Label fields that can hold a model's predictions for ``task``."""
    return {k: v for k, v in label_fields(collection).items() if v in PREDICTION_TYPES[task]}


def _kinds(task: str) -> str:
    return " or ".join(c.__name__ for c in PREDICTION_TYPES[task])


def scored_fields(collection, task: str = "bbox", exclude=()) -> list[str]:
    """The ``task`` prediction fields but ``exclude`` whose labels carry a confidence somewhere
    (one aggregation)."""
    fields = {f: "detections" if cls is fo.Detections else "polylines"
              for f, cls in prediction_fields(collection, task).items() if f not in exclude}
    if not fields:
        return []
    counts = collection.aggregate([fo.Count(f"{f}.{name}.confidence") for f, name in fields.items()])
    return [f for f, n in zip(fields, counts) if n]


def missing_predictions(collection, task: str = "bbox", exclude=()) -> str | None:
    """What to do when no field but ``exclude`` (the raters') holds a model's predictions for
    ``task``, labels with a confidence; None when one does."""
    if scored_fields(collection, task, exclude):
        return None
    return (f"No predictions field: no {_kinds(task)} field of this dataset besides the raters' has labels "
            f"with a confidence. Add the "
            f"model's predictions as a {_kinds(task)} field with a confidence in [0, 1] on every label "
            "(e.g. with apply_model or add_samples), then open this form again.")


def check_predictions_field(collection, field, task: str = "bbox", exclude=(), param: str = "predictions_field"):
    """:class:`SetupError` on ``param`` unless ``field`` is a ``task`` predictions field other than
    those in ``exclude`` (the raters'); the message says what the field is and lists those that qualify."""
    qualify = [f for f in prediction_fields(collection, task) if f not in exclude]
    if field in qualify:
        return
    if not isinstance(field, str) or not field:
        what = f"{field!r} is not a field name"
    elif field in exclude:
        what = f"{field!r} is a rater field"
    else:
        what = what_field(collection, field)
    fix = (f"choose a {_kinds(task)} field with confidences: {', '.join(qualify)}" if qualify
           else missing_predictions(collection, task, exclude))
    raise SetupError(f"predictions: {what}; {fix}", param)


def read_predictions(collection, field: str, data: MultiRaterDataset, task: str = "bbox",
                     param: str = "predictions_field") -> tuple[list[dict], int]:
    """``(COCO results, number of predictions of classes no rater used)`` of ``field``.

    Scores come from ``confidence`` (required: AP ranks by it). Geometry is scaled as the raters'
    (pixels when ``data.meta["pixel_geometry"]``); ``segm`` reads Polylines as polygons and
    Detections' instance masks as RLE. Classes no rater used are left out (they have no ground
    truth, so COCOeval would ignore them) and counted."""
    check_predictions_field(collection, field, task, param=param)
    cls = prediction_fields(collection, task)[field]
    list_name = "detections" if cls is fo.Detections else "polylines"
    pixel = bool(data.meta.get("pixel_geometry"))
    if task == "segm" and not pixel:
        raise SetupError("segm predictions need image sizes: run dataset.compute_metadata()", param)
    kind = "box" if task == "bbox" else ("rle" if cls is fo.Detections else "polygon")
    geom_attr = {"box": "bounding_box", "rle": "mask", "polygon": "points"}[kind]
    ids = collection.values("id")
    sizes = list(zip(*collection.values(["metadata.width", "metadata.height"]))) or []
    lids, labels, scores, geoms = collection.values(
        [f"{field}.{list_name}.{a}" for a in ("id", "label", "confidence", geom_attr)])
    boxes = collection.values(f"{field}.{list_name}.bounding_box") if kind == "rle" else None
    by_name = {name: cid for cid, name in data.categories.items()}
    out, unknown, unscored = [], 0, []
    for k, sid in enumerate(ids):
        w, h = sizes[k] if pixel else (1.0, 1.0)
        for j, (lid, lab, score, g) in enumerate(zip(lids[k] or [], labels[k] or [], scores[k] or [],
                                                     geoms[k] or [])):
            problem = score_problem(score)
            if problem:
                unscored.append((lid, problem))
                continue
            if lab not in by_name:
                unknown += 1
                continue
            if g is None:
                continue
            d = {"id": lid, "image_id": sid, "category_id": by_name[lab], "score": float(score)}
            if kind == "box":
                d["bbox"] = list(_geometry("box", g, w, h))
            elif kind == "rle":
                rle, err = _read_mask(g, None, boxes[k][j], int(w), int(h))
                if err:
                    raise SetupError(f"prediction {lid} of {field!r} {err}", param)
                d["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode("ascii")}
            else:
                d["segmentation"] = _geometry("polygon", g, w, h)
            out.append(d)
    if unscored:
        lid, problem = unscored[0]
        raise SetupError(f"{len(unscored)} prediction(s) of {field!r} have no confidence in [0, 1] (e.g. label "
                         f"{lid}: {problem}): AP ranks predictions by their confidence; fill in or rescale "
                         "the confidence of those labels", param)
    return out, unknown
