"""Multi-rater COCO json: ``images[].rater_list`` and ``annotations[].rater_id``.

``rater_list`` is a list of rater ids, or a dict ``{rater: [session, ...]}``
for repeated sessions (annotations then carry ``session_id``; each session
becomes its own row ``"rater (S<session>)"``). An optional
``images[].rater_categories = {rater: [category ids]}`` restricts raters to
some classes (open world).

What is refused and what is read with a counted warning is listed in
docs/input.md; this module parses the file's structure, and
:mod:`kalos_core.io.records` checks the records it builds.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ..data import TASK_KINDS, Annotation, ImageRecord, MultiRaterDataset, session_row
from ..gcpause import paused_gc
from .batches import read_forked, read_in_batches
from .columnar import ParsedBoxColumns, box_columns, read_boxes
from .cuboids import CUBOID_FIELDS, read_cuboid
from .jsonfile import load_json_file, settle
from .records import box_problem, check_records
from .validation import InputWarnings, InvalidInputError, Problem, fatal
from .values import coordinates, identifier, integer, plain_in_range, side

#: every geometry kind a task may give (segm: RLE masks when the file holds any)
TASK_GEOMETRY_KINDS = {t: (k, "rle") if t == "segm" else (k,) for t, k in TASK_KINDS.items()}
STRING_NUMBERS = "numbers written as strings read as numbers"


def load_coco(source: str | Path | dict, task: str = "bbox", skip_invalid: bool = False, *,
              columnar: bool = True, workers: int = 1) -> MultiRaterDataset:
    """Read a multi-rater COCO file (or its parsed JSON) into a :class:`MultiRaterDataset`.

    Parameters
    ----------
    source : path to the json, or the parsed JSON (a dict).
    task : ``bbox`` (boxes), ``segm`` (polygons; RLE masks if any segmentation
        is RLE), ``keypoints`` or ``cuboids`` (3D boxes: each annotation's
        ``cuboid`` = ``{"location", "dimensions", "rotation"}``, see
        :mod:`kalos_core.io.cuboids`; images need no width/height).
    skip_invalid : drop invalid annotations (and invalid images with their
        annotations) instead of raising :class:`InvalidInputError`; the dropped
        items are listed in ``dataset.skipped``.

    Coercions (a number written as a string, a missing image size, ...) are
    counted in ``dataset.warnings``; see docs/input.md for every rule.

    Box files that need no coercion and hold no problem are read column-wise
    (:mod:`kalos_core.io.columnar`: arrays, checked once); anything else, or
    ``columnar=False``, goes through the per-annotation reader, which names
    every culprit. Both give equal data sets. A box file is read in batches
    (:mod:`kalos_core.io.batches`: the annotations' columns are kept, their parsed
    objects dropped batch by batch) and read whole only where that reader cannot take it;
    ``workers`` > 1 (0: all cores) parses the batches in that many forked processes
    (:func:`~kalos_core.io.batches.read_forked`; the same data set).
    """
    if task not in TASK_KINDS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASK_KINDS)}")
    name = "input"
    with paused_gc():   # the parsed file is freed before collections resume: none walks its objects
        ds = _load_batched(source, task, workers) if columnar and isinstance(source, (str, Path)) else None
        if ds is None:
            if isinstance(source, (str, Path)):
                name = str(source)
                source = load_json_file(source)
            ds = _load(source, name, task, skip_invalid, columnar)
        del source
        settle()        # nor the data set's
    return ds


def _load_batched(path: str | Path, task: str, workers: int) -> MultiRaterDataset | None:
    """A box file read in batches into columns (None: read it whole)."""
    if task != "bbox" or Path(path).is_dir():
        return None
    cols = ParsedBoxColumns()
    workers = workers or os.cpu_count() or 1
    if workers > 1:
        skeleton = read_forked(path, cols.take, ParsedBoxColumns, cols.merge, workers, runs=False)
    else:               # (runs=False: BoxColumns refuses the floats orjson gives for 19-digit ints)
        skeleton = read_in_batches(path, cols.take, runs=False)
    if skeleton is None:
        return None
    skeleton["annotations"] = []
    raw_images, _, raw_cats = top_level(skeleton, str(path))
    return read_boxes(raw_images, cols, raw_cats, _categories, _images)


def _load(source: Any, name: str, task: str, skip_invalid: bool, columnar: bool) -> MultiRaterDataset:
    raw_images, raw_anns, raw_cats = top_level(source, name)
    if columnar and task == "bbox":
        ds = read_boxes(raw_images, box_columns(raw_anns), raw_cats, _categories, _images)
        if ds is not None:
            return ds
    problems: list[Problem] = []
    warn = InputWarnings()
    categories = _categories(raw_cats, problems, warn)
    images, bad_images = _images(raw_images, problems, warn)
    kind = TASK_KINDS[task]
    for k, ann in enumerate(raw_anns):
        if not isinstance(ann, dict):
            problems.append(Problem(f"annotations[{k}] is not an object: {ann!r}"[:160]))
            continue
        p = _annotation(ann, images, bad_images, task, warn)
        if isinstance(p, Problem):
            problems.append(p)
        else:
            images[_text(ann["image_id"])]["annotations"].append(p)
    if task == "segm" and any(isinstance(a.geometry, dict) for im in images.values() for a in im["annotations"]):
        kind = "rle"
        n_poly = sum(isinstance(a.geometry, list) for im in images.values() for a in im["annotations"])
        if n_poly:
            warn.add("polygons rasterised to masks because the file also holds RLE masks", count=n_poly)
    records = [_image_record(im, kind, problems, warn) for im in images.values()]
    ds = MultiRaterDataset(records, categories, kind, warnings=warn.to_list())
    ds.meta["task"] = task
    ds, more = check_records(ds)
    problems += more
    if problems and not skip_invalid:
        raise InvalidInputError(problems, name)
    ds.skipped = [p.to_dict() for p in problems]
    return ds


def _text(v: Any) -> str:
    return str(v)


def top_level(source: Any, name: str) -> tuple[list, list, list]:
    if not isinstance(source, dict):
        raise fatal(f"the file must hold a JSON object with 'images' and 'annotations' lists, "
                    f"not {'null' if source is None else type(source).__name__}", name)
    out = []
    for key in ("images", "annotations", "categories"):
        v = source.get(key, [] if key == "categories" else None)
        if v is None:
            raise fatal(f"the file has no '{key}' list", name)
        if not isinstance(v, list):
            raise fatal(f"'{key}' must be a list, not {type(v).__name__}", name)
        out.append(v)
    return out[0], out[1], out[2]


def _categories(raw: list, problems: list[Problem], warn: InputWarnings) -> dict[int, str]:
    out: dict[int, str] = {}
    for k, c in enumerate(raw):
        if not isinstance(c, dict) or "id" not in c:
            problems.append(Problem(f"categories[{k}] has no 'id': {c!r}"[:160]))
            continue
        cid, coerced, err = integer(c["id"])
        if err:
            problems.append(Problem(f"categories[{k}]: category id {err}"))
            continue
        if coerced:
            warn.add("category id written as a non-integer type read as an integer", f"category {c['id']!r}")
        if cid in out:
            problems.append(Problem(f"categories[{k}]: duplicate category id {cid}"))
            continue
        out[cid] = str(c.get("name", cid))
    return out


def _images(raw: list, problems: list[Problem], warn: InputWarnings) -> tuple[dict, dict]:
    """``({id text: parsed image}, {id text: why the image is unusable})``."""
    images: dict[str, dict] = {}
    bad: dict[str, str] = {}
    for k, im in enumerate(raw):
        if not isinstance(im, dict):
            problems.append(Problem(f"images[{k}] is not an object: {im!r}"[:160]))
            continue
        iid = im.get("id")
        err = identifier(iid, "image id")
        if err:
            problems.append(Problem(f"images[{k}]: {err}"))
            continue
        key = _text(iid)
        if key in images or key in bad:
            first = images[key]["id"] if key in images else iid
            how = "" if first == iid else f" ({first!r} and {iid!r} are the same id written two ways)"
            problems.append(Problem(f"duplicate image id{how}: every image with it is refused", iid))
            images.pop(key, None)
            bad[key] = "its image id is duplicated"
            continue
        parsed, msg = _image(im, warn)
        if msg:
            problems.append(Problem(msg, iid))
            bad[key] = f"its image is invalid ({msg})"
        else:
            images[key] = parsed
    return images, bad


def _image(im: dict, warn: InputWarnings) -> tuple[dict | None, str | None]:
    iid = im["id"]
    sizes = {}
    for what in ("width", "height"):
        v = im.get(what)
        if v is None:
            sizes[what] = None
            continue
        f, err = side(v, what)
        if err:
            return None, err
        if isinstance(v, str):
            warn.add(STRING_NUMBERS, f"image {iid}")
        sizes[what] = f
    if "rater_list" not in im:
        return None, "image has no 'rater_list' (which raters were assigned?)"
    rows, base, msg = _rows_of(im["rater_list"], iid, warn)
    if msg:
        return None, msg
    rc, msg = _rater_categories(im.get("rater_categories"), rows)
    if msg:
        return None, msg
    file_name = im.get("file_name")
    if file_name is not None and not isinstance(file_name, str):
        warn.add("file_name that is not a string ignored", f"image {iid}")
        file_name = None
    return {"id": iid, **sizes, "rows": rows, "base": base, "rc": rc, "file_name": file_name,
            "annotations": []}, None


def _rater_name(r: Any) -> str | None:
    return None if isinstance(r, bool) or not isinstance(r, (str, int)) else str(r)


def _rows_of(raw: Any, iid: Any, warn: InputWarnings) -> tuple[tuple, dict | None, str | None]:
    if isinstance(raw, dict):
        rows, base = [], {}
        for rater, sessions in raw.items():
            if not isinstance(sessions, list) or any(_rater_name(s) is None for s in sessions):
                return (), None, (f"rater_list[{rater!r}] must be a list of session ids, got {sessions!r}")[:160]
            for s in sessions:
                rows.append(session_row(str(rater), s))
                base[rows[-1]] = str(rater)
        return tuple(dict.fromkeys(rows)), base, None
    if isinstance(raw, str):   # "a,b" or "ab": not split into raters by guessing
        return (), None, (f"rater_list must be a list of rater ids, got the string {raw[:60]!r}; write it "
                          f"as a list, e.g. {[r.strip() for r in raw.split(',')][:4]!r}")
    if not isinstance(raw, list):
        return (), None, (f"rater_list must be a list of rater ids or a {{rater: [sessions]}} object, "
                          f"got {type(raw).__name__} {raw!r}")[:200]
    names = [_rater_name(r) for r in raw]
    if any(n is None for n in names):
        return (), None, f"rater ids must be strings or integers, got {raw!r}"[:160]
    rows = tuple(dict.fromkeys(names))
    if len(rows) < len(names):
        warn.add("rater listed twice in an image's rater_list counted once", f"image {iid}")
    return rows, None, None


def _rater_categories(raw: Any, rows: tuple) -> tuple[dict | None, str | None]:
    if not raw:
        return None, None
    if not isinstance(raw, dict):
        return None, f"rater_categories must be a {{rater: [category ids]}} object, got {raw!r}"[:160]
    out = {}
    for r, cats in raw.items():
        if str(r) not in rows:
            return None, f"rater_categories names {r!r}, who is not in rater_list {list(rows)}"
        ids = [integer(c) for c in cats] if isinstance(cats, list) else None
        if ids is None or any(err for _, _, err in ids):
            return None, f"rater_categories[{r!r}] must be a list of category ids, got {cats!r}"[:160]
        out[str(r)] = frozenset(v for v, _, _ in ids)
    return out, None


def _annotation(ann: dict, images: dict, bad_images: dict, task: str, warn: InputWarnings) -> Annotation | Problem:
    aid, iid, rater = ann.get("id"), ann.get("image_id"), ann.get("rater_id")
    err = identifier(aid, "annotation id")
    if err:
        return Problem(err, iid if identifier(iid, "") is None else None, None if aid is None else repr(aid), rater)
    if identifier(iid, "image_id"):
        return Problem(identifier(iid, "image_id"), None, aid, rater)
    key = _text(iid)
    if key in bad_images:
        return Problem(bad_images[key], iid, aid, rater)
    if key not in images:
        return Problem("image_id refers to no image", iid, aid, rater)
    image = images[key]
    if image["id"] != iid:
        return Problem(f"image_id {iid!r} refers to no image (there is an image {image['id']!r}: "
                       "the same id written as another type)", iid, aid, rater)
    name = _rater_name(rater)
    if name is None:
        return Problem("annotation has no 'rater_id'" if rater is None
                       else f"rater_id must be a string or an integer, got {rater!r}", iid, aid)
    row = name
    if image["base"] is not None:
        if ann.get("session_id") is None:
            return Problem("annotation has no 'session_id' (its image's rater_list lists sessions)", iid, aid, rater)
        row = session_row(name, ann["session_id"])
    if row not in image["rows"]:
        return Problem(f"rater is not in the image's rater_list {list(image['rows'])}", iid, aid, rater)
    if "category_id" not in ann:
        return Problem("annotation has no 'category_id'", iid, aid, rater)
    cat, coerced, err = integer(ann["category_id"])
    if err:
        return Problem(f"category_id: {err}", iid, aid, rater)
    if coerced:
        warn.add("category id written as a non-integer type read as an integer", f"annotation {aid}")
    geometry, bbox, msg = _geometry(ann, task, warn)
    if msg:
        return Problem(msg, iid, aid, rater)
    return Annotation(aid, row, cat, geometry, bbox)


def _numeric_box(raw: Any, warn: InputWarnings, aid: Any) -> tuple[tuple | None, str | None]:
    if type(raw) is list and len(raw) == 4 and plain_in_range(raw) and raw[2] > 0 and raw[3] > 0:
        return tuple(map(float, raw)), None      # the common case, checked once
    msg = box_problem(raw)
    if msg:
        return None, msg
    vals, coerced, _ = coordinates(raw)
    if coerced:
        warn.add(STRING_NUMBERS, f"annotation {aid}")
    return tuple(float(v) for v in vals), None


def _geometry(ann: dict, task: str, warn: InputWarnings) -> tuple[Any, tuple | None, str | None]:
    aid = ann["id"]
    if task == "cuboids":
        geometry, coerced, msg = read_cuboid(ann.get("cuboid"))
        if coerced:
            warn.add(STRING_NUMBERS, f"annotation {aid}")
        return geometry, None, msg
    bbox, box_msg = _numeric_box(ann.get("bbox"), warn, aid) if "bbox" in ann else (None, "annotation has no 'bbox'")
    if task == "bbox":
        return bbox, bbox, box_msg
    if task == "keypoints":
        vals, coerced, err = coordinates(ann.get("keypoints"))
        if err or not vals or len(vals) % 3:
            return None, None, "keypoints must be a flat [x, y, v, ...] list of finite numbers" + (f" ({err})" if err else "")
        if coerced:
            warn.add(STRING_NUMBERS, f"annotation {aid}")
        return vals, bbox, None
    segm = ann.get("segmentation")
    if isinstance(segm, dict):
        return segm, bbox, None
    if not isinstance(segm, list) or not segm:
        return None, None, "segmentation is missing or empty"
    rings = []
    for ring in segm:
        vals, coerced, err = coordinates(ring)
        if err:
            return None, None, f"polygon: {err}"
        if coerced:
            warn.add(STRING_NUMBERS, f"annotation {aid}")
        rings.append(vals if coerced else ring)
    if bbox is None and all(len(r) >= 2 and len(r) % 2 == 0 for r in rings):
        xs = [v for r in rings for v in r[0::2]]
        ys = [v for r in rings for v in r[1::2]]
        bbox = (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
    return rings, bbox, None


def _extent(anns: list[Annotation]) -> tuple[float, float]:
    """Width and height that hold every annotation (RLE sizes first)."""
    w = h = 1.0
    for a in anns:
        g = a.geometry
        if isinstance(g, dict):
            size = g.get("size")
            if isinstance(size, (list, tuple)) and len(size) == 2:
                try:
                    h, w = max(h, float(size[0])), max(w, float(size[1]))
                except (TypeError, ValueError):
                    pass
            continue
        if a.bbox is not None:
            w, h = max(w, a.bbox[0] + a.bbox[2]), max(h, a.bbox[1] + a.bbox[3])
        if isinstance(g, list) and g and isinstance(g[0], list):
            w = max([w] + [v for r in g for v in r[0::2]])
            h = max([h] + [v for r in g for v in r[1::2]])
        elif isinstance(g, list):
            w = max([w] + [v for v in g[0::3]])
            h = max([h] + [v for v in g[1::3]])
    return float(math.ceil(w)), float(math.ceil(h))


def _image_record(im: dict, kind: str, problems: list[Problem], warn: InputWarnings) -> ImageRecord:
    anns = im["annotations"]
    width, height = im["width"], im["height"]
    if kind == "cuboids":   # scene coordinates: the image size plays no part
        width, height = width or 1.0, height or 1.0
    if width is None or height is None:
        ew, eh = _extent(anns)
        width, height = width or ew, height or eh
        warn.add("image without width/height: size taken from the extent of its annotations",
                 f"image {im['id']}")
    if kind == "rle":
        keep = []
        for a in anns:
            size = a.geometry.get("size") if isinstance(a.geometry, dict) else None
            exact = isinstance(size, (list, tuple)) and len(size) == 2 and all(type(v) is int for v in size)
            if exact and list(size) != [round(height), round(width)]:
                problems.append(Problem(f"RLE size {size!r} differs from the image's [height, width] "
                                        f"[{round(height)}, {round(width)}]", im["id"], a.id, a.rater))
            else:
                keep.append(a)
        anns = keep
    return ImageRecord(im["id"], float(width), float(height), im["rows"], anns, im["rc"], im["file_name"], im["base"])


def dataset_to_coco(ds: MultiRaterDataset) -> dict:
    """Write a box/polygon/keypoint/cuboid data set back to multi-rater COCO (sessions flattened to rows)."""
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
            elif ds.kind == "cuboids":
                d["cuboid"] = {k: list(a.geometry[3 * n: 3 * n + 3]) for n, k in enumerate(CUBOID_FIELDS)}
            anns.append(d)
    cats = [{"id": k, "name": v} for k, v in sorted(ds.categories.items())]
    return {"images": images, "annotations": anns, "categories": cats}
