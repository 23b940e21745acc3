"""Multi-rater COCO json: ``images[].rater_list`` and ``annotations[].rater_id``.

``rater_list`` is a list of rater ids, or a dict ``{rater: [session, ...]}``
for repeated sessions (annotations then carry ``session_id``; each session
becomes its own row ``"rater (S<session>)"``). An optional
``images[].rater_categories = {rater: [category ids]}`` restricts raters to
some classes (open world).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..data import Annotation, ImageRecord, MultiRaterDataset, session_row
from .validation import InvalidInputError, Problem

TASK_KINDS = {"bbox": "box", "segm": "polygon", "keypoints": "keypoints"}


def _finite(values) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def _bbox_problem(bbox) -> str | None:
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return f"bbox must be [x, y, w, h], got {bbox!r}"
    if not _finite(bbox):
        return f"bbox has a non-finite value: {bbox!r}"
    if bbox[2] <= 0 or bbox[3] <= 0:
        return f"bbox has non-positive size: {bbox!r}"
    return None


def _segm_problem(segm) -> str | None:
    if isinstance(segm, dict):
        if "counts" not in segm or "size" not in segm:
            return "RLE segmentation needs 'counts' and 'size'"
        return None
    if not isinstance(segm, list) or not segm:
        return "segmentation is missing or empty"
    for ring in segm:
        if not isinstance(ring, list) or len(ring) % 2 or len(ring) < 6:
            return f"polygon ring with fewer than 3 points ({len(ring) // 2 if isinstance(ring, list) else '?'} given)"
        if not _finite(ring):
            return "polygon has a non-finite coordinate"
    return None


def _polygon_bbox(rings) -> tuple:
    xs = [v for r in rings for v in r[0::2]]
    ys = [v for r in rings for v in r[1::2]]
    return (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))


def _rows_of(image: dict) -> tuple[tuple[str, ...], dict[str, str] | None]:
    raw = image["rater_list"]
    if isinstance(raw, dict):
        rows, base = [], {}
        for rater, sessions in raw.items():
            for s in sessions:
                rows.append(session_row(str(rater), s))
                base[rows[-1]] = str(rater)
        return tuple(rows), base
    return tuple(dict.fromkeys(str(r) for r in raw)), None  # a rater listed twice is one row


def load_coco(source: str | Path | dict, task: str = "bbox", skip_invalid: bool = False) -> MultiRaterDataset:
    """Read a multi-rater COCO file (or dict) into a :class:`MultiRaterDataset`.

    Parameters
    ----------
    source : path to the json, or the parsed dict.
    task : ``bbox`` (boxes), ``segm`` (polygons; RLE masks if any segmentation
        is RLE) or ``keypoints``.
    skip_invalid : drop invalid annotations (and images without ``rater_list``)
        instead of raising :class:`InvalidInputError`; the dropped items are
        listed in ``dataset.skipped``.
    """
    if task not in TASK_KINDS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASK_KINDS)}")
    name = "input"
    if not isinstance(source, dict):
        name = str(source)
        with open(source) as f:
            source = json.load(f)
    for key in ("images", "annotations"):
        if key not in source:
            raise InvalidInputError([Problem(f"the file has no '{key}' list")], name)
    categories = {int(c["id"]): str(c.get("name", c["id"])) for c in source.get("categories", [])}
    problems: list[Problem] = []
    images: dict[Any, ImageRecord] = {}
    bad_images = set()
    for im in source["images"]:
        if "rater_list" not in im:
            problems.append(Problem("image has no 'rater_list' (which raters were assigned?)", image_id=im.get("id")))
            bad_images.add(im.get("id"))
            continue
        rows, base = _rows_of(im)
        rc = None
        if im.get("rater_categories"):
            rc = {str(r): frozenset(int(c) for c in cs) for r, cs in im["rater_categories"].items()}
        images[im["id"]] = ImageRecord(im["id"], float(im.get("width", 1)), float(im.get("height", 1)), rows,
                                       [], rc, im.get("file_name"), base)
    kind = TASK_KINDS[task]
    if task == "segm" and any(isinstance(a.get("segmentation"), dict) for a in source["annotations"]):
        kind = "rle"
    seen_ids = set()
    for ann in source["annotations"]:
        p = _annotation_problem(ann, images, bad_images, categories, task, seen_ids)
        if p is not None:
            problems.append(p)
            continue
        seen_ids.add(ann["id"])
        image = images[ann["image_id"]]
        image.annotations.append(_to_annotation(ann, image, task))
    if problems and not skip_invalid:
        raise InvalidInputError(problems, name)
    ds = MultiRaterDataset(list(images.values()), categories, kind, skipped=[p.to_dict() for p in problems])
    ds.meta["task"] = task
    return ds


def _annotation_problem(ann, images, bad_images, categories, task, seen_ids) -> Problem | None:
    aid, iid, rater = ann.get("id"), ann.get("image_id"), ann.get("rater_id")
    if iid in bad_images:
        return Problem("its image has no 'rater_list'", iid, aid, rater)
    if iid not in images:
        return Problem("image_id refers to no image", iid, aid, rater)
    if aid is None or aid in seen_ids:
        return Problem("annotation id missing or duplicated", iid, aid, rater)
    if rater is None:
        return Problem("annotation has no 'rater_id'", iid, aid)
    image = images[iid]
    row = str(rater)
    if image.row_rater is not None:
        row = session_row(str(rater), ann.get("session_id"))
    if row not in image.raters:
        return Problem(f"rater is not in the image's rater_list {list(image.raters)}", iid, aid, rater)
    if categories and int(ann.get("category_id", -10**9)) not in categories:
        return Problem(f"unknown category_id {ann.get('category_id')!r}", iid, aid, rater)
    if task == "bbox":
        msg = _bbox_problem(ann.get("bbox"))
        if msg:
            return Problem(msg, iid, aid, rater)
    if task == "segm":
        msg = _segm_problem(ann.get("segmentation"))
        if msg:
            return Problem(msg, iid, aid, rater)
    if task == "keypoints":
        kp = ann.get("keypoints")
        if not isinstance(kp, list) or not kp or len(kp) % 3 or not _finite(kp):
            return Problem("keypoints must be a flat [x, y, v, ...] list of finite numbers", iid, aid, rater)
    return None


def _to_annotation(ann: dict, image: ImageRecord, task: str) -> Annotation:
    row = str(ann["rater_id"])
    if image.row_rater is not None:
        row = session_row(row, ann.get("session_id"))
    bbox = tuple(float(v) for v in ann["bbox"]) if _bbox_problem(ann.get("bbox")) is None else None
    if task == "bbox":
        geometry = bbox
    elif task == "segm":
        geometry = ann["segmentation"]
        if bbox is None and isinstance(geometry, list):
            bbox = _polygon_bbox(geometry)
    else:
        geometry = [float(v) for v in ann["keypoints"]]
    return Annotation(ann["id"], row, int(ann["category_id"]), geometry, bbox)


def dataset_to_coco(ds: MultiRaterDataset) -> dict:
    """Write a box/polygon/keypoint data set back to multi-rater COCO (sessions flattened to rows)."""
    images, anns = [], []
    for im in ds.images:
        images.append({"id": im.id, "width": im.width, "height": im.height, "file_name": im.file_name,
                       "rater_list": list(im.raters)})
        for a in im.annotations:
            d = {"id": a.id, "image_id": im.id, "category_id": a.category, "rater_id": a.rater}
            if ds.kind == "box":
                d["bbox"] = list(a.geometry)
            elif ds.kind in ("polygon", "rle"):
                d["segmentation"] = a.geometry
                if a.bbox:
                    d["bbox"] = list(a.bbox)
            elif ds.kind == "keypoints":
                d["keypoints"] = list(a.geometry)
            anns.append(d)
    cats = [{"id": k, "name": v} for k, v in sorted(ds.categories.items())]
    return {"images": images, "annotations": anns, "categories": cats}

