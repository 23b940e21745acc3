"""Nominal α: published example, docs/method.md §4 edge cases, cell form == dense form."""

import numpy as np
import pytest

from kalos_core.reliability import NO_OBJECT as NO
from kalos_core.reliability import Cells, alpha, build_cells, interpret, unit_status

n = np.nan


def test_krippendorff_published_nominal_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units, nominal
    m = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ])
    assert alpha(m) == pytest.approx(0.743, abs=5e-4)


@pytest.mark.parametrize("matrix, expected", [
    ([[1], [2]], 0.0),
    ([[1], [NO]], 0.0),
    ([[1, NO], [NO, 1]], -0.5),
    ([[1, 2], [1, 2]], 1.0),
    ([[NO], [NO]], 1.0),              # every assigned rater drew nothing
    ([[3, 3, 3], [3, 3, 3]], 1.0),    # all values identical
    ([[1, n], [n, 2]], 1.0),          # nothing pairable: no evidence of disagreement
])
def test_edge_cases(matrix, expected):
    assert alpha(np.array(matrix, dtype=float)) == pytest.approx(expected)


def test_empty_matrix_is_perfect():
    assert alpha(np.zeros((2, 0))) == 1.0


def test_cells_roundtrip_and_concat():
    m = np.array([[1, 2, NO], [1, n, 2]], dtype=float)
    c = Cells.from_matrix(m)
    np.testing.assert_array_equal(c.to_matrix(2), m)
    both = Cells.concat([c, c])
    assert both.n_units == 6
    assert alpha(both) == pytest.approx(alpha(np.hstack([m, m])))


def test_build_cells_no_object_and_open_world():
    units = np.array([0, 0, 1])
    rater = np.array([0, 1, 0])
    category = np.array([7, 7, 9])
    dense = build_cells(units, rater, category, n_rows=3).to_matrix(3)
    np.testing.assert_array_equal(dense, [[7, 9], [7, NO], [NO, NO]])
    # row 2 was only assigned class 7: in the class-9 unit its cell is missing, not NO_OBJECT
    dense = build_cells(units, rater, category, 3, [None, None, frozenset({7})]).to_matrix(3)
    np.testing.assert_array_equal(dense, [[7, 9], [7, NO], [NO, n]])


def test_unit_status():
    units = np.array([0, 0, 1, 2, 2])
    cats = np.array([1, 1, 1, 1, 2])
    assert unit_status(units, cats).tolist() == [
        "agreed", "agreed", "unmatched", "class_disagreement", "class_disagreement"]


@pytest.mark.parametrize("a, band", [(0.85, "near-perfect"), (0.6, "substantial"), (0.45, "moderate"),
                                     (0.1, "weak"), (-0.2, "systematic disagreement"),
                                     # summation noise around a band's edge stays on the edge's side
                                     (-8.36e-17, "weak"), (0.8 - 1e-16, "near-perfect"), (-1e-9, "systematic disagreement")])
def test_interpretation_bands(a, band):
    assert interpret(a) == band
