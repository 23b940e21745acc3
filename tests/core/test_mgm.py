"""MGM (multi-graph matching): known answers, optimality, ties, the fallback, two raters = Hungarian."""

from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, load_coco, make_image
from kalos_core.matching import MatchProblem, canonical_units, get_cost, get_solver
from kalos_core.matching import mgm
from kalos_core.agreement.problem import prepare_image

MGM, SOFT, NEG = get_solver("mgm"), get_cost("soft"), get_cost("neg")
FAST = AgreementConfig(bootstrap=0, vitality=False, class_difficulty=False, collaboration=False, intra_rater=False)


def problem(pairs, rater, category=None):
    """A problem from ``{(i, j): similarity}``."""
    n = len(rater)
    sim = np.zeros((n, n))
    for (i, j), s in pairs.items():
        sim[i, j] = sim[j, i] = s
    return MatchProblem(sim, np.array(rater), np.array(category if category is not None else [1] * n))


def weights(p, threshold, cost):
    """MGM's pair costs: ``inf`` where two annotations may not share a unit."""
    i, j, c = p.candidates(threshold, cost)
    w = np.full((p.n, p.n), np.inf)
    w[i[c < 0], j[c < 0]] = w[j[c < 0], i[c < 0]] = c[c < 0]
    return w


def assert_valid(p, units, threshold, cost):
    """Units numbered by first appearance, one annotation per rater, every inner pair a candidate."""
    assert units.shape == (p.n,)
    assert np.array_equal(units, canonical_units(units))
    w = weights(p, threshold, cost)
    for u in np.unique(units):
        members = np.flatnonzero(units == u)
        assert len(set(p.rater[members])) == len(members), "a unit holds two annotations of one rater"
        assert all(np.isfinite(w[a, b]) for a, b in combinations(members, 2)), "a unit holds a non-candidate pair"


def all_partitions(items):
    if not items:
        yield []
        return
    for rest in all_partitions(items[1:]):
        yield [[items[0]], *rest]
        for k in range(len(rest)):
            yield [*rest[:k], [items[0], *rest[k]], *rest[k + 1:]]


def brute_force(w):
    """The optimal cost and the lexicographically first optimal labelling."""
    best = (np.inf, None)
    for part in all_partitions(list(range(len(w)))):
        label = np.zeros(len(w), np.int64)
        for k, unit in enumerate(part):
            label[unit] = k
        label = canonical_units(label)
        cost = mgm.partition_cost(w, label)
        if cost < best[0] - 1e-9 or (cost <= best[0] + 1e-9 and tuple(label) < tuple(best[1])):
            best = (min(cost, best[0]), label)
    return best


def hungarian_reference(p, threshold, cost):
    """Two raters: ``linear_sum_assignment`` on the candidate cost matrix (rows: the lower rater's
    annotations, columns: the other's, index order), impossible pairs 0, negative entries kept."""
    rows, cols = np.flatnonzero(p.rater == p.rater.min()), np.flatnonzero(p.rater != p.rater.min())
    lo, hi = np.minimum.outer(rows, cols), np.maximum.outer(rows, cols)
    s = p.sim[lo, hi]                                  # the upper triangle, as candidates() reads it
    c = np.where(s >= threshold, cost(s, p.category[rows][:, None] == p.category[cols][None, :]), 0.0)
    r, k = linear_sum_assignment(np.minimum(c, 0.0))
    label = np.arange(p.n)
    for a, b in zip(r, k):
        if c[a, b] < 0:
            label[cols[b]] = rows[a]
    return canonical_units(label)


# ---------------------------------------------------------------- known answers

def test_three_raters_where_greedy_is_suboptimal():
    # A0 | B1 B2 | C3.  A0-B1 .95 is the best pair, so Greedy takes it, then A0-C3 (.9) and
    # B1-C3 (.5, at the threshold) join: {A0, B1, C3}, {B2}. Cost (ψneg) -(.95 + .9 + .5) = -2.35.
    # The optimum gives up A0-B1 for the triangle A0-B2-C3 at .9 each: -2.7 (ψsoft: -5.35 vs -5.7).
    p = problem({(0, 1): .95, (0, 2): .9, (0, 3): .9, (2, 3): .9, (1, 3): .5}, [0, 1, 1, 2])
    greedy = get_solver("greedy")(p, 0.5, NEG)
    assert greedy.tolist() == [0, 0, 1, 0]
    for cost, greedy_total, best_total in ((NEG, -2.35, -2.7), (SOFT, -5.35, -5.7)):
        units = MGM(p, 0.5, cost)
        assert units.tolist() == [0, 1, 0, 0]
        w = weights(p, 0.5, cost)
        assert mgm.partition_cost(w, units) == pytest.approx(best_total)
        assert mgm.partition_cost(w, greedy) == pytest.approx(greedy_total)


def test_a_chain_with_a_missing_link_is_not_one_unit():
    # a-b .9, b-c .8, a-c .1: Greedy chains all three; MGM keeps the better pair (ψsoft -1.9 < -1.8)
    p = problem({(0, 1): .9, (1, 2): .8, (0, 2): .1}, [0, 1, 2])
    assert get_solver("greedy")(p, 0.5, SOFT).tolist() == [0, 0, 0]
    assert MGM(p, 0.5, SOFT).tolist() == [0, 0, 1]


def test_one_strong_pair_beats_two_weak_ones_where_shm_maximises_the_matches():
    # a0 (class 1), a1 (class 2) | b2 (class 1), b3 (class 2): a0-b2 same class .95 (ψsoft -1.95);
    # a0-b3 and a1-b2 cross-class .6 (-0.6 each). Minimum cost: {a0, b2} = -1.95. SHM's step prices
    # impossible pairs prohibitively, so it takes the two cross-class pairs (-1.2).
    p = problem({(0, 2): .95, (0, 3): .6, (1, 2): .6}, [0, 0, 1, 1], [1, 2, 1, 2])
    assert MGM(p, 0.5, SOFT).tolist() == [0, 1, 0, 2]
    assert hungarian_reference(p, 0.5, SOFT).tolist() == [0, 1, 0, 2]
    assert get_solver("shm")(p, 0.5, SOFT).tolist() == [0, 1, 1, 0]


def test_threshold_is_inclusive():
    p = problem({(0, 1): .5, (0, 2): .5, (1, 2): .5}, [0, 1, 2])
    assert MGM(p, 0.5, SOFT).tolist() == [0, 0, 0]
    assert MGM(p, np.nextafter(0.5, 1), SOFT).tolist() == [0, 1, 2]
    two = problem({(0, 1): .5}, [0, 1])
    assert MGM(two, 0.5, SOFT).tolist() == [0, 0]
    assert MGM(two, np.nextafter(0.5, 1), SOFT).tolist() == [0, 1]


def test_degenerate_images_do_not_crash():
    empty = MatchProblem(np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(MGM(empty, 0.5, SOFT)) == 0
    assert MGM(problem({}, [0, 0, 0]), 0.5, SOFT).tolist() == [0, 1, 2]          # one rater
    assert MGM(problem({(0, 1): 1.0}, [0, 0]), 0.0, NEG).tolist() == [0, 1]    # same rater, never
    # similarity 0 at threshold 0 with ψneg costs 0: nothing to gain, the pair stays apart
    assert MGM(problem({}, [0, 1, 2]), 0.0, NEG).tolist() == [0, 1, 2]


def test_duplicate_boxes_split_into_equal_units_in_index_order():
    # three raters drew the same box twice: two units of three, each annotation joining the first unit it may
    rater = [0, 0, 1, 1, 2, 2]
    p = problem({(a, b): 1.0 for a, b in combinations(range(6), 2) if rater[a] != rater[b]}, rater)
    assert MGM(p, 0.5, SOFT).tolist() == [0, 1, 0, 1, 0, 1]


def test_many_raters():
    # 70 raters (more than fit in greedy's bit set), each drew the same object twice: a component of 140
    rater = np.repeat(np.arange(70), 2)
    sim = (rater[:, None] != rater[None, :]).astype(float)
    units = MGM(MatchProblem(sim, rater, np.ones(140, np.int64)), 0.5, SOFT)
    assert_valid(MatchProblem(sim, rater, np.ones(140, np.int64)), units, 0.5, SOFT)
    assert np.bincount(units).tolist() == [70, 70]


# ---------------------------------------------------------------- optimality, ties, the fallback

small = st.integers(0, 2**32 - 1).map(np.random.default_rng)


def random_problem(rng, n, raters, levels=None):
    """Random similarities; ``levels`` draws them from a few values (many exact ties)."""
    sim = rng.choice(levels, (n, n)) if levels is not None else rng.uniform(0, 1, (n, n))
    return MatchProblem(np.triu(sim, 1) + np.triu(sim, 1).T, rng.integers(0, raters, n), rng.integers(1, 3, n))


@settings(max_examples=150, deadline=None)
@given(small, st.integers(1, 7), st.integers(1, 4), st.booleans(), st.sampled_from(["soft", "neg"]))
def test_optimal_and_valid_against_brute_force(rng, n, raters, ties, cost_name):
    cost = get_cost(cost_name)
    p = random_problem(rng, n, raters, [0.3, 0.5, 0.7, 0.9] if ties else None)
    units = MGM(p, 0.5, cost)
    assert_valid(p, units, 0.5, cost)
    w = weights(p, 0.5, cost)
    best, first = brute_force(w)
    assert mgm.partition_cost(w, units) == pytest.approx(best, abs=1e-9)
    # the search (three or more raters): ties go to the lexicographically first labelling
    assert mgm.branch_and_bound(w, p.rater, mgm.local_search(w))[0].tolist() == first.tolist()


@settings(max_examples=150, deadline=None)
@given(small, st.integers(0, 12), st.booleans(), st.sampled_from(["soft", "neg"]))
def test_two_raters_give_exactly_the_hungarian_matching(rng, n, ties, cost_name):
    cost = get_cost(cost_name)
    p = random_problem(rng, n, 2, [0.0, 0.5, 0.6, 0.9, 1.0] if ties else None)
    if len(np.unique(p.rater)) < 2:
        return
    assert MGM(p, 0.5, cost).tolist() == hungarian_reference(p, 0.5, cost).tolist()


def exact_mgm(p):
    """MGM's units, and whether every branch and bound it ran finished (the units are optimal)."""
    done, search = [], mgm.branch_and_bound

    def recorded(*args, **kwargs):
        out = search(*args, **kwargs)
        done.append(out[1])
        return out

    mgm.branch_and_bound = recorded
    try:
        return MGM(p, 0.5, SOFT), all(done)
    finally:
        mgm.branch_and_bound = search


@settings(max_examples=60, deadline=None)
@given(small, st.integers(2, 14), st.integers(2, 5))
def test_permuting_raters_and_annotations_permutes_the_units(rng, n, raters):
    p = random_problem(rng, n, raters)                   # continuous similarities: no ties
    order, relabel = rng.permutation(n), rng.permutation(raters)
    q = MatchProblem(p.sim[np.ix_(order, order)], relabel[p.rater[order]], p.category[order])
    (units_p, exact_p), (units_q, exact_q) = exact_mgm(p), exact_mgm(q)
    assume(exact_p and exact_q)                          # a search stopped by its budget depends on the order
    groups = lambda units, idx: sorted(sorted(idx[units == u].tolist()) for u in np.unique(units))
    assert groups(units_q, order) == groups(units_p, np.arange(n))


def test_fallback_on_a_component_above_the_size_limit():
    rng = np.random.default_rng(7)
    n = mgm.EXACT_MAX_SIZE + 20
    p = random_problem(rng, n, 5)
    w = weights(p, 0.5, SOFT)
    units = MGM(p, 0.5, SOFT)
    assert_valid(p, units, 0.5, SOFT)
    assert np.array_equal(units, MGM(p, 0.5, SOFT))                      # deterministic
    assert np.array_equal(units, mgm.local_search(w))                    # one component: the fallback
    cost = mgm.partition_cost(w, units)
    assert cost < 0
    # a local optimum: no single annotation can move to another unit (or a new one) for less
    for x in range(n):
        for target in [*np.unique(units), units.max() + 1]:
            moved = units.copy()
            moved[x] = target
            assert mgm.partition_cost(w, moved) >= cost - 1e-9


def test_node_budget_keeps_the_best_partition_found():
    rng = np.random.default_rng(3)
    p = random_problem(rng, 16, 4)
    w = weights(p, 0.5, SOFT)
    start = mgm.local_search(w)
    cut, done = mgm.branch_and_bound(w, p.rater, start, budget=3)
    assert not done
    assert mgm.partition_cost(w, cut) <= mgm.partition_cost(w, start) + 1e-9
    full, done = mgm.branch_and_bound(w, p.rater, start)
    assert done and mgm.partition_cost(w, full) <= mgm.partition_cost(w, cut) + 1e-9
    assert np.array_equal(cut, mgm.branch_and_bound(w, p.rater, start, budget=3)[0])


# ---------------------------------------------------------------- pipeline

box = st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(3, 30), st.integers(3, 30), st.integers(1, 3))


@st.composite
def images(draw):
    raters = [f"r{k}" for k in range(draw(st.integers(2, 5)))]
    anns = [Annotation(f"{r}-{k}", r, c, (x, y, w, h))
            for r in raters for k, (x, y, w, h, c) in enumerate(draw(st.lists(box, max_size=5)))]
    return make_image(0, 100, 100, raters, anns)


@settings(max_examples=60, deadline=None)
@given(images(), st.randoms(use_true_random=False))
def test_pipeline_is_invariant_to_input_order(image, rnd):
    run = lambda im: compute_agreement(MultiRaterDataset([im], {1: "a", 2: "b", 3: "c"}, "box"),
                                       AgreementConfig(solver="mgm", bootstrap=0))
    base = run(image)
    anns, raters = list(image.annotations), list(image.raters)
    rnd.shuffle(anns)
    rnd.shuffle(raters)
    shuffled = run(make_image(0, 100, 100, raters, anns))
    assert shuffled.mean_alpha == base.mean_alpha and shuffled.vitality == base.vitality
    assert dict(shuffled.unit_of) == dict(base.unit_of)


@pytest.mark.realdata
@pytest.mark.parametrize("task", ["bbox", "segm"])
def test_lvis_two_raters_mgm_equals_hungarian_on_every_image(lvis_subset_path, task):
    ds = load_coco(lvis_subset_path, task=task)
    spec = FAST.distance_spec(ds.kind)
    shm = get_solver("shm")
    for image in ds.images:
        p = prepare_image(image, spec).problem
        units = MGM(p, 0.5, SOFT)
        assert units.tolist() == shm(p, 0.5, SOFT).tolist(), image.id
        if len(np.unique(p.rater)) == 2:
            assert units.tolist() == hungarian_reference(p, 0.5, SOFT).tolist(), image.id
    if task == "bbox":   # the whole pipeline: the same units and per-image α for both solvers
        runs = [compute_agreement(ds, replace(FAST, solver=s)) for s in ("mgm", "shm")]
        assert dict(runs[0].unit_of) == dict(runs[1].unit_of)
        assert runs[0].per_image_alpha == runs[1].per_image_alpha
        assert runs[0].mean_alpha == pytest.approx(0.6889, abs=5e-5)
