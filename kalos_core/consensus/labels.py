"""Consensus labels as columns, and the objects and the COCO annotations made from them.

A consensus run keeps its labels as :class:`LabelColumns` (one list per field of
:class:`ConsensusLabel`); the :class:`ConsensusLabel` objects are made from them only when asked
(``ConsensusResult.labels``: the FiftyOne adapter, a notebook), and the COCO file is written from
the columns (:func:`coco_columns`, one source for ``to_coco``'s dicts and the written text).
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..gcpause import paused_gc
from ..geometry.masks import mask_utils
from ..io.jsonrecords import ABSENT
from ..jsonsafe import json_safe


@dataclass
class ConsensusLabel:
    """One fused label. ``geometry``: ``(x, y, w, h)`` for boxes, a COCO RLE for polygons/masks."""

    unit: str
    image_id: Any
    category: int | None
    geometry: Any
    bbox: tuple
    confidence: float
    support: int
    n_assigned: int
    raters: tuple                 #: the agreeing raters
    members: tuple                #: annotation ids of the whole unit
    tie: bool = False
    tied_categories: tuple = ()


class LabelColumns(namedtuple("LabelColumns", [f.name for f in fields(ConsensusLabel)])):
    """The fields of :class:`ConsensusLabel`, one list each (label ``k`` is row ``k``). The names are
    the dataclass's own, in its order: :meth:`objects` builds the labels from the rows positionally."""

    __slots__ = ()

    def objects(self) -> list[ConsensusLabel]:
        with paused_gc():
            return [ConsensusLabel(*row) for row in zip(*self)]

    @classmethod
    def of(cls, labels: list[ConsensusLabel]) -> LabelColumns:
        return cls(*([getattr(x, name) for x in labels] for name in cls._fields))


def coco_columns(cols: LabelColumns, box: bool, boxes: np.ndarray | None = None,
                 text: bool = False) -> list[tuple[str, list]]:
    """The COCO annotations' keys and plain-JSON values (``ABSENT`` where a label has no such
    key): ``score`` = confidence, ``tied_categories`` only on a tie, ``segmentation`` (polygons,
    masks) the fused RLE; ``area`` of the box, or of the RLE.

    ``boxes``: ``cols.bbox`` as one ``(labels, 4)`` array of finite floats (``cols.bbox`` is then
    not read). ``text``: the values are only written (:func:`~kalos_core.io.jsonrecords.records_parts`),
    as the same JSON: the boxes as their array, the raters as their tuples."""
    with paused_gc():
        safe = {name: _safe_column(getattr(cols, name)) for name in
                ("image_id", "category", "confidence", "unit", "support", "tie")}
        safe["bbox"] = _safe_column(cols.bbox) if boxes is None else boxes if text else boxes.tolist()
        safe["raters"] = cols.raters if text and _plain_tuples(cols.raters) else _safe_column(cols.raters)
        tied = iter(_safe_column([t for t, tie in zip(cols.tied_categories, cols.tie) if tie]))
        if box:
            area = _box_areas(cols.bbox, boxes)
        else:
            area = [_safe(float(mask_utils.area(_rle_bytes(g)))) for g in cols.geometry]
        n = len(cols.unit)
        return [("id", list(range(1, n + 1))), ("image_id", safe["image_id"]), ("category_id", safe["category"]),
                ("bbox", safe["bbox"]), ("score", safe["confidence"]), ("unit", safe["unit"]),
                ("support", safe["support"]), ("raters", safe["raters"]), ("tie", safe["tie"]), ("iscrowd", [0] * n),
                ("tied_categories", [next(tied) if tie else ABSENT for tie in cols.tie])] \
            + ([] if box else [("segmentation", _safe_column(cols.geometry))]) + [("area", area)]


def _plain_tuples(col: list) -> bool:
    """Whether ``col`` holds tuples of plain values (:func:`_all_plain`; few distinct ones checked)."""
    if set(map(type, col)) != {tuple}:
        return False
    try:
        distinct = set(col)
    except TypeError:
        return False
    return _all_plain([e for v in distinct for e in v])


def _box_areas(bbox: list, boxes: np.ndarray | None = None) -> list:
    """``[_safe(b[2] * b[3]) for b in bbox]``; at once where every box is four floats (``boxes``:
    those boxes as an array)."""
    if boxes is None:
        if set(map(len, bbox)) != {4} or set(map(type, [v for b in bbox for v in b])) != {float}:
            return [_safe(b[2] * b[3]) for b in bbox]
        boxes = np.array(bbox).reshape(-1, 4)
    wh = boxes[:, 2:]
    area = wh[:, 0] * wh[:, 1]
    finite = np.isfinite(area)
    return area.tolist() if finite.all() else [a if f else None for a, f in zip(area.tolist(), finite.tolist())]


def records(columns: list[tuple[str, list]]) -> list[dict]:
    """The dicts of :func:`coco_columns`' rows."""
    keys = [k for k, _ in columns]
    with paused_gc():
        return [{k: v for k, v in zip(keys, row) if v is not ABSENT} for row in zip(*(c for _, c in columns))]


_AS_IS = (str, int, bool, type(None))
_PLAIN = set(_AS_IS)


def plain(items: list) -> list[dict]:
    """``json_safe(asdict(x))`` of each item, the same values without ``asdict``'s deep copy: field
    by field, a column of plain values (text, ints, finite floats, or tuples of them) converted at
    once, any other value by :func:`_safe` (tests/core/test_consensus_paths.py holds them equal)."""
    if not items:
        return []
    names = [f.name for f in fields(items[0])]
    return plain_rows(names, [[getattr(x, name) for x in items] for name in names])


def plain_rows(names: tuple | list, columns: list) -> list[dict]:
    """:func:`plain` of the rows of ``columns`` (one list per name)."""
    with paused_gc():   # hundreds of thousands of new containers, no cycles among them
        cols = [_safe_column(c) for c in columns]
        return [dict(zip(names, row)) for row in zip(*cols)]


def _safe_column(col: list) -> list:
    """``[_safe(v) for v in col]``."""
    if set(map(type, col)) == {tuple}:
        if _all_plain([e for v in col for e in v]):
            return [list(v) for v in col]
    elif _all_plain(col):
        return col
    return [_safe(v) for v in col]


def _all_plain(values: list) -> bool:
    """Whether every value is its own JSON form: text, an int, a bool, None or a finite float."""
    kinds = set(map(type, values))
    if float in kinds:
        floats = values if len(kinds) == 1 else [v for v in values if type(v) is float]
        kinds.discard(float)
        if not all(map(math.isfinite, floats)):
            return False
    return kinds <= _PLAIN


def _safe(v: Any) -> Any:
    t = type(v)
    if t in _AS_IS:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if t is tuple or t is list:
        return [_safe(e) for e in v]
    return json_safe(v)


def _rle_bytes(rle: dict) -> dict:
    c = rle["counts"]
    return {"size": list(rle["size"]), "counts": c.encode("ascii") if isinstance(c, str) else c}
