"""Greedy's union step in whole-array rounds equals the pair-by-pair loop, pair list by pair list."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core.matching.solvers import greedy_on_sorted_pairs, greedy_union_reference


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
