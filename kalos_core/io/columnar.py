"""The columnar reader of multi-rater COCO boxes: annotations straight into arrays.

:func:`read_boxes` checks, in whole-column operations, everything the
per-annotation reader (:mod:`kalos_core.io.coco`) and :func:`check_records`
check on a box file: ids, image references, raters in the image's
``rater_list``, known integer class ids, finite in-range boxes of positive
size. It accepts only files that need no coercion and hold no problem; on
anything else it returns None and the per-annotation reader runs, which names
every culprit and counts every coercion (docs/input.md). So the two readers
give equal data sets wherever this one answers (``tests/core/test_columnar.py``).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from ..columns import AnnotationColumns
from ..data import ImageRecord, MultiRaterDataset
from .validation import InputWarnings, Problem
from .values import MAX_COORDINATE

_IDS = {int, str}
_NUMBERS = {int, float}


def _types(values) -> set:
    return set(map(type, values))


def read_boxes(raw_images: list, raw_anns: list, raw_cats: list, categories_of, images_of
               ) -> MultiRaterDataset | None:
    """The box data set of a parsed file, or None when it needs the per-annotation reader.

    ``categories_of`` / ``images_of`` are the per-item readers of categories and
    images (:mod:`kalos_core.io.coco`; a few thousand items, not the hot path).
    """
    problems: list[Problem] = []
    warn = InputWarnings()
    categories = categories_of(raw_cats, problems, warn)
    images, bad = images_of(raw_images, problems, warn)
    if problems or bad:
        return None
    ims = list(images.values())
    if any(im["width"] is None or im["height"] is None or im["base"] is not None for im in ims):
        return None
    cols = _annotation_columns(raw_anns)
    if cols is None:
        return None
    ids, iids, raters, cats, boxes = cols
    n = len(ids)
    id_types, rater_types = _types(ids), _types(raters)
    if not id_types <= _IDS or not _types(iids) <= _IDS or not rater_types <= _IDS:
        return None
    if not _types(cats) <= {int}:
        return None
    if len(set(ids) if id_types == {int} else set(map(str, ids))) != n:
        return None                       # a duplicated id (or one written two ways)
    index_of = {im["id"]: k for k, im in enumerate(ims)}
    try:                                  # ids are ints and strings here: 1.0 or True find no image 1
        image = np.fromiter(map(index_of.__getitem__, iids), np.int64, n)
    except KeyError:
        return None                       # refers to no image, or to one whose id has another type
    row = _row_codes(ims, raters if rater_types == {str} else list(map(str, raters)), image)
    if row is None:
        return None
    try:
        category = np.array(cats, dtype=np.int64) if n else np.zeros(0, np.int64)
    except OverflowError:
        return None
    if categories and n and not np.isin(category, np.fromiter(categories, np.int64)).all():
        return None
    xywh = _boxes(boxes, ims, image)
    if xywh is None:
        return None
    if n and (image[1:] < image[:-1]).any():   # not in image order already: sort (stable)
        order = np.argsort(image, kind="stable")
        ids = [ids[k] for k in order.tolist()]
        row, category, xywh = row[order], category[order], xywh[order]
    ends = np.cumsum(np.bincount(image, minlength=len(ims))).tolist()
    records, start = [], 0
    for im, end in zip(ims, ends):
        part = AnnotationColumns(ids[start:end], im["rows"], row[start:end], category[start:end], xywh[start:end])
        records.append(ImageRecord(im["id"], float(im["width"]), float(im["height"]), im["rows"], part,
                                   im["rc"], im["file_name"], im["base"]))
        start = end
    ds = MultiRaterDataset(records, categories, "box", warnings=warn.to_list())
    ds.meta["task"] = "bbox"
    return ds


def _annotation_columns(raw_anns: list) -> tuple[list, list, list, list, list] | None:
    if not _types(raw_anns) <= {dict}:
        return None
    try:
        return ([a["id"] for a in raw_anns], [a["image_id"] for a in raw_anns], [a["rater_id"] for a in raw_anns],
                [a["category_id"] for a in raw_anns], [a["bbox"] for a in raw_anns])
    except KeyError:
        return None


def _row_codes(ims: list[dict], names: list[str], image: np.ndarray) -> np.ndarray | None:
    """Each annotation's position in its image's ``rater_list`` (None if a rater is not listed there)."""
    lists = set(im["rows"] for im in ims)
    if len(lists) == 1:                   # every image lists the same raters: the position is the code
        code_of = {r: p for p, r in enumerate(lists.pop())}
        try:
            return np.fromiter(map(code_of.__getitem__, names), np.int64, len(names))
        except KeyError:
            return None                   # a rater not in the rater_list
    code_of: dict[str, int] = {}
    for im in ims:
        for r in im["rows"]:
            code_of.setdefault(r, len(code_of))
    if not code_of:
        return np.zeros(len(names), np.int64) if not names else None
    try:
        code = np.fromiter(map(code_of.__getitem__, names), np.int64, len(names))
    except KeyError:
        return None                       # a rater in no image's rater_list
    position = np.full((len(ims), len(code_of)), -1, np.int64)
    for k, im in enumerate(ims):
        for p, r in enumerate(im["rows"]):
            position[k, code_of[r]] = p
    row = position[image, code] if len(code) else code
    return None if len(row) and row.min() < 0 else row


def _boxes(boxes: list, ims: list[dict], image: np.ndarray) -> np.ndarray | None:
    """``(n, 4)`` boxes when all are plain in-range ``[x, y, w, h]`` lists with an area."""
    if not boxes:
        return np.zeros((0, 4))
    if _types(boxes) != {list} or set(map(len, boxes)) != {4}:
        return None
    if not _types(chain.from_iterable(boxes)) <= _NUMBERS:
        return None
    try:
        xywh = np.fromiter(chain.from_iterable(boxes), float, 4 * len(boxes)).reshape(-1, 4)
    except OverflowError:
        return None                       # an integer too large for a float
    with np.errstate(all="ignore"):
        if not (np.isfinite(xywh).all() and np.abs(xywh).max() <= MAX_COORDINATE):
            return None
        if not ((xywh[:, 2] > 0) & (xywh[:, 3] > 0)).all():
            return None
        sides = np.array([[im["width"], im["height"]] for im in ims], dtype=float)[image]
        if not ((xywh[:, 2] / sides[:, 0]) * (xywh[:, 3] / sides[:, 1]) > 0).all():
            return None
    return xywh


__all__ = ["read_boxes"]
