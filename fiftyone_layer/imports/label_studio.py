"""A Label Studio project export (JSON, the documented task format) as one label set per annotator.

Every annotation of a task is its annotator's labels for that task's image (rater =
``completed_by``: the user's email where the export gives it, else ``user <id>``). Results in
percent of the image are converted with the ``original_width`` / ``original_height`` Label Studio
stores on them: ``rectanglelabels`` -> boxes, ``polygonlabels`` -> closed polylines,
``brushlabels`` (RLE) -> boxes with a mask (:func:`kalos_core.masks.label_studio.decode_brush_rle`),
``keypointlabels`` -> keypoints. Per-region ``choices``,
``textarea``, ``rating``, ``number``, ``taxonomy`` and ``datetime`` results (those sharing a region's
``id``) become attributes of that region's label, named by their ``from_name``. A skipped (cancelled)
annotation leaves its annotator *not assigned* on that task; drafts are not labels; other region
types (ellipses, ...) and results on no region are read but left out: all counted in the result,
never dropped silently. Rotated rectangles, video regions, the JSON-MIN export and a region missing
a coordinate are refused, naming the task, annotation and region.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

import fiftyone as fo
import numpy as np

from kalos_core.masks.label_studio import decode_brush_rle

from .checks import load_json
from .errors import ImportRefused
from .exports import ExportImage, _label_list

MATCH_BY = ("file_name", "task")
KINDS = {"rectanglelabels": "detections", "brushlabels": "segmentations", "polygonlabels": "polylines",
         "keypointlabels": "keypoints"}
#: per-region results: attributes of the region whose id they share (value key of each)
PER_REGION = {"choices": "choices", "textarea": "text", "rating": "rating", "number": "number",
              "taxonomy": "taxonomy", "datetime": "datetime"}
#: video regions (Label Studio's video labelling): a different kind of data
VIDEO = ("videorectangle", "timelinelabels")
#: a label's own fields, never overwritten by a per-region result of the same name
_LABEL_OWN = {"id", "label", "bounding_box", "mask", "mask_path", "points", "closed", "filled", "confidence",
              "index", "tags", "attributes", "rater_id"}
#: keys of a JSON-MIN export's tasks (one flat row per task, no annotations list)
_MIN_KEYS = ("annotator", "annotation_id", "lead_time")


def _decode_rle(rle, width, height, where):
    try:
        return decode_brush_rle(rle, width, height)
    except ValueError as e:
        raise ImportRefused(f"a brush mask's rle: {e}", None, where,
                            fix="export the project again, or delete that region in Label Studio") from None


def _label(result, where):
    """(kind, FiftyOne label) of one Label Studio result, coordinates relative to the image."""
    kind = KINDS.get(result.get("type"))
    if kind is None:
        return None, None
    v = result.get("value", {})
    names = v.get(result["type"], [])
    name = names[0] if names else ""
    if v.get("rotation"):
        raise ImportRefused(f"a rotated rectangle ({v['rotation']} degrees): rotated boxes are not compared", None,
                            where, fix="straighten the box in Label Studio (rotation 0), or leave the task out")
    if kind == "detections":
        return kind, fo.Detection(label=name, bounding_box=[v["x"] / 100, v["y"] / 100, v["width"] / 100,
                                                            v["height"] / 100])
    if kind == "polylines":
        return kind, fo.Polyline(label=name, points=[[(x / 100, y / 100) for x, y in v["points"]]], closed=True)
    if kind == "keypoints":
        return kind, fo.Keypoint(label=name, points=[(v["x"] / 100, v["y"] / 100)])
    w, h = result["original_width"], result["original_height"]
    mask = _decode_rle(v["rle"], w, h, where)
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


def _tasks(path_or_tasks):
    """(tasks, source name) of an export path or an already-loaded task list, the format checked."""
    tasks, source = path_or_tasks, "the export"
    if isinstance(tasks, (str, os.PathLike)):
        tasks, source = load_json(str(tasks)), str(path_or_tasks)
    rows = tasks if isinstance(tasks, list) else []
    if rows and all(isinstance(t, dict) and "annotations" not in t for t in rows) \
            and any(k in t for t in rows for k in _MIN_KEYS):
        raise ImportRefused("is Label Studio's JSON-MIN export, which keeps one annotator per task and no "
                            "annotation ids", source, fix="export the project as JSON (not JSON-MIN)")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise ImportRefused("is not a Label Studio JSON export (a list of tasks with id, data, annotations)",
                            source, fix="export the project as JSON")
    return tasks, source


def _results(ann, where, source, left):
    """{region id: (kind, label)} of one annotation, each region's per-region results as its attributes;
    what is not read is counted in ``left``."""
    regions, attrs = {}, {}
    for k, result in enumerate(ann.get("result") or []):
        rtype = result.get("type") if isinstance(result, dict) else None
        at = f"{where}, region {result.get('id', k) if isinstance(result, dict) else k!r} ({rtype})"
        if rtype in VIDEO:
            raise ImportRefused("is a video region; video annotations are not read", source, at,
                                fix="import image projects (a video project's frames are a separate import)")
        if rtype in PER_REGION:
            value = (result.get("value") or {}).get(PER_REGION[rtype])
            value = value[0] if isinstance(value, list) and len(value) == 1 else value
            attrs.setdefault(result.get("id"), {})[result.get("from_name") or rtype] = value
            continue
        if rtype not in KINDS:
            left[f"{rtype} results"] = left.get(f"{rtype} results", 0) + 1
            continue
        try:
            kind, label = _label(result, at)
        except (KeyError, TypeError, IndexError) as e:
            missing = f"lacks its {e.args[0]!r}" if isinstance(e, KeyError) else f"cannot be read ({e})"
            raise ImportRefused(f"{missing}: {str(result.get('value'))[:120]}", source, at,
                                fix="export the project again, or delete that region in Label Studio") from None
        except ImportRefused as e:
            raise ImportRefused(e.problem, source, e.where, e.fix) from None
        regions[result.get("id", k)] = (kind, label, result)
    for rid, values in attrs.items():
        if rid in regions and regions[rid][1] is not None:
            for name, value in values.items():
                if name in _LABEL_OWN:
                    raise ImportRefused(f"a per-region result named {name!r} would overwrite the label's own "
                                        f"{name!r}", source, f"{where}, region {rid!r}",
                                        fix="rename that control (its name) in the labelling config")
                regions[rid][1][name] = value
        else:
            left["results on no region"] = left.get("results on no region", 0) + len(values)
    return regions


def read_label_studio(path_or_tasks, match_by="file_name", label_key=None, rater_names=None,
                      predictions=False) -> tuple[dict, dict]:
    """(``{rater: {key: ExportImage}}``, counts of what was read and left out: ``drafts``,
    ``cancelled``, ``<type> results`` of region types not read, ``results on no region``).

    ``rater_names`` maps ``completed_by`` values (``user 3``, an email) to names; ``predictions``: add
    each model version's predictions as the rater ``model <version>``."""
    if match_by not in MATCH_BY:
        raise ImportRefused(f"match_by must be one of {MATCH_BY} for a Label Studio export, got {match_by!r}")
    tasks, source = _tasks(path_or_tasks)
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
                raise ImportRefused(f"{rater} annotated the image {key!r} twice (two annotations by one user on a "
                                    "task, or two tasks of the same image)", source, where,
                                    fix="keep one annotation per user and task in Label Studio, or match by task")
            by_kind, size = {}, (None, None)
            for kind, label, result in _results(ann, where, source, left).values():
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
