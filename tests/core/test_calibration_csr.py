"""calibration.csr makes scipy.sparse's CSR matrices and products with scipy's kernels: the same bits."""

import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse

from kalos_core.calibration.csr import CSR, sparsetools


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.int64 if x.dtype.itemsize == 8 else np.int32)


def _linear_bins_triplets(rng, n_values: int, n_rows: int, n_groups: int):
    """LinearBins' triplets: each value split between two grid rows, many values of a group on one row (the
    duplicates whose sum depends on their order), rows listed as two runs."""
    groups = np.sort(rng.integers(0, n_groups, n_values))
    pos = np.concatenate([rng.beta(2, 9, n_values - n_values // 4), np.ones(n_values // 4)]) * (n_rows - 1)
    left = np.minimum(pos.astype(np.intp), n_rows - 2)
    frac = pos - left
    return np.concatenate([1.0 - frac, frac]), np.concatenate([left, left + 1]), np.tile(groups, 2)


@pytest.mark.parametrize("n_values, n_rows, n_groups", [(50_000, 256, 300), (3_000, 64, 5), (1, 8, 1)])
def test_triplets_give_scipys_matrix_bit_for_bit(n_values, n_rows, n_groups):
    data, row, col = _linear_bins_triplets(np.random.default_rng(n_values), n_values, n_rows, n_groups)
    want = sparse.csr_matrix((data, (row, col)), shape=(n_rows, n_groups))
    got = CSR.from_triplets(data, row, col, (n_rows, n_groups))
    assert got.indptr.dtype == want.indptr.dtype and got.indices.dtype == want.indices.dtype
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert np.array_equal(_bits(got.data), _bits(want.data)) and got.nnz == want.nnz
    assert np.array_equal(_bits(got.row_sums()), _bits(np.asarray(want.sum(axis=1)).ravel()))


def test_duplicates_are_summed_in_scipys_order_not_the_input_order():
    """Three or more unequal values of one cell: their sum depends on the order, which must be scipy's."""
    rng = np.random.default_rng(3)
    data = rng.uniform(0, 1, 20_000)
    row, col = rng.integers(0, 4, 20_000), rng.integers(0, 30, 20_000)
    want = sparse.csr_matrix((data, (row, col)), shape=(4, 30))
    got = CSR.from_triplets(data, row, col, (4, 30))
    assert np.array_equal(_bits(got.data), _bits(want.data))
    in_input_order = np.zeros((4, 30))
    np.add.at(in_input_order, (row, col), data)
    assert not np.array_equal(_bits(in_input_order.ravel()), _bits(want.toarray().ravel()))   # order matters here


def test_products_are_scipys_bit_for_bit():
    rng = np.random.default_rng(8)
    data, row, col = _linear_bins_triplets(rng, 40_000, 128, 200)
    want = sparse.csr_matrix((data, (row, col)), shape=(128, 200))
    got = CSR.from_triplets(data, row, col, (128, 200))
    m = rng.integers(0, 4, (30, 200)).astype(float)
    for x in (m[0], m.T, m[:1].T, np.ascontiguousarray(m.T)):
        assert np.array_equal(_bits(got @ x), _bits(want @ x)) and (got @ x).shape == (want @ x).shape
    counts = CSR(want.indptr.astype(np.int64), want.indices, rng.integers(1, 9, want.nnz), (128, 200)).astype(np.int32)
    x = rng.integers(0, 5, (200, 7)).astype(np.int32)
    assert np.array_equal(counts @ x, sparse.csr_matrix((counts.data, counts.indices, counts.indptr),
                                                        shape=(128, 200)) @ x)
    assert (counts @ x).dtype == np.int32


def test_calibration_runs_without_importing_scipy_sparse():
    code = ("import sys, numpy as np; from kalos_core.calibration.analysis import separate; "
            "from kalos_core.calibration.density import Grid; rng = np.random.default_rng(0); "
            "do, de = rng.beta(2, 9, 400), rng.uniform(0, 1, 400); g = np.sort(rng.integers(0, 20, 400)); "
            "s = separate(do, de, g, rng.integers(0, 3, (5, 20)), Grid(0.0, 1.0, 64), 0.95); "
            "print(s.ks > 0.3, 'scipy.sparse' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
    assert hasattr(sparsetools(), "csr_sort_indices")
