"""Correspondence solvers (docs/method.md §3): annotations -> disjoint units.

Every solver takes a :class:`MatchProblem`, the similarity threshold and a
cost function, and returns one unit label per annotation (``0..U-1``, in
order of first appearance), with at most one annotation per rater in a unit.
Ties are broken by annotation index, so a solver is deterministic given the
canonical annotation order that :mod:`kalos_core.agreement` establishes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..registry import Registry

if TYPE_CHECKING:
    from .costs import CostFn
    from .problem import MatchProblem

SolverFn = Callable[["MatchProblem", float, "CostFn"], np.ndarray]
SOLVERS: Registry[SolverFn] = Registry("solver")
register_solver = SOLVERS.register
get_solver = SOLVERS.get


def canonical_units(labels: np.ndarray) -> np.ndarray:
    """Renumber unit labels ``0..U-1`` in order of each unit's first annotation."""
    labels = np.asarray(labels)
    if len(labels) == 0:
        return labels.astype(np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse].astype(np.int64)


@register_solver("greedy")
def greedy(problem: MatchProblem, threshold: float, cost: CostFn) -> np.ndarray:
    """Accept candidate pairs by ascending cost unless a unit would hold one rater twice."""
    i, j, c = problem.candidates(threshold, cost)
    order = np.lexsort((j, i, c))
    return greedy_on_sorted_pairs(problem.rater, i[order], j[order])


def greedy_on_sorted_pairs(rater: np.ndarray, i: np.ndarray, j: np.ndarray, max_rounds: int = 64) -> np.ndarray:
    """Greedy's union step on candidate pairs already in acceptance order (cost, i, j).

    Filtering a sorted pair list (a higher threshold, a subset of annotations renumbered
    in order) keeps it sorted, so :meth:`kalos_core.agreement.problem.ImageProblem.match` sorts an
    image's pairs once and re-matches subsets through this function.

    Decided in whole-array rounds, each exactly what the pair-by-pair loop
    (:func:`greedy_union_reference`) decides. The invariant: a set is only ever changed by a
    pair that is the first pending pair of the sets it joins, so every pending pair touching a
    set comes after all the pairs that built it, and that stays true as sets merge. Hence the
    sets a pending pair sees now hold only pairs the loop has accepted before its turn: they
    are part of what the loop will see then. So, per round:

    * a pair whose two annotations already share a set, or whose sets already hold a common
      rater, is refused whenever its turn comes (the loop's sets are larger): dropped now;
    * a pair that is the first pending pair of both its sets sees them exactly as the loop
      will (no earlier pair touching them is left): accepted now. Such pairs touch disjoint
      sets, so they merge together.

    Every round accepts at least the first pending pair; after ``max_rounds`` (long chains
    of dependent pairs) the loop finishes from the rounds' sets, which the same invariant
    makes exact.
    """
    n = len(rater)
    rater = np.asarray(rater, np.int64)
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    if not n or int(rater.max()) >= 62:          # the raters of a set as bits of one int64
        return _union_loop(np.arange(n).tolist(), [1 << r for r in rater.tolist()], i, j)
    root, bits = np.arange(n), np.int64(1) << rater
    for _ in range(max_rounds):
        ra, rb = root[i], root[j]
        live = (ra != rb) & ((bits[ra] & bits[rb]) == 0)
        i, j, ra, rb = i[live], j[live], ra[live], rb[live]
        if not len(i):
            break
        k = np.arange(len(i))
        first = np.full(n, len(i))
        np.minimum.at(first, ra, k)
        np.minimum.at(first, rb, k)
        now = (first[ra] == k) & (first[rb] == k)
        lo, hi = np.minimum(ra[now], rb[now]), np.maximum(ra[now], rb[now])
        bits[lo] |= bits[hi]
        relabel = np.arange(n)
        relabel[hi] = lo                             # a set's root stays its smallest annotation
        root = relabel[root]
        i, j = i[~now], j[~now]
    if len(i):
        return _union_loop(root.tolist(), bits.tolist(), i, j)
    return _labels(root)


def greedy_union_reference(rater: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The union step pair by pair, as greedy reads (the reference for the rounds; tests)."""
    rater = np.asarray(rater, np.int64)
    return _union_loop(list(range(len(rater))), [1 << r for r in rater.tolist()],
                       np.asarray(i, np.int64), np.asarray(j, np.int64))


def _union_loop(parent: list, raters: list, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Pairs in order from the sets ``parent`` (roots: smallest annotation) with rater bits ``raters``."""
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
    # roots found by pointer jumping
    root = np.array(parent, dtype=np.int64)
    while True:
        up = root[root]
        if np.array_equal(up, root):
            break
        root = up
    return _labels(root)


def _labels(root: np.ndarray) -> np.ndarray:
    """Units numbered by first annotation: a set's root is its smallest annotation, so the
    roots in index order."""
    is_root = root == np.arange(len(root))
    return (np.cumsum(is_root) - 1)[root]


#: a solver that can re-match pre-sorted pairs carries that union step as ``on_sorted_pairs``; the
#: agreement's fast paths read it with ``getattr(solver, "on_sorted_pairs", None)`` (no import of this module)
greedy.on_sorted_pairs = greedy_on_sorted_pairs


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
