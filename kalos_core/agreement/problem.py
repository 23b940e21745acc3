"""From an image record to its matching problem (canonical order, similarities)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..columns import AnnotationColumns
from ..data import Annotation, ImageRecord
from ..geometry.registry import DistanceSpec
from ..matching.problem import MatchProblem
from ..reliability import build_cells, empty_image_cells  # noqa: F401  (empty_image_cells re-exported)

if TYPE_CHECKING:
    from ..matching.costs import CostFn
    from ..matching.solvers import SolverFn


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    raise TypeError(type(value).__name__)


def annotation_key(ann: Annotation) -> tuple:
    """Sort key that does not depend on input order: rater, class, geometry, id."""
    g = ann.geometry
    if isinstance(g, (tuple, list)) and all(isinstance(v, (int, float)) for v in g):
        g = (0, *map(float, g))          # boxes: cheap numeric key
    else:
        g = (1, json.dumps(g, sort_keys=True, default=_plain))
    return (ann.rater, ann.category, g, repr(ann.id))


@dataclass
class ImageProblem:
    """One image ready for matching: rows, annotations in canonical order, similarities."""

    image: ImageRecord
    rows: tuple[str, ...]
    annotations: list[Annotation]
    problem: MatchProblem
    row_classes: list | None
    floor: float = 0.0           #: lowest threshold the similarities were computed for

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def match(self, threshold: float, solver: SolverFn, cost: CostFn,
              keep: np.ndarray | None = None, rows: np.ndarray | None = None):
        """Units and reliability cells, optionally for a subset of annotations/rows.

        ``keep`` selects annotations; ``rows`` (sorted row indices) the rows that take part,
        renumbered ``0..len(rows)-1`` in the returned cells.
        """
        fast = getattr(solver, "on_sorted_pairs", None)
        if fast is not None and threshold >= self.floor:
            units, prob_rater, category = self._match_sorted(fast, threshold, cost, keep)
        else:
            prob = self.problem if keep is None else self.problem.subset(keep)
            units, prob_rater, category = solver(prob, threshold, cost), prob.rater, prob.category
        if rows is None:
            rater, n_rows, rc = prob_rater, self.n_rows, self.row_classes
        else:
            remap = np.full(self.n_rows, -1)
            remap[rows] = np.arange(len(rows))
            rater, n_rows = remap[prob_rater], len(rows)
            rc = None if self.row_classes is None else [self.row_classes[r] for r in rows]
        return units, build_cells(units, rater, category, n_rows, rc)

    def sorted_pairs(self, cost: CostFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Candidate pairs ``(i, j, similarity)`` at :attr:`floor`, in greedy's acceptance order
        (cost, i, j); sorted once per cost function."""
        cache = self.__dict__.setdefault("_sorted_pairs", {})
        if cost not in cache:
            i, j, c = self.problem.candidates(self.floor, cost)
            order = np.lexsort((j, i, c))
            i, j = i[order], j[order]
            cache[cost] = (i, j, self.problem.sim[i, j])
        return cache[cost]

    def _match_sorted(self, fast, threshold: float, cost: CostFn, keep: np.ndarray | None):
        """Units, rater rows and classes of a (subset) problem from the image's candidate pairs,
        sorted once per cost function (the same units as the solver on the subset problem)."""
        i, j, s = self.sorted_pairs(cost)
        ok = s >= threshold
        p = self.problem
        if keep is None:
            return fast(p.rater, i[ok], j[ok]), p.rater, p.category
        new = np.cumsum(keep) - 1
        ok &= keep[i] & keep[j]
        rater, category = p.rater[keep], p.category[keep]
        return fast(rater, new[i[ok]], new[j[ok]]), rater, category


def prepare_image(image: ImageRecord, spec: DistanceSpec, floor: float = 0.0) -> ImageProblem:
    """Canonicalise an image and compute its similarity matrix once."""
    rows = tuple(sorted(image.raters))
    row_index = {r: k for k, r in enumerate(rows)}
    if isinstance(image.annotations, AnnotationColumns):
        anns, rater = _canonical_columns(image.annotations, row_index)
        category = anns.category
    else:
        anns = sorted(image.annotations, key=annotation_key)
        for a in anns:
            if a.rater not in row_index:
                raise ValueError(f"image {image.id}: annotation {a.id} has rater {a.rater!r}, "
                                 f"who is not assigned to the image (assigned: {list(rows)})")
        rater = np.array([row_index[a.rater] for a in anns], dtype=np.int64)
        category = np.array([a.category for a in anns], dtype=np.int64)
    n = len(anns)
    if n:
        prep = spec.prepare(image, anns)
        need = rater[:, None] != rater[None, :]
        sim = np.where(need, spec.similarity(prep, prep, need=need, floor=floor), 0.0)
        sim = np.maximum(sim, sim.T)  # guard against asymmetric round-off
    else:
        sim = np.zeros((0, 0))
    row_classes = None
    if image.rater_classes:
        row_classes = [image.rater_classes.get(r) for r in rows]
    return ImageProblem(image, rows, anns, MatchProblem(sim, rater, category), row_classes, floor)


def _canonical_columns(cols: AnnotationColumns, row_index: dict) -> tuple[AnnotationColumns, np.ndarray]:
    """Columns in :func:`annotation_key` order, and their row indices."""
    row_of_code = np.array([row_index[r] for r in cols.names], dtype=np.int64)
    row = row_of_code[cols.rater] if len(cols) else np.zeros(0, np.int64)
    order = cols.canonical_order(row)
    return cols.take(order), row[order]
