"""Per-image diagnostics that re-use the matching problem (METHOD.md §6).

Each function takes an :class:`ImageProblem` (and the image's own α or cells
where needed) and returns plain dicts; :mod:`kalos_core.agreement` averages
them over images.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .matching.costs import CostFn
from .matching.solvers import SolverFn
from .problem import ImageProblem, empty_image_cells
from .reliability import NO_OBJECT, Cells, alpha


def class_alphas(cells: Cells) -> dict[int, float]:
    """α of the units in which any rater used class ``c``, for every class present."""
    out = {}
    classes = np.unique(cells.value[cells.value != NO_OBJECT])
    for c in classes.tolist():
        hit = np.zeros(cells.n_units, bool)
        hit[cells.unit[cells.value == c]] = True
        out[int(c)] = alpha(cells.select_units(hit))
    return out


def vitality(ip: ImageProblem, image_alpha: float, threshold: float,
             solver: SolverFn, cost: CostFn) -> dict[str, float]:
    """``V_r = α_R - α_{R without r}`` for each row; needs at least three rows."""
    out: dict[str, float] = {}
    if ip.n_rows < 3:
        return out
    for r, name in enumerate(ip.rows):
        rows = np.array([k for k in range(ip.n_rows) if k != r])
        keep = ip.problem.rater != r
        units, cells = ip.match(threshold, solver, cost, keep=keep, rows=rows)
        out[name] = image_alpha - alpha(cells)
    return out


def pairwise(ip: ImageProblem, threshold: float, solver: SolverFn,
             cost: CostFn) -> dict[tuple[str, str], tuple[float, Cells]]:
    """α of every pair of rows computed on the two raters alone, with their cells.

    An image where the pair has no unit contributes one virtual NO_OBJECT unit
    to the global pairwise matrix, as in the global α.
    """
    out = {}
    for p, q in combinations(range(ip.n_rows), 2):
        keep = (ip.problem.rater == p) | (ip.problem.rater == q)
        units, cells = ip.match(threshold, solver, cost, keep=keep, rows=np.array([p, q]))
        if cells.n_units == 0:
            cells = empty_image_cells(2)
        out[(ip.rows[p], ip.rows[q])] = (alpha(cells), cells)
    return out


def intra_rater(ip: ImageProblem, threshold: float, solver: SolverFn,
                cost: CostFn) -> dict[str, float]:
    """α among the sessions of each rater who labelled this image more than once."""
    groups: dict[str, list[int]] = {}
    for k, row in enumerate(ip.rows):
        groups.setdefault(ip.image.base_rater(row), []).append(k)
    out = {}
    for rater, rows in groups.items():
        if len(rows) < 2:
            continue
        keep = np.isin(ip.problem.rater, rows)
        _, cells = ip.match(threshold, solver, cost, keep=keep, rows=np.array(rows))
        out[rater] = alpha(cells)
    return out


def localisation_sensitivity(ip: ImageProblem, thresholds, solver: SolverFn,
                             cost: CostFn) -> dict[float, float]:
    """The image's α at each similarity threshold."""
    return {float(t): alpha(ip.match(float(t), solver, cost)[1]) for t in thresholds}
