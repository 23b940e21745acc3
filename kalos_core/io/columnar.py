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

from array import array
from itertools import chain
from operator import itemgetter

import numpy as np

from ..columns import AnnotationColumns
from ..data import ImageRecord, MultiRaterDataset
from .validation import InputWarnings, Problem
from .values import MAX_COORDINATE

_IDS = {int, str}
_NUMBERS = {int, float}
_KEYS = ("id", "image_id", "rater_id", "category_id", "bbox")


def _types(values) -> set:
    return set(map(type, values))


class _Growing:
    """A column appended to batch by batch in one array grown in place (``ndarray.resize``: realloc
    remaps a large array's pages rather than copying them), so that the column is not held twice as
    the batches' pieces beside their join; its spare room (a quarter at most after a growth, zeroed
    by ``resize``) is what it costs. Only copies leave it until :meth:`take`; pickled (a forked
    reader's columns), it sends its values, not its spare room."""

    __slots__ = ("data", "n")

    def __init__(self, dtype, width: int = 0) -> None:
        self.data = np.empty((0, width) if width else 0, dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        end = self.n + len(values)
        if end > len(self.data):
            self.data.resize((max(end, len(self.data) + len(self.data) // 4, 1024),) + self.data.shape[1:],
                             refcheck=False)
        self.data[self.n:end] = values
        self.n = end

    def copy(self) -> np.ndarray:
        return self.data[:self.n].copy()

    def take(self) -> np.ndarray:
        """The column itself, handed over: this one is left empty."""
        out, n = self.data, self.n
        self.data, self.n = np.empty((0,) + out.shape[1:], out.dtype), 0
        out.resize((n,) + out.shape[1:], refcheck=False)
        return out

    def __getstate__(self) -> tuple:
        return (self.copy(),)

    def __setstate__(self, state: tuple) -> None:
        data = state[0]     # an array that owns its memory, so that it can grow (pickle 5 may lend a buffer)
        self.data, self.n = (data if data.flags.owndata else data.copy()), len(data)


class BoxColumns:
    """The columns of box annotations taken a batch at a time (the parsed objects can then go).

    Image ids and rater ids are kept as codes into the distinct values seen (in order of
    appearance), resolved against the images once they are known (:func:`read_boxes`);
    integer annotation ids as an array (Python ints kept from batch to batch would pin
    the memory of every batch's parsed objects). :meth:`take` returns False on an
    annotation this reader cannot take.
    """

    def __init__(self) -> None:
        self.ids: list[np.ndarray | list] = []
        self.id_types: set = set()
        self.images: dict = {}        # image id -> code
        self.raters: dict = {}        # rater id -> code
        #: image code, rater code, category, (n, 4) xywh
        self.columns = (_Growing(np.int64), _Growing(np.int64), _Growing(np.int64), _Growing(np.float64, 4))

    def take(self, anns: list) -> bool:
        if not _types(anns) <= {dict}:
            return False
        try:
            ids, iids, raters, cats, boxes = (list(map(itemgetter(k), anns)) for k in _KEYS)
        except KeyError:
            return False
        id_types = _types(ids)
        if not id_types | _types(iids) | _types(raters) <= _IDS or not _types(cats) <= {int}:
            return False
        try:
            category = np.array(cats, dtype=np.int64) if anns else np.zeros(0, np.int64)
        except OverflowError:
            return False
        xywh = _boxes(boxes)
        if xywh is None:
            return False
        self.ids.append(_int_array(ids) if id_types == {int} else ids)
        self.id_types |= id_types
        self._append(_codes(iids, self.images), _codes(raters, self.raters), category, xywh)
        return True

    def merge(self, part: BoxColumns) -> None:
        """Append the columns ``part`` took (of the batches after this one's): as if this had taken them
        (``part``'s columns are handed over)."""
        images = _recode(part.images, self.images)
        raters = _recode(part.raters, self.raters)
        self.ids += part.ids
        self.id_types |= part.id_types
        i, r, c, b = (col.take() for col in part.columns)
        self._append(images[i], raters[r], c, b)

    def _append(self, *values: np.ndarray) -> None:
        for col, v in zip(self.columns, values):
            col.append(v)

    def column(self, k: int, keep: bool = True) -> np.ndarray:
        """Column ``k`` of all batches (a copy); ``keep=False`` hands the column itself over
        (:func:`read_boxes`: each is taken once)."""
        return self.columns[k].copy() if keep else self.columns[k].take()

    def all_ids(self, keep: bool = True) -> np.ndarray | list:
        """The annotation ids (``keep``: as :meth:`column`): an int64 array where all are integers
        of 64 bits, else a list."""
        parts = self.ids
        if not keep:
            self.ids = []
        if all(isinstance(p, np.ndarray) for p in parts):
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return list(chain.from_iterable(p.tolist() if isinstance(p, np.ndarray) else p for p in parts))


class ParsedBoxColumns(BoxColumns):
    """:class:`BoxColumns` of annotations parsed by orjson (:mod:`kalos_core.io.batches`), whose
    values are exactly ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or None: the
    common file (integer ids, image ids and class ids, text rater ids) is taken in fewer
    passes over the objects, each value converted once (``array`` refuses text, None and
    floats where it wants integers; only bools, read as 0 and 1, are looked for after);
    anything else is taken by :meth:`BoxColumns.take` as before (the same columns, or False).
    """

    def take(self, anns: list) -> bool:
        try:
            ids, iids, raters, cats, boxes = (list(map(itemgetter(k), anns)) for k in _KEYS)
        except (KeyError, TypeError):      # an annotation that is no object, or lacks a key
            return False
        id_col, image, category = _ints(ids), _ints(iids), _ints(cats)
        rater = _text_codes(raters)
        xywh = _boxes(boxes, parsed=True)
        if id_col is None or image is None or category is None or rater is None or xywh is None:
            return super().take(anns)
        self.ids.append(id_col)
        self.id_types |= {int} if anns else set()
        self._append(_run_codes(image, self.images), _recode(rater[1], self.raters)[rater[0]], category, xywh)
        return True


def _ints(values: list) -> np.ndarray | None:
    """The values as int64 where all are ints of 64 bits (of parsed JSON: no float, text or bool)."""
    try:
        out = np.frombuffer(array("q", values), np.int64) if values else np.zeros(0, np.int64)
    except (TypeError, OverflowError):
        return None
    return None if _any_bool(values.__getitem__, out) else out


def _any_bool(value, numbers: np.ndarray) -> bool:
    """Whether any ``value(k)`` is a bool (``numbers``: the values as numbers, where a bool is 0 or 1)."""
    maybe = np.flatnonzero((numbers == 0) | (numbers == 1)).tolist()
    return bool(maybe) and bool in set(map(type, map(value, maybe)))


def _text_codes(values: list) -> tuple[np.ndarray, dict] | None:
    """``(codes, {value: code})`` of text values coded in order of appearance (None: not all text)."""
    code_of = _Codes()
    try:
        codes = np.fromiter(map(code_of.__getitem__, values), np.int64, len(values))
    except TypeError:                      # unhashable
        return None
    return (codes, code_of) if all(type(v) is str for v in code_of) else None   # text equals only text


class _Codes(dict):
    def __missing__(self, key):
        self[key] = code = len(self)
        return code


def _run_codes(values: np.ndarray, code_of: dict) -> np.ndarray:
    """:func:`_codes` of int64 values, by their runs (annotations come mostly image after image)."""
    if not len(values):
        return values
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    lut = np.array([code_of.setdefault(v, len(code_of)) for v in values[starts].tolist()], np.int64)
    return np.repeat(lut, np.diff(np.r_[starts, len(values)]))


def _int_array(values: list) -> np.ndarray | list:
    try:
        return np.fromiter(values, np.int64, len(values))
    except OverflowError:
        return values


def box_columns(raw_anns: list) -> BoxColumns | None:
    """The columns of parsed annotations (None where the per-annotation reader must read them)."""
    cols = BoxColumns()
    return cols if cols.take(raw_anns) else None


def _duplicated(ids: np.ndarray | list, types: set) -> bool:
    if isinstance(ids, np.ndarray):      # sorted (np.unique's hashing is 30x slower here)
        ids = np.sort(ids)
        return bool((ids[1:] == ids[:-1]).any())
    return len(set(ids) if types == {int} else set(map(str, ids))) != len(ids)


def _as_list(ids: np.ndarray | list) -> list:
    return ids.tolist() if isinstance(ids, np.ndarray) else ids


def _codes(values: list, code_of: dict) -> np.ndarray:
    for v in dict.fromkeys(values):
        code_of.setdefault(v, len(code_of))
    return np.fromiter(map(code_of.__getitem__, values), np.int64, len(values))


def _recode(values: dict, code_of: dict) -> np.ndarray:
    """The codes in ``code_of`` of the values coded by ``values`` (the new ones coded in order)."""
    return np.array([code_of.setdefault(v, len(code_of)) for v in values], np.int64)


def read_boxes(raw_images: list, cols: BoxColumns | None, raw_cats: list, categories_of, images_of
               ) -> MultiRaterDataset | None:
    """The box data set of a parsed file, or None when it needs the per-annotation reader.

    ``cols``: the annotations' :class:`BoxColumns` (None: not columns, read them one by one), whose
    columns this takes over (``keep=False``): a None answer leaves them spent.
    ``categories_of`` / ``images_of`` are the per-item readers of categories and
    images (:mod:`kalos_core.io.coco`; a few thousand items, not the hot path).
    """
    if cols is None:
        return None
    problems: list[Problem] = []
    warn = InputWarnings()
    categories = categories_of(raw_cats, problems, warn)
    images, bad = images_of(raw_images, problems, warn)
    if problems or bad:
        return None
    ims = list(images.values())
    if any(im["width"] is None or im["height"] is None or im["base"] is not None for im in ims):
        return None
    ids = cols.all_ids(keep=False)
    n = len(ids)
    if _duplicated(ids, cols.id_types):
        return None                       # a duplicated id (or one written two ways)
    index_of = {im["id"]: k for k, im in enumerate(ims)}
    try:                                  # ids are ints and strings here: 1.0 or True find no image 1
        codes = np.array([index_of[v] for v in cols.images], np.int64)
        image = codes[cols.column(0, keep=False)] if n else np.zeros(0, np.int64)
    except KeyError:
        return None                       # refers to no image, or to one whose id has another type
    row = _row_codes(ims, [str(r) for r in cols.raters], cols.column(1, keep=False), image)
    if row is None:
        return None
    category, xywh = cols.column(2, keep=False), cols.column(3, keep=False)
    if categories and n and not np.isin(category, np.fromiter(categories, np.int64)).all():
        return None
    if n and not _has_area(xywh, ims, image):
        return None
    if n and (image[1:] < image[:-1]).any():   # not in image order already: sort (stable)
        order = np.argsort(image, kind="stable")
        ids = ids[order] if isinstance(ids, np.ndarray) else [ids[k] for k in order.tolist()]
        row, category, xywh = row[order], category[order], xywh[order]
    ends = np.cumsum(np.bincount(image, minlength=len(ims))).tolist()
    records, start = [], 0
    for im, end in zip(ims, ends):
        part = AnnotationColumns(_as_list(ids[start:end]), im["rows"], row[start:end], category[start:end], xywh[start:end])
        records.append(ImageRecord(im["id"], float(im["width"]), float(im["height"]), im["rows"], part,
                                   im["rc"], im["file_name"], im["base"]))
        start = end
    ds = MultiRaterDataset(records, categories, "box", warnings=warn.to_list())
    ds.meta["task"] = "bbox"
    return ds


def _row_codes(ims: list[dict], names: list[str], code: np.ndarray, image: np.ndarray) -> np.ndarray | None:
    """Each annotation's position in its image's ``rater_list`` (None if a rater is not listed there).

    ``names``: the distinct rater ids as text; ``code``: each annotation's index into them."""
    lists = {im["rows"] for im in ims}
    if len(lists) == 1:                   # every image lists the same raters: the position is the code
        position = {r: p for p, r in enumerate(lists.pop())}
        lut = np.array([position.get(r, -1) for r in names], np.int64)
        row = lut[code] if len(code) else code
        return None if len(row) and row.min() < 0 else row
    code_of: dict[str, int] = {}
    for im in ims:
        for r in im["rows"]:
            code_of.setdefault(r, len(code_of))
    if not code_of:
        return np.zeros(0, np.int64) if not len(code) else None
    if any(r not in code_of for r in names):
        return None                       # a rater in no image's rater_list
    code = np.array([code_of[r] for r in names], np.int64)[code] if len(code) else code
    position = np.full((len(ims), len(code_of)), -1, np.int64)
    for k, im in enumerate(ims):
        for p, r in enumerate(im["rows"]):
            position[k, code_of[r]] = p
    row = position[image, code] if len(code) else code
    return None if len(row) and row.min() < 0 else row


def _boxes(boxes: list, parsed: bool = False) -> np.ndarray | None:
    """``(n, 4)`` boxes when all are plain finite ``[x, y, w, h]`` lists in range, of positive sides.

    ``parsed``: values of parsed JSON, where four items that ``array("d")`` takes are four
    numbers or bools of a list (a text's characters and an object's keys are text)."""
    if not boxes:
        return np.zeros((0, 4))
    try:
        if (not parsed and _types(boxes) != {list}) or set(map(len, boxes)) != {4}:
            return None
        if not parsed and not _types(chain.from_iterable(boxes)) <= _NUMBERS:
            return None
        if parsed:
            flat = list(chain.from_iterable(boxes))
            xywh = np.frombuffer(array("d", flat), float).reshape(-1, 4)
            if _any_bool(flat.__getitem__, xywh.ravel()):
                return None
        else:
            xywh = np.fromiter(chain.from_iterable(boxes), float, 4 * len(boxes)).reshape(-1, 4)
    except (TypeError, OverflowError):
        return None                       # not numbers, or an integer too large for a float
    with np.errstate(all="ignore"):
        if not (np.isfinite(xywh).all() and np.abs(xywh).max() <= MAX_COORDINATE):
            return None
        if not ((xywh[:, 2] > 0) & (xywh[:, 3] > 0)).all():
            return None
    return xywh


def _has_area(xywh: np.ndarray, ims: list[dict], image: np.ndarray) -> bool:
    """Every box keeps an area relative to its image (no underflow to 0)."""
    sides = np.array([[im["width"], im["height"]] for im in ims], dtype=float)[image]
    with np.errstate(all="ignore"):
        return bool(((xywh[:, 2] / sides[:, 0]) * (xywh[:, 3] / sides[:, 1]) > 0).all())


__all__ = ["BoxColumns", "ParsedBoxColumns", "box_columns", "read_boxes"]
