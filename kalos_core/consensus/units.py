"""A consensus run's units as columns: every annotation once, grouped by unit, votes counted.

:func:`unit_table` replaces the per-unit Python objects of the former loop (``Counter`` of the
classes, ``sorted`` members, one median per unit) by grouped numpy operations over all the
data set's annotations; :func:`median_boxes` is the per-coordinate median of each unit's
agreeing boxes. The order and the values are those of the loop, to the bit
(tests/core/test_consensus_paths.py holds them equal on random data):

* units: image by image (data set order), within an image by ``(len(unit), unit)``;
* members of a unit: by rater name, in the image's order among one rater's labels;
* class: the most voted; a tie keeps the tied classes in ascending order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..columns import AnnotationColumns


class UnitTable(NamedTuple):
    """Annotations in member order (``ids``, ``rater``: codes into ``rater_names``, ``xywh``,
    ``weight``, ``objects``; ``agreeing`` marks the winning classes' labels) and per unit
    (``start``: its first member, ``names``, ``unit_image``, ``top``: support, ``n_winners``: the
    number of classes with that support: more than one is a tie); the runs of one class within a
    unit give :meth:`winners` and :meth:`votes`."""

    ids: list
    rater: np.ndarray
    rater_names: list
    xywh: np.ndarray | None
    weight: np.ndarray | None
    objects: list | None
    agreeing: np.ndarray
    start: np.ndarray
    names: list
    unit_image: np.ndarray
    top: np.ndarray
    n_winners: np.ndarray
    runs: tuple                   #: per unit's first run (units + 1), class codes, sizes, winning
    classes: list                 #: the class of each class code

    def winners(self, unit: int) -> list:
        """The unit's most voted classes, ascending."""
        first, cls, _, win = self.runs
        a, b = first[unit], first[unit + 1]
        return [self.classes[c] for c in cls[a:b][win[a:b]].tolist()]

    def first_winners(self, units: np.ndarray) -> list:
        """Of each of ``units``, the lowest of its most voted classes."""
        first, cls, _, win = self.runs
        winning = np.flatnonzero(win)
        return [self.classes[c] for c in cls[winning[np.searchsorted(winning, first[units])]].tolist()]

    def votes(self, unit: int) -> dict:
        """``{class: labels}`` of the unit, classes ascending."""
        first, cls, size, _ = self.runs
        a, b = first[unit], first[unit + 1]
        return {self.classes[c]: k for c, k in zip(cls[a:b].tolist(), size[a:b].tolist())}


def _unit_codes(values: list) -> np.ndarray:
    """Each unit name's rank among the distinct names sorted by ``(len(name), name)`` (a sort by
    name, then a stable one by length: the same order, without a key tuple per name)."""
    distinct = sorted(sorted(dict.fromkeys(values)), key=len)
    rank = dict(zip(distinct, range(len(distinct))))
    return np.array(list(map(rank.__getitem__, values)), np.int64).reshape(-1)


def _block_codes(unit_of, ids: list, image_of: np.ndarray) -> tuple | None:
    """``(units, block image, prefixes)`` of the annotations ``ids`` from an agreement run's own map
    (:meth:`LabelMap.unit_codes`) when it read them in this order, one block image per data set
    image, each id once; else None. Within an image the names are one prefix and ``str(unit)``, so
    the units' order by ``(len(name), name)`` is that of their non-negative codes."""
    got = unit_of.unit_codes() if hasattr(unit_of, "unit_codes") else None
    if got is None or got[0] != ids or len(set(ids)) != len(ids):
        return None
    _, units, image, prefixes = got
    if len(units) and (units.min() < 0 or ((image_of[1:] == image_of[:-1]) & (image[1:] != image[:-1])).any()):
        return None
    return units.astype(np.int64), image, prefixes


def _names(coded: tuple, at: np.ndarray) -> list[str]:
    """The unit names of the annotations at ``at`` (positions as read)."""
    units, image, prefixes = coded
    return [prefixes[i] + str(u) for i, u in zip(image[at].tolist(), units[at].tolist())]


def _ranked(parts: list[tuple[tuple, np.ndarray]]) -> tuple[np.ndarray, list]:
    """Per image ``(names, codes into names)`` -> codes into all the names sorted, and those names."""
    names = sorted({n for ns, _ in parts for n in ns})
    rank = {n: i for i, n in enumerate(names)}
    codes = [np.array([rank[n] for n in ns], np.int64)[np.asarray(c, np.int64)] for ns, c in parts]
    return np.concatenate(codes or [np.empty(0, np.int64)]), names


def _columns(dataset, boxes: bool):
    """Every annotation's id, rater, class, image index (and box, weight; or the objects)."""
    ids, raters, cats, xywh, weight, objects, sizes = [], [], [], [], [], [], []
    for image in dataset.images:
        anns = image.annotations
        sizes.append(len(anns))
        if isinstance(anns, AnnotationColumns):
            ids += anns.ids
            raters.append((anns.names, anns.rater))
            if len(anns):
                cats.append(anns.category)
            xywh.append(anns.boxes.reshape(-1, 4))
            weight.append(np.ones(len(anns)))
            continue
        anns = list(anns)
        ids += [a.id for a in anns]
        index = {r: k for k, r in enumerate(dict.fromkeys(a.rater for a in anns))}
        raters.append((tuple(index), [index[a.rater] for a in anns]))
        if anns:
            cats.append(np.asarray([a.category for a in anns]))
        if boxes:
            xywh.append(np.array([a.geometry for a in anns], float).reshape(-1, 4))
            weight.append(np.array([1.0 if a.score is None else float(a.score) for a in anns]))
        objects += anns
    image_of = np.repeat(np.arange(len(sizes)), sizes)
    classes, cat_rank = np.unique(np.concatenate(cats or [np.empty(0, np.int64)]), return_inverse=True)
    rater, rater_names = _ranked(raters)
    if not boxes:
        return ids, rater, rater_names, cat_rank, classes.tolist(), image_of, None, None, objects
    return ids, rater, rater_names, cat_rank, classes.tolist(), image_of, \
        np.concatenate(xywh or [np.empty((0, 4))]), np.concatenate(weight or [np.empty(0)]), None


def unit_table(dataset, unit_of: Mapping[Any, str]) -> UnitTable:
    """The units of ``unit_of`` (annotation id -> unit id) over ``dataset``'s annotations."""
    boxes = dataset.kind == "box"
    ids, rater, rater_names, cat_rank, classes, image_of, xywh, weight, objects = _columns(dataset, boxes)
    coded = _block_codes(unit_of, ids, image_of)
    if coded is None:
        lookup = unit_of.as_dict() if hasattr(unit_of, "as_dict") else unit_of
        unit_rank = _unit_codes([lookup[i] for i in ids])
    else:
        unit_rank = coded[0]
    order = np.lexsort((rater, unit_rank, image_of))
    unit_rank, cat_rank, image_of = unit_rank[order], cat_rank[order].astype(np.int64), image_of[order]
    n = len(order)
    new = np.ones(n, bool)
    new[1:] = (unit_rank[1:] != unit_rank[:-1]) | (image_of[1:] != image_of[:-1])
    group = np.cumsum(new) - 1
    start = np.flatnonzero(new)
    # votes: runs of one class within a unit
    by_class = np.lexsort((cat_rank, group))
    g, c = group[by_class], cat_rank[by_class]
    run_new = np.ones(n, bool)
    run_new[1:] = (g[1:] != g[:-1]) | (c[1:] != c[:-1])
    run_start = np.flatnonzero(run_new)
    run_size = np.diff(np.append(run_start, n))
    run_group, run_class = g[run_start], c[run_start]
    top = np.zeros(len(start), np.int64)
    np.maximum.at(top, run_group, run_size)
    win = run_size == top[run_group]
    agreeing = np.empty(n, bool)
    agreeing[by_class] = np.repeat(win, run_size)
    n_winners = np.bincount(run_group[win], minlength=len(start))
    runs = (np.searchsorted(run_group, np.arange(len(start) + 1)), run_class, run_size, win)
    order_l = order.tolist()
    member_ids = [ids[k] for k in order_l]
    return UnitTable(
        member_ids, rater[order], rater_names,
        None if xywh is None else xywh[order], None if weight is None else weight[order],
        None if objects is None else [objects[k] for k in order_l], agreeing, start,
        [lookup[member_ids[s]] for s in start.tolist()] if coded is None else _names(coded, order[start]),
        image_of[start], top, n_winners, runs, classes)


def median_boxes(table: UnitTable) -> np.ndarray:
    """Per unit, the per-coordinate median of its agreeing boxes as ``x1, y1, x2, y2`` (``(units, 4)``):
    the middle value, or the two middle ones' sum halved (as ``np.median``, except that two -0.0
    give -0.0 as in kalos 0.8's per-unit fusion, where ``np.median`` gives 0.0). The units of one
    size are sorted together, a row each (a stable sort: equal values, -0.0 and 0.0, keep the
    member order; NaN last)."""
    keep = np.flatnonzero(table.agreeing)
    b = table.xywh[keep]
    xyxy = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1)
    group = np.searchsorted(table.start, keep, side="right") - 1
    size = np.bincount(group, minlength=len(table.start))
    first = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    out = np.empty((len(table.start), 4))
    for k in np.unique(size).tolist():
        units = np.flatnonzero(size == k)
        v = np.sort(xyxy[first[units, None] + np.arange(k)], axis=1, kind="stable")   # (units, k, 4)
        lo, hi = (k - 1) // 2, k // 2
        out[units] = v[:, hi] if lo == hi else (v[:, lo] + v[:, hi]) / 2
    return out
