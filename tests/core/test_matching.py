"""Solvers: hand-checked units, the one-annotation-per-rater rule, costs; Greedy's union step in
whole-array rounds equals the pair-by-pair loop, pair list by pair list."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core.matching import MatchProblem, canonical_units, get_cost, get_solver
from kalos_core.matching.solvers import greedy_on_sorted_pairs, greedy_union_reference

SOLVER_NAMES = ["greedy", "shm", "ahc", "mgm"]


def problem(sim, rater, category):
    sim = np.array(sim, float)
    return MatchProblem(np.maximum(sim, sim.T), np.array(rater), np.array(category))


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_two_raters_two_objects(name):
    # a0-b0 overlap 0.9, a1-b1 0.8, cross pairs 0.55
    p = problem([[0, 0, .9, .55], [0, 0, .55, .8], [0, 0, 0, 0], [0, 0, 0, 0]], [0, 0, 1, 1], [1, 1, 1, 1])
    units = get_solver(name)(p, 0.5, get_cost("soft"))
    assert units.tolist() == [0, 1, 0, 1]


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_threshold_is_inclusive_and_blocks_weak_pairs(name):
    p = problem([[0, .5], [0, 0]], [0, 1], [1, 1])
    assert get_solver(name)(p, 0.5, get_cost("soft")).tolist() == [0, 0]
    assert get_solver(name)(p, 0.51, get_cost("soft")).tolist() == [0, 1]


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_never_two_annotations_of_one_rater_in_a_unit(name):
    # b0 overlaps a0 and a1 strongly; a0/a1 are the same rater
    p = problem([[0, 0, .9], [0, 0, .85], [0, 0, 0]], [0, 0, 1], [1, 1, 1])
    units = get_solver(name)(p, 0.5, get_cost("soft"))
    assert units.tolist() == [0, 1, 0]


def test_soft_cost_prefers_same_class_over_higher_overlap():
    # a0 (class 1) vs b0 (class 2) IoU .9; a0 vs b1 (class 1) IoU .6
    p = problem([[0, .9, .6], [0, 0, 0], [0, 0, 0]], [0, 1, 1], [1, 2, 1])
    soft = get_solver("greedy")(p, 0.5, get_cost("soft"))
    neg = get_solver("greedy")(p, 0.5, get_cost("neg"))
    assert soft.tolist() == [0, 1, 0]
    assert neg.tolist() == [0, 0, 1]


def test_greedy_grows_units_across_three_raters():
    # a-b .9, b-c .8, a-c .7: one unit of three
    p = problem([[0, .9, .7], [0, 0, .8], [0, 0, 0]], [0, 1, 2], [1, 1, 1])
    assert get_solver("greedy")(p, 0.5, get_cost("soft")).tolist() == [0, 0, 0]


def test_ahc_complete_linkage_refuses_a_chain_with_a_missing_link():
    # a-b .9, b-c .8 but a-c below threshold: complete linkage cannot join all three; greedy can
    p = problem([[0, .9, .1], [0, 0, .8], [0, 0, 0]], [0, 1, 2], [1, 1, 1])
    assert get_solver("ahc")(p, 0.5, get_cost("soft")).tolist() == [0, 0, 1]
    assert get_solver("greedy")(p, 0.5, get_cost("soft")).tolist() == [0, 0, 0]


def test_empty_and_unknown():
    p = MatchProblem(np.zeros((0, 0)), np.zeros(0, int), np.zeros(0, int))
    for name in SOLVER_NAMES:
        assert len(get_solver(name)(p, 0.5, get_cost("soft"))) == 0
    with pytest.raises(ValueError, match="unknown solver"):
        get_solver("magic")
    with pytest.raises(ValueError, match="unknown cost"):
        get_cost("magic")


def test_canonical_units_numbers_by_first_appearance():
    assert canonical_units(np.array([5, 2, 5, 9])).tolist() == [0, 1, 0, 2]


# -- Greedy in whole-array rounds ----------------------------------------------------------------

@st.composite
def pair_lists(draw):
    n = draw(st.integers(0, 14))
    n_raters = draw(st.sampled_from([1, 2, 3, 5, 70]))           # 70: beyond the int64 rater bits
    rater = np.array(draw(st.lists(st.integers(0, n_raters - 1), min_size=n, max_size=n)), np.int64)
    pairs = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))),
                          max_size=40)) if n else []
    pairs = [(a, b) for a, b in pairs if a < b and rater[a] != rater[b]]
    return rater, np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64)


@settings(max_examples=400, deadline=None)
@given(pair_lists(), st.sampled_from([0, 1, 2, 64]))
def test_rounds_equal_the_loop(data, max_rounds):
    rater, i, j = data
    want = greedy_union_reference(rater, i, j)
    assert np.array_equal(greedy_on_sorted_pairs(rater, i, j, max_rounds=max_rounds), want)


def test_a_later_pair_is_refused_when_an_earlier_one_took_its_rater():
    """Raters a, b, b: (0, 1) is accepted first; (0, 2) would put b twice in the unit: refused,
    although in a round it is also 'first' for annotation 2."""
    rater = np.array([0, 1, 1])
    got = greedy_on_sorted_pairs(rater, np.array([0, 0]), np.array([1, 2]))
    assert got.tolist() == [0, 0, 1]
    # the order decides: (0, 2) first takes annotation 0, (0, 1) is then refused
    assert greedy_on_sorted_pairs(rater, np.array([0, 0]), np.array([2, 1])).tolist() == [0, 1, 0]


def test_a_chain_needs_many_rounds_and_still_matches_the_loop():
    """A path 0-1-2-...-39 of alternating raters, pairs in reverse order: every round can only
    settle the pairs at the head of the dependency chain."""
    n = 40
    rater = np.arange(n) % 2
    i = np.arange(n - 1)[::-1].copy()
    j = i + 1
    want = greedy_union_reference(rater, i, j)
    for rounds in (1, 3, 64):
        assert np.array_equal(greedy_on_sorted_pairs(rater, i, j, max_rounds=rounds), want)
