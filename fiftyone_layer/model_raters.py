"""Models as raters in an agreement run: prediction fields next to the rater fields.

A model field holds the same label type as the rater fields (Detections / Polylines /
Keypoints) with a ``confidence`` per label (missing = 1). Its labels whose confidence reaches
``score_threshold`` join the run as one more rater named after the field, flagged as a model
(:func:`kalos_core.agreement.model_rater.add_model_rater`): the model is assigned to every sample where
its field exists (an empty list is the model saying "nothing here"). The run stores
``model_fields``, ``models`` and ``score_threshold`` in its config, and its results carry
``models`` and ``model_comparison`` (mean model–human α vs mean human–human α). The model's
labels get ``<run_key>_unit`` / ``<run_key>_status`` like the raters'.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kalos_core.data import MultiRaterDataset
from kalos_core.agreement.model_rater import add_model_rater

from .adapter import RaterSource, _geometry, _read_mask, label_fields, what_field
from .errors import SetupError

PARAM = "model_fields"


def check_model_fields(collection, source: RaterSource, model_fields, score_threshold) -> list[str]:
    """The model fields, checked against the rater source; :class:`SetupError` names the fault."""
    fields = list(model_fields or [])
    if not fields:
        return []
    if source.kind == "cuboids":
        raise SetupError("models as raters are not supported for 3D detections (cuboids) yet", PARAM)
    try:
        t = float(score_threshold)
    except (TypeError, ValueError):
        t = float("nan")
    if isinstance(score_threshold, bool) or not 0.0 <= t <= 1.0:
        raise SetupError(f"score_threshold must be a number within [0, 1], got {score_threshold!r}",
                         "score_threshold")
    available = label_fields(collection)
    humans = set(source.raters.values())
    qualify = [f for f, cls in available.items() if cls is source.label_cls and f not in source.fields]
    fix = (f"; choose among the {source.label_cls.__name__} fields that are not raters: {', '.join(qualify)}"
           if qualify else f"; this dataset has no {source.label_cls.__name__} field besides the raters': add the "
           f"model's predictions as a {source.label_cls.__name__} field with a confidence on every label")
    for f in fields:
        if f not in available:
            what = what_field(collection, f) if isinstance(f, str) and f else f"field {f!r} does not exist"
            raise SetupError(f"model {what}, not {source.label_cls.__name__}{fix}", PARAM)
        if f in source.fields:
            raise SetupError(f"{f!r} is a rater field; a field is either a rater or a model{fix}", PARAM)
        if available[f] is not source.label_cls:
            raise SetupError(f"model field {f!r} holds {available[f].__name__}, the raters "
                             f"{source.label_cls.__name__}{fix}", PARAM)
        if f in humans:
            raise SetupError(f"model field {f!r} has the name of a rater; rename the field", PARAM)
    if len(set(fields)) < len(fields):
        raise SetupError("a model field is chosen twice", PARAM)
    return fields


def _score(value) -> float:
    if value is None:
        return 1.0
    if isinstance(value, (list, tuple)):  # keypoints: one confidence per point
        seen = [float(v) for v in value if v is not None and math.isfinite(float(v))]
        return sum(seen) / len(seen) if seen else 1.0
    return float(value) if math.isfinite(float(value)) else 1.0


def model_predictions(collection, source: RaterSource, field: str, data: MultiRaterDataset,
                      categories: dict[str, int]) -> tuple[list[dict], list]:
    """``(COCO results of field, ids of the samples the model was run on)`` in the engine's
    geometry of ``data`` (pixels when ``data.meta["pixel_geometry"]``). Classes no rater used get
    new ids in ``categories`` (name -> id): a model's class of its own is a disagreement."""
    kind = data.kind
    list_name = source.list_name
    geom_attr = {"box": "bounding_box", "polygon": "points", "keypoints": "points", "rle": "mask"}[kind]
    ids = collection.values("id")
    pixel = bool(data.meta.get("pixel_geometry"))
    sizes = list(zip(*collection.values(["metadata.width", "metadata.height"]))) if pixel else None
    lids, labels, scores, geoms = collection.values(
        [f"{field}.{list_name}.{a}" for a in ("id", "label", "confidence", geom_attr)])
    boxes = collection.values(f"{field}.{list_name}.bounding_box") if kind == "rle" else None
    out, run_on = [], []
    for k, sid in enumerate(ids):
        if lids[k] is None:
            continue
        run_on.append(sid)
        w, h = sizes[k] if pixel else (1.0, 1.0)
        for j, (lid, lab, score, g) in enumerate(zip(lids[k], labels[k], scores[k], geoms[k])):
            if lab is None or (g is None and kind != "rle"):
                continue
            if lab not in categories:
                categories[lab] = max(categories.values(), default=0) + 1
            d = {"id": lid, "image_id": sid, "category_id": categories[lab], "score": _score(score)}
            if kind == "box":
                d["bbox"] = list(_geometry("box", g, w, h))
            elif kind == "polygon":
                d["segmentation"] = _geometry("polygon", g, w, h)
            elif kind == "rle":
                d["segmentation"], err = _read_mask(g, None, boxes[k][j], int(w), int(h))
                if err:
                    raise SetupError(f"sample {sid}, model field {field}, label {lid}: {err}", PARAM)
            else:
                d["keypoints"] = _geometry("keypoints", g, w, h)
            out.append(d)
    return out, run_on


def add_models(collection, source: RaterSource, data: MultiRaterDataset, model_fields,
               score_threshold: float = 0.5) -> MultiRaterDataset:
    """``data`` with each model field as one more rater (named after the field), flagged as a model."""
    if not model_fields:
        return data
    categories = {name: cid for cid, name in data.categories.items()}
    for f in model_fields:
        preds, run_on = model_predictions(collection, source, f, data, categories)
        data = add_model_rater(data, preds, name=f, score_threshold=float(score_threshold), images=run_on)
    return replace(data, categories={cid: name for name, cid in categories.items()})


def write_source(source: RaterSource, model_fields) -> RaterSource:
    """The source whose labels a run writes to: the rater fields and the model fields."""
    if not model_fields:
        return source
    return replace(source, fields=[*source.fields, *model_fields],
                   raters={**source.raters, **{f: f for f in model_fields}})


def run_config(model_fields, score_threshold) -> dict:
    """What a run stores of its models (``models`` are the model raters' names)."""
    fields = list(model_fields or [])
    return {"model_fields": fields, "models": fields, "score_threshold": float(score_threshold)}
