"""Solvers: hand-checked units, the one-annotation-per-rater rule, costs."""

import numpy as np
import pytest

from kalos_core.matching import MatchProblem, canonical_units, get_cost, get_solver

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
