"""Annotations held as columns: one image's boxes as arrays instead of one object each.

The columnar COCO reader (:mod:`kalos_core.io.columnar`) gives every image an
:class:`AnnotationColumns` as its ``annotations``: a read-only sequence whose
items are the same :class:`~kalos_core.data.Annotation` objects the
per-annotation reader builds (made on demand), while the engine's hot path
(:func:`kalos_core.agreement.problem.prepare_image`, the box distances, the map step)
reads the arrays directly.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .coincidence import value_codes
from .data import Annotation


class AnnotationColumns(Sequence):
    """The boxes of one image: ids, rater codes, class ids and ``(x, y, w, h)`` rows.

    ``rater[k]`` indexes ``names`` (the image's raters); ``boxes`` is ``(n, 4)`` float.
    Items are :class:`Annotation` (``geometry`` and ``bbox`` the same tuple of floats),
    equal to what the per-annotation reader builds.
    """

    __slots__ = ("ids", "names", "rater", "category", "boxes", "with_bbox")

    def __init__(self, ids: list, names: tuple[str, ...], rater: np.ndarray, category: np.ndarray,
                 boxes: np.ndarray, with_bbox: bool = True) -> None:
        self.ids = ids
        self.names = names
        self.rater = rater
        self.category = category
        self.boxes = boxes
        self.with_bbox = with_bbox   #: items carry their box as ``bbox`` too (the COCO reader's convention)

    def __len__(self) -> int:
        return len(self.ids)

    def _make(self, k: int) -> Annotation:
        box = tuple(self.boxes[k].tolist())
        return Annotation(self.ids[k], self.names[self.rater[k]], int(self.category[k]), box,
                          box if self.with_bbox else None)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._make(i) for i in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError("annotation index out of range")
        return self._make(k % n)

    def __iter__(self):
        names, with_bbox = self.names, self.with_bbox
        for aid, r, c, box in zip(self.ids, self.rater.tolist(), self.category.tolist(), self.boxes.tolist()):
            box = tuple(box)
            yield Annotation(aid, names[r], c, box, box if with_bbox else None)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (list, tuple, AnnotationColumns)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AnnotationColumns({len(self)} boxes, raters {list(self.names)})"

    def rater_names(self) -> list[str]:
        names = self.names
        return [names[r] for r in self.rater.tolist()]

    def take(self, order: np.ndarray) -> "AnnotationColumns":
        """The annotations at ``order`` (a new object)."""
        ids = self.ids
        return AnnotationColumns([ids[k] for k in order.tolist()], self.names, self.rater[order],
                                 self.category[order], self.boxes[order], self.with_bbox)

    def canonical_order(self, row: np.ndarray) -> np.ndarray:
        """The order of :func:`kalos_core.agreement.problem.annotation_key` (row name, class, box, ``repr(id)``).

        ``row[k]`` is annotation k's position among the image's sorted rater names.
        """
        return canonical_order(row, self.category, self.boxes, self.ids)


def canonical_order(row: np.ndarray, category: np.ndarray, boxes: np.ndarray, ids: list,
                    image: np.ndarray | None = None) -> np.ndarray:
    """Sort order by (image,) row, class, box, then ``repr(id)`` among equal boxes - the order of
    :func:`kalos_core.agreement.problem.annotation_key` within each image.

    Sorted on (image, row, class) as one integer and the box's x first; the rare runs of equal
    x are sorted by the rest of the box, and equal boxes by ``repr(id)``."""
    b = np.asarray(boxes, dtype=float).reshape(-1, 4)
    n = len(b)
    if n < 2:
        return np.arange(n)
    classes, cat_rank = value_codes(np.asarray(category, np.int64))
    group = np.asarray(row, np.int64) * len(classes) + cat_rank
    if image is not None:
        group = np.asarray(image, np.int64) * (int(group.max()) + 1) + group
    order = np.lexsort((b[:, 0], group))
    g, x = group[order], b[order, 0]
    tie = (g[1:] == g[:-1]) & (x[1:] == x[:-1])
    if not tie.any():
        return order
    run = np.concatenate([[0], np.cumsum(~tie)])                 # run of equal (group, x) of each position
    member = np.zeros(n, bool)
    member[:-1] |= tie
    member[1:] |= tie
    pos = np.flatnonzero(member)
    sub = order[pos]
    order[pos] = sub[np.lexsort((b[sub, 3], b[sub, 2], b[sub, 1], run[pos]))]
    same = tie & (b[order[1:]] == b[order[:-1]]).all(axis=1)
    if same.any():   # equal boxes of one rater and class: the id's repr decides, as in annotation_key
        starts = np.flatnonzero(np.diff(np.concatenate([[0], same.astype(np.int8)])) == 1)
        for s in starts.tolist():
            e = s + 1
            while e < len(same) and same[e]:
                e += 1
            order[s:e + 1] = sorted(order[s:e + 1].tolist(), key=lambda k: repr(ids[k]))
    return order


def ids_and_raters(anns: Sequence[Annotation]) -> tuple[list, list[str]]:
    """Annotation ids and rater rows of a list of annotations or of :class:`AnnotationColumns`."""
    if isinstance(anns, AnnotationColumns):
        return anns.ids, anns.rater_names()
    return [a.id for a in anns], [a.rater for a in anns]


__all__ = ["AnnotationColumns", "canonical_order", "ids_and_raters"]
