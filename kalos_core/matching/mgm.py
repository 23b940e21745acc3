"""MGM: cycle-consistent multi-graph matching (docs/method.md §3, paper Eq. 7).

MGM partitions an image's annotations into units so that every unit holds at most
one annotation per rater, every pair inside a unit is a candidate pair, and the total
cost of the pairs inside units is as small as possible. Units are cliques of the
candidate graph, so matches are cycle-consistent by construction (``k ~ l`` and
``l ~ m`` imply ``k ~ m``); Greedy, by contrast, may chain ``k ~ l ~ m`` into one
unit when ``k``-``m`` is not a candidate.

Algorithm
---------
Only candidate pairs with a negative cost are edges: a pair of cost ``>= 0`` cannot
lower the total (with the registered costs that is ψneg at similarity 0 only).

* **Two raters in the image**: the problem is a bipartite matching, solved exactly by
  one Hungarian call (:func:`hungarian_units`) on the image's candidate cost matrix.
* **More raters**: the edge graph is split into connected components; each is solved
  on its own (units never cross components):

  - a component with annotations of two raters: :func:`hungarian_units` on it;
  - otherwise a clique-partition search: a local-search solution
    (:func:`local_search`) is the incumbent, then a depth-first branch and bound
    (:func:`branch_and_bound`) proves it optimal or finds the optimum. The search runs
    on components of at most :data:`EXACT_MAX_SIZE` annotations and stops after
    :data:`NODE_BUDGET` search nodes; a component above the size limit gets the
    local-search solution, one over the node budget the best partition found so far
    (at least as good). Both limits count annotations and nodes, not seconds, so the
    result does not depend on the machine.

Ties
----
Partitions whose costs differ by at most :data:`TOL` are tied.

* Two raters: the units are those of ``scipy.optimize.linear_sum_assignment`` on the
  image's candidate cost matrix (rows: the annotations of the rater with the lower row
  index, columns: the other rater's, both in annotation order; impossible pairs 0), a
  chosen entry being a match only when it is negative. Every entry is ``<= 0``, so the
  negative entries of a minimum-cost assignment form a minimum-cost matching. That
  matrix is the tie rule: a Hungarian that builds it returns the same units, ties
  included. A two-rater component of a larger image: the same, on the component.
* Three or more raters, per component: the lexicographically first unit labelling
  among the tied optima (annotations in index order, each preferring the earliest
  unit it may join).

SHM's Hungarian step prices impossible pairs at a large constant instead, so it first
maximises the *number* of matched pairs, then the cost; MGM minimises the cost alone,
as Eq. 7 says. Where one strong pair is worth more than two weak ones the two differ
(``tests/core/test_mgm.py``); on the LVIS double-annotation file (two raters, no tied
costs) they give the same units on every image.

Memory and time for two raters are those of SHM (one dense assignment per image).
"""

from __future__ import annotations

import numpy as np

from .costs import CostFn
from .problem import MatchProblem
from .solvers import canonical_units, register_solver

#: largest component (annotations) that the branch and bound takes on
EXACT_MAX_SIZE = 40
#: search nodes per component before the branch and bound stops with its best partition
NODE_BUDGET = 10_000
#: costs closer than this are tied
TOL = 1e-9


@register_solver("mgm")
def multi_graph_matching(problem: MatchProblem, threshold: float, cost: CostFn) -> np.ndarray:
    """Minimum-cost partition into cycle-consistent units (see the module docstring)."""
    n = problem.n
    i, j, c = problem.candidates(threshold, cost)
    neg = c < 0
    i, j, c = i[neg], j[neg], c[neg]
    label = np.arange(n)
    if not len(i):
        return canonical_units(label)
    if len(np.unique(problem.rater)) == 2:
        return hungarian_units(problem.rater, i, j, c)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    _, comp = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    size = np.bincount(comp)
    for k in np.flatnonzero(size > 1):
        members = np.flatnonzero(comp == k)
        local = np.full(n, -1)
        local[members] = np.arange(len(members))
        inside = local[i] >= 0
        li, lj, lc = local[i[inside]], local[j[inside]], c[inside]
        rater = problem.rater[members]
        if len(np.unique(rater)) == 2:
            sub = hungarian_units(rater, li, lj, lc)
        else:
            w = np.full((len(members), len(members)), np.inf)
            w[li, lj] = w[lj, li] = lc
            sub = solve_component(w, rater)
        label[members] = members[_first_member(sub)]
    return canonical_units(label)


def hungarian_units(rater: np.ndarray, i: np.ndarray, j: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Minimum-cost matching between the annotations of two raters.

    Parameters
    ----------
    rater : (n,) rater of each annotation; exactly two distinct values.
    i, j, c : the edges (annotation indices, negative costs).

    Returns
    -------
    (n,) unit labels ``0..U-1``: matched pairs share a unit, everything else is alone.
    """
    from scipy.optimize import linear_sum_assignment

    rater = np.asarray(rater)
    rows, cols = np.flatnonzero(rater == rater.min()), np.flatnonzero(rater != rater.min())
    pos = np.empty(len(rater), np.int64)
    pos[rows], pos[cols] = np.arange(len(rows)), np.arange(len(cols))
    swap = rater[i] != rater.min()                  # orient every edge (row rater, column rater)
    a, b = np.where(swap, j, i), np.where(swap, i, j)
    m = np.zeros((len(rows), len(cols)))
    m[pos[a], pos[b]] = c
    r, k = linear_sum_assignment(m)
    hit = m[r, k] < 0
    label = np.arange(len(rater))
    label[cols[k[hit]]] = rows[r[hit]]
    return canonical_units(label)


def partition_cost(w: np.ndarray, label: np.ndarray) -> float:
    """Total cost of the pairs inside units (``inf`` if a unit holds a forbidden pair)."""
    iu, ju = np.triu_indices(len(label), 1)
    same = label[iu] == label[ju]
    return float(w[iu[same], ju[same]].sum())


def solve_component(w: np.ndarray, rater: np.ndarray) -> np.ndarray:
    """Unit labels of one connected component with three or more raters.

    Parameters
    ----------
    w : (m, m) symmetric pair costs (negative), ``inf`` where two annotations may not
        share a unit (same rater, or not a candidate pair) and on the diagonal.
    rater : (m,) rater of each annotation.

    A component whose pairs are all allowed is one unit (every pair lowers the total);
    otherwise :func:`local_search`, then :func:`branch_and_bound` on components of at
    most :data:`EXACT_MAX_SIZE` annotations.
    """
    m = len(w)
    if np.isfinite(w[~np.eye(m, dtype=bool)]).all():
        return np.zeros(m, np.int64)
    start = local_search(w)
    return branch_and_bound(w, rater, start)[0] if m <= EXACT_MAX_SIZE else start


def local_search(w: np.ndarray, max_rounds: int = 20) -> np.ndarray:
    """A good partition of a component, deterministically (the fallback and the incumbent).

    Parameters
    ----------
    w : (m, m) pair costs as for :func:`solve_component`.
    max_rounds : rounds of (a) and (b) at most.

    Starting from singletons, alternately (a) merge the two units whose union lowers
    the total most, while some merge does, and (b) move the single annotation whose
    move (to another unit or to a new unit) lowers the total most, while some move
    does. Ties go to the lowest indices. Stops when a round changes nothing; every step
    keeps a valid partition, and the total only goes down.
    """
    bad = ~np.isfinite(w)
    wf = np.where(bad, 0.0, w)
    label = np.arange(len(w))
    for _ in range(max_rounds):
        merged, label = _merge_units(w, wf, bad, label)
        moved, label = _move_annotations(wf, bad, label)
        if not (merged or moved):
            break
    return canonical_units(label)


def _units(label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit index ``0..U-1`` of each annotation and the (m, U) membership matrix."""
    _, unit = np.unique(label, return_inverse=True)
    one = np.zeros((len(label), unit.max() + 1))
    one[np.arange(len(label)), unit] = 1.0
    return unit, one


def _merge_units(w, wf, bad, label) -> tuple[bool, np.ndarray]:
    """Merge the best pair of units while a merge lowers the total."""
    unit, one = _units(label)
    size = one.shape[1]
    if size == len(label):
        gain = w.copy()                               # singletons: the pair costs themselves
    else:
        gain = one.T @ wf @ one                       # unit x unit: total of the cross pairs
        gain[(one.T @ bad @ one) > 0] = np.inf
        np.fill_diagonal(gain, np.inf)
    changed = False
    while True:
        a, b = divmod(int(np.argmin(gain)), size)
        if not gain[a, b] < -TOL:
            return changed, unit
        a, b = min(a, b), max(a, b)
        unit[unit == b] = a
        gain[a] = gain[a] + gain[b]
        gain[:, a] = gain[a]
        gain[a, a] = np.inf
        gain[b, :] = gain[:, b] = np.inf
        changed = True


def _move_annotations(wf, bad, label) -> tuple[bool, np.ndarray]:
    """Move the best single annotation while a move lowers the total."""
    unit, one = _units(label)
    to_unit, clash = wf @ one, bad @ one              # annotation x unit
    rows, changed = np.arange(len(unit)), False
    for _ in range(50 * len(unit)):
        own = to_unit[rows, unit]
        delta = to_unit - own[:, None]
        delta[clash > 0] = np.inf                     # also the annotation's own unit (diagonal)
        delta = np.column_stack([delta, -own])        # last column: a new unit of its own
        x, v = divmod(int(np.argmin(delta)), delta.shape[1])
        if not delta[x, v] < -TOL:
            break
        if v == to_unit.shape[1]:
            to_unit, clash = np.column_stack([to_unit, np.zeros(len(rows))]), np.column_stack([clash, np.zeros(len(rows))])
        to_unit[:, unit[x]] -= wf[:, x]
        clash[:, unit[x]] -= bad[:, x]
        to_unit[:, v] += wf[:, x]
        clash[:, v] += bad[:, x]
        unit[x], changed = v, True
    return changed, unit


def branch_and_bound(w: np.ndarray, rater: np.ndarray, start: np.ndarray,
                     budget: int | None = None) -> tuple[np.ndarray, bool]:
    """The optimal partition of a component, or the best within ``budget`` search nodes.

    Parameters
    ----------
    w : (m, m) pair costs as for :func:`solve_component`.
    rater : (m,) rater of each annotation.
    start : a valid partition (the incumbent), returned if nothing beats it.
    budget : search nodes before stopping (default :data:`NODE_BUDGET`).

    Returns
    -------
    The unit labels, and whether the search finished (the labels are optimal).

    Annotations are placed in index order; each may join an earlier unit whose members
    are all allowed partners (in the order the units were opened) or open a new unit,
    so the labellings are visited in lexicographic order. A branch is cut when its cost
    plus a lower bound for the annotations still to place cannot beat the incumbent.
    An unplaced annotation ``t`` joins at most one of the open units, so its pairs with
    placed annotations cost at least ``min(0, cheapest open unit it may join)``; its
    pairs with unplaced annotations before it hold at most one per rater, so they cost
    at least the sum over raters of the most negative such pair (:func:`_unplaced_bounds`).
    The incumbent's cost is first raised by ``2 * TOL``, so that an optimum tied with
    it is still visited and the lexicographically first optimum wins.
    """
    m = len(w)
    budget = NODE_BUDGET if budget is None else budget
    best = [partition_cost(w, start) + 2 * TOL, canonical_units(start)]
    later = _unplaced_bounds(w, rater)
    joined = np.empty((m, m))       # row u: sum of the w rows of unit u's members (inf: may not join)
    size = [0]                      # open units
    label = [0] * m
    nodes = [0]

    def place(k: int, cost: float) -> None:
        if k == m:
            if cost < best[0] - TOL:
                best[0], best[1] = cost, np.array(label)
            return
        nodes[0] += 1
        if nodes[0] > budget:
            return
        units = size[0]
        add = joined[:units, k:]
        bound = cost + later[k] + (np.minimum(add.min(0), 0.0).sum() if units else 0.0)
        if bound >= best[0] - TOL:
            return
        for u, cheaper in enumerate(joined[:units, k].tolist()):
            if cheaper != np.inf:
                old = joined[u].copy()
                joined[u] += w[k]
                label[k] = u
                place(k + 1, cost + cheaper)
                joined[u] = old
        joined[units] = w[k]
        size[0], label[k] = units + 1, units
        place(k + 1, cost)
        size[0] = units

    place(0, 0.0)
    return canonical_units(best[1]), nodes[0] <= budget


def _unplaced_bounds(w: np.ndarray, rater: np.ndarray) -> np.ndarray:
    """``bound[k]``: a lower bound on the cost of the pairs among annotations ``k..m-1``
    (each ``t`` pairs with at most one annotation per rater among ``k..t-1``)."""
    m = len(w)
    low = np.where(np.isfinite(w), np.minimum(w, 0.0), 0.0).tolist()
    rows = np.unique(rater, return_inverse=True)[1].tolist()
    pairs = np.zeros((m + 1, m + 1))   # pairs[k, t]: bound for t's partners among k..t-1
    for t in range(m):
        per_rater, total = [0.0] * (max(rows) + 1), 0.0
        for k in range(t - 1, -1, -1):
            r = rows[k]
            if low[t][k] < per_rater[r]:
                total += low[t][k] - per_rater[r]
                per_rater[r] = low[t][k]
            pairs[k, t] = total
    return pairs.sum(1)


def _first_member(sub: np.ndarray) -> np.ndarray:
    """For unit labels of a component, the index of each annotation's unit's first member."""
    _, first = np.unique(sub, return_index=True)
    return first[sub]
