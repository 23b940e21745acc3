"""A Label Studio project export (JSON, the documented task format) as one label set per annotator.

Every annotation of a task is its annotator's labels for that task's image (rater =
``completed_by``: the user's email where the export gives it, else ``user <id>``). Results in
percent of the image are converted with the ``original_width`` / ``original_height`` Label Studio
stores on them: ``rectanglelabels`` -> boxes, ``polygonlabels`` -> closed polylines,
``brushlabels`` (RLE) -> boxes with a mask, decoded by Label Studio's own converter package
(``label-studio-converter``), ``keypointlabels`` -> keypoints. A skipped (cancelled) annotation
leaves its annotator *not assigned* on that task; drafts are not labels and are left out (counted
in the result); predictions join as one rater per model version when asked.
"""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qs, urlparse

import fiftyone as fo
import numpy as np

from .exports import ExportImage, _label_list

MATCH_BY = ("file_name", "task")
KINDS = {"rectanglelabels": "detections", "brushlabels": "segmentations", "polygonlabels": "polylines",
         "keypointlabels": "keypoints"}


def _decode_rle(rle, width, height):
    try:
        from label_studio_converter.brush import decode_rle
    except ImportError:
        try:
            from label_studio_sdk.converter.brush import decode_rle
        except ImportError:
            raise ValueError("brush masks need Label Studio's converter: pip install label-studio-converter") \
                from None
    return decode_rle(rle).reshape(height, width, 4)[:, :, 3] > 0


def _label(result, where):
    """(kind, FiftyOne label) of one Label Studio result, coordinates relative to the image."""
    kind = KINDS.get(result.get("type"))
    if kind is None:
        return None, None
    v = result.get("value", {})
    names = v.get(result["type"], [])
    name = names[0] if names else ""
    if v.get("rotation"):
        raise ValueError(f"{where}: a rotated rectangle ({v['rotation']} degrees); rotated boxes are not supported")
    if kind == "detections":
        return kind, fo.Detection(label=name, bounding_box=[v["x"] / 100, v["y"] / 100, v["width"] / 100,
                                                            v["height"] / 100])
    if kind == "polylines":
        return kind, fo.Polyline(label=name, points=[[(x / 100, y / 100) for x, y in v["points"]]], closed=True)
    if kind == "keypoints":
        return kind, fo.Keypoint(label=name, points=[(v["x"] / 100, v["y"] / 100)])
    w, h = result["original_width"], result["original_height"]
    mask = _decode_rle(v["rle"], w, h)
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return kind, None
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    return kind, fo.Detection(label=name, bounding_box=[x0 / w, y0 / h, (x1 - x0) / w, (y1 - y0) / h],
                              mask=mask[y0:y1, x0:x1])


def _rater(annotation) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or f"user {who.get('id')}")
    return f"user {who}"


def _key(task, match_by):
    if match_by == "task":
        return str(task["id"])
    value = next((v for v in task.get("data", {}).values() if isinstance(v, str)), "")
    url = urlparse(value)
    path = parse_qs(url.query).get("d", [url.path])[0]   # local files: /data/local-files/?d=folder/name.jpg
    return os.path.basename(path) or str(task["id"])


def read_label_studio(path_or_tasks, match_by="file_name", label_key=None, rater_names=None,
                      predictions=False) -> tuple[dict, dict]:
    """(``{rater: {key: ExportImage}}``, counts of what was left out: ``drafts``, ``cancelled``).

    ``rater_names`` maps ``completed_by`` values (``user 3``, an email) to names; ``predictions``: add
    each model version's predictions as the rater ``model <version>``."""
    if match_by not in MATCH_BY:
        raise ValueError(f"match_by must be one of {MATCH_BY} for a Label Studio export, got {match_by!r}")
    tasks = path_or_tasks
    if isinstance(tasks, (str, os.PathLike)):
        with open(tasks, encoding="utf-8") as f:
            tasks = json.load(f)
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise ValueError(f"{path_or_tasks if isinstance(path_or_tasks, str) else 'the export'} is not a Label Studio "
                         "JSON export (a list of tasks with id, data, annotations); export the project as JSON")
    names = rater_names or {}
    out: dict = {}
    left = {"drafts": 0, "cancelled": 0}
    for task in tasks:
        key = _key(task, match_by)
        left["drafts"] += len(task.get("drafts") or [])
        entries = [(names.get(_rater(a), _rater(a)), a) for a in task.get("annotations") or []]
        if predictions:
            entries += [(f"model {p.get('model_version') or 'unnamed'}", p) for p in task.get("predictions") or []]
        for rater, ann in entries:
            where = f"task {task['id']} ({key}), annotation {ann.get('id')} by {rater}"
            if ann.get("was_cancelled"):
                left["cancelled"] += 1
                continue
            images = out.setdefault(rater, {})
            if key in images:
                raise ValueError(f"{where}: {rater} annotated the image {key!r} twice (tasks of the same image, or "
                                 "two annotations by one user); match by task, or keep one annotation")
            by_kind, size = {}, (None, None)
            for result in ann.get("result") or []:
                kind, label = _label(result, where)
                if kind:
                    size = (result.get("original_width"), result.get("original_height"))
                    by_kind.setdefault(kind, []).append(label)
            lists = {k: _wrap(k, [lab for lab in labs if lab is not None]) for k, labs in by_kind.items()}
            images[key] = ExportImage(key, None, *size, _label_list(lists, where, label_key))
    return out, left


def _wrap(kind, labels):
    if kind == "polylines":
        return fo.Polylines(polylines=labels)
    if kind == "keypoints":
        return fo.Keypoints(keypoints=labels)
    return fo.Detections(detections=labels)
