"""Correspondence solvers (METHOD.md §3): annotations -> disjoint units.

Every solver takes a :class:`MatchProblem`, the similarity threshold and a
cost function, and returns one unit label per annotation (``0..U-1``, in
order of first appearance), with at most one annotation per rater in a unit.
Ties are broken by annotation index, so a solver is deterministic given the
canonical annotation order that :mod:`kalos_core.agreement` establishes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .costs import CostFn
from .problem import MatchProblem, canonical_units

SolverFn = Callable[[MatchProblem, float, CostFn], np.ndarray]
SOLVERS: dict[str, SolverFn] = {}


def register_solver(name: str):
    def deco(fn: SolverFn) -> SolverFn:
        SOLVERS[name] = fn
        return fn

    return deco


def get_solver(name: str) -> SolverFn:
    try:
        return SOLVERS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {', '.join(sorted(SOLVERS))}") from None


@register_solver("greedy")
def greedy(problem: MatchProblem, threshold: float, cost: CostFn) -> np.ndarray:
    """Accept candidate pairs by ascending cost unless a unit would hold one rater twice."""
    i, j, c = problem.candidates(threshold, cost)
    order = np.lexsort((j, i, c))
    return greedy_on_sorted_pairs(problem.rater, i[order], j[order])


def greedy_on_sorted_pairs(rater: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Greedy's union step on candidate pairs already in acceptance order (cost, i, j).

    Filtering a sorted pair list (a higher threshold, a subset of annotations renumbered
    in order) keeps it sorted, so :meth:`kalos_core.problem.ImageProblem.match` sorts an
    image's pairs once and re-matches subsets through this function.
    """
    n = len(rater)
    rater = np.asarray(rater, np.int64)
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    parent_arr = np.arange(n)
    mask = (np.int64(1) << rater) if n and int(rater.max()) < 62 else None
    if mask is not None and len(i):
        # A pair that is the first pair of both its annotations joins two singletons of different
        # raters: greedy accepts it whatever it did before. Joining it up front changes no other
        # decision (it touches no set an earlier pair looks at; later pairs come after it anyway),
        # so only the other pairs go through the loop.
        first = np.full(n, len(i))
        np.minimum.at(first, i, np.arange(len(i)))
        np.minimum.at(first, j, np.arange(len(i)))
        k = np.arange(len(i))
        sure = (first[i] == k) & (first[j] == k) & (rater[i] != rater[j])
        lo, hi = np.minimum(i[sure], j[sure]), np.maximum(i[sure], j[sure])
        parent_arr[hi] = lo
        mask[lo] |= mask[hi]
        i, j = i[~sure], j[~sure]
    parent = parent_arr.tolist()
    raters = mask.tolist() if mask is not None else [1 << r for r in rater.tolist()]
    for a, b in zip(i.tolist(), j.tolist()):
        while parent[a] != a:                # find with path halving, inlined (the hot loop)
            parent[a] = a = parent[parent[a]]
        while parent[b] != b:
            parent[b] = b = parent[parent[b]]
        if a == b or raters[a] & raters[b]:
            continue
        if a > b:
            a, b = b, a
        parent[b] = a
        raters[a] |= raters[b]
    # a root is its set's smallest annotation (the smaller root always wins): units numbered by
    # first annotation are the roots in index order; roots found by pointer jumping
    root = np.array(parent, dtype=np.int64)
    while True:
        up = root[root]
        if np.array_equal(up, root):
            break
        root = up
    is_root = root == np.arange(n)
    return (np.cumsum(is_root) - 1)[root]


#: solver -> its union step on pre-sorted pairs, for solvers that can re-match that way
SORTED_PAIR_SOLVERS = {greedy: greedy_on_sorted_pairs}


@register_solver("shm")
def sequential_hungarian(problem: MatchProblem, threshold: float, cost: CostFn) -> np.ndarray:
    """Sequential Hungarian matching: add raters one at a time (in row order),
    matching the newcomer against each earlier rater's still-open units."""
    from scipy.optimize import linear_sum_assignment   # here: importing scipy.optimize takes 0.3 s

    n = problem.n
    unit = np.full(n, -1)
    if n == 0:
        return unit
    rows = np.unique(problem.rater)
    members: list[dict[int, int]] = []  # unit -> {rater row: annotation}
    sim, cat = problem.sim, problem.category
    for step, r in enumerate(rows):
        open_new = list(np.flatnonzero(problem.rater == r))
        for p in rows[:step]:
            slots = [u for u, m in enumerate(members) if p in m and r not in m]
            if not slots or not open_new:
                continue
            prev = np.array([members[u][p] for u in slots])
            new = np.array(open_new)
            s = sim[np.ix_(prev, new)]
            ok = s >= threshold
            if not ok.any():
                continue
            cst = np.where(ok, cost(s, cat[prev][:, None] == cat[new][None, :]), 0.0)
            big = 1.0 + np.abs(cst).max() * (ok.size + 1)
            rr, cc = linear_sum_assignment(np.where(ok, cst, big))
            taken = set()
            for a, b in zip(rr, cc):
                if ok[a, b]:
                    members[slots[a]][r] = int(new[b])
                    unit[new[b]] = slots[a]
                    taken.add(int(new[b]))
            open_new = [x for x in open_new if x not in taken]
        for x in open_new:
            unit[x] = len(members)
            members.append({r: int(x)})
    return canonical_units(unit)


@register_solver("ahc")
def agglomerative(problem: MatchProblem, threshold: float, cost: CostFn) -> np.ndarray:
    """Constrained agglomerative clustering with complete linkage on the cost.

    Two clusters may merge only if every cross pair is a candidate
    (different raters, ``s >= threshold``); the cheapest admissible merge
    (largest worst-pair cost is smallest) is taken first.
    """
    n = problem.n
    label = np.arange(n)
    if n < 2:
        return canonical_units(label)
    sim = problem.sim
    same_class = problem.category[:, None] == problem.category[None, :]
    d = cost(sim, same_class).astype(float)
    forbidden = (sim < threshold) | (problem.rater[:, None] == problem.rater[None, :])
    d[forbidden] = np.inf
    np.fill_diagonal(d, np.inf)
    rows = np.unique(problem.rater, return_inverse=True)[1]
    member = np.zeros((n, rows.max() + 1), bool)
    member[np.arange(n), rows] = True
    active = np.ones(n, bool)
    while True:
        flat = int(np.argmin(d))
        a, b = divmod(flat, n)
        if not np.isfinite(d[a, b]):
            break
        if a > b:
            a, b = b, a
        label[label == b] = a
        member[a] |= member[b]
        merged = np.maximum(d[a], d[b])
        active[b] = False
        clash = (member & member[a]).any(1)
        merged[clash | ~active] = np.inf
        merged[a] = np.inf
        d[a, :] = merged
        d[:, a] = merged
        d[b, :] = np.inf
        d[:, b] = np.inf
    return canonical_units(label)
