"""Compressed sparse rows for the bootstrap (grid counts of :class:`~.density.LinearBins`, KS masses of
:class:`~.separation.KSData`), on scipy's own compiled kernels without importing ``scipy.sparse``.

What the bootstrap needs of a sparse matrix is four calls of ``scipy.sparse._sparsetools``: build it from
``(value, row, column)`` triplets with duplicates summed, multiply it by a vector or a block of vectors, sum
its rows. :class:`CSR` makes them in the very steps ``scipy.sparse.csr_matrix((data, (row, col)), shape)``,
``A @ x`` and ``A.sum(axis=1)`` take (the same index type, the same checks: duplicates are summed in the order
``csr_sort_indices`` leaves them), so the results are the same bits; it skips the import of ``scipy.sparse``
itself (scipy's array-API layer, ``numpy.testing``, ``numpy.f2py``: ~0.09 s of a calibrate run that agreement
does not pay). tests/core/test_calibration_csr.py compares every function with ``scipy.sparse``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import numpy as np

_TOOLS = "scipy.sparse._sparsetools"
_loaded: list = []


def sparsetools():
    """scipy's ``_sparsetools`` extension, loaded from its file without running ``scipy/sparse/__init__.py``
    (imported the usual way if it already is, or if that fails)."""
    if _loaded:
        return _loaded[0]
    module = sys.modules.get(_TOOLS)
    try:
        if module is None:
            spec = importlib.util.find_spec("scipy")
            folder = Path(next(iter(spec.submodule_search_locations)), "sparse")
            path = next(folder / f"_sparsetools{s}" for s in importlib.machinery.EXTENSION_SUFFIXES
                        if (folder / f"_sparsetools{s}").is_file())
            loader = importlib.machinery.ExtensionFileLoader(_TOOLS, str(path))
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(_TOOLS, loader))
            loader.exec_module(module)
    except (ImportError, OSError, StopIteration, TypeError):
        module = None
    if module is None or not hasattr(module, "csr_matvecs"):
        from scipy.sparse import _sparsetools as module
    _loaded.append(module)
    return module


def _index_type(*sizes: int):
    """scipy's index type: 32-bit while every size fits."""
    return np.int32 if max(sizes, default=0) <= np.iinfo(np.int32).max else np.int64


class CSR:
    """A ``shape`` matrix as ``indptr``, ``indices``, ``data`` (each row's columns increasing, no duplicates)."""

    __slots__ = ("indptr", "indices", "data", "shape")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape: tuple[int, int]) -> None:
        kind = _index_type(len(indices), *shape)
        self.indptr, self.indices = np.asarray(indptr, kind), np.asarray(indices, kind)
        self.data, self.shape = np.asarray(data), (int(shape[0]), int(shape[1]))

    @classmethod
    def from_triplets(cls, data: np.ndarray, row: np.ndarray, col: np.ndarray, shape: tuple[int, int]) -> "CSR":
        """``csr_matrix((data, (row, col)), shape=shape)``: the triplets placed row by row in their order
        (``coo_tocsr``), each row's columns sorted by ``csr_sort_indices`` unless already in order, equal
        (row, column) entries summed in the resulting order."""
        tools, (n_rows, n_cols) = sparsetools(), shape
        data = np.asarray(data)
        kind = _index_type(len(data), n_rows, n_cols)
        indptr, indices, values = np.empty(n_rows + 1, kind), np.empty(len(data), kind), np.empty_like(data)
        tools.coo_tocsr(n_rows, n_cols, len(data), np.asarray(row, kind), np.asarray(col, kind), data,
                        indptr, indices, values)
        if not tools.csr_has_canonical_format(n_rows, indptr, indices):
            if not tools.csr_has_sorted_indices(n_rows, indptr, indices):
                tools.csr_sort_indices(n_rows, indptr, indices, values)
            tools.csr_sum_duplicates(n_rows, n_cols, indptr, indices, values)
            nnz = int(indptr[-1])
            indices, values = indices[:nnz], values[:nnz]
        return cls(indptr, indices, values, shape)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def astype(self, kind) -> "CSR":
        return CSR(self.indptr, self.indices, self.data.astype(kind), self.shape)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` for ``x`` ``(n_cols,)`` (``csr_matvec``) or ``(n_cols, k)`` (``csr_matvecs``; one column:
        ``csr_matvec``, as scipy)."""
        x = np.asarray(x)
        n_rows, n_cols = self.shape
        kind = np.result_type(self.data.dtype, x.dtype)
        if x.ndim == 1 or x.shape[1] == 1:
            out = np.zeros(n_rows, kind)
            sparsetools().csr_matvec(n_rows, n_cols, self.indptr, self.indices, self.data, x.ravel(), out)
            return out if x.ndim == 1 else out.reshape(n_rows, 1)
        out = np.zeros((n_rows, x.shape[1]), kind)
        sparsetools().csr_matvecs(n_rows, n_cols, x.shape[1], self.indptr, self.indices, self.data, x.ravel(),
                                  out.ravel())
        return out

    def row_sums(self) -> np.ndarray:
        """``A.sum(axis=1)`` as scipy sums a CSR matrix's rows (``np.add.reduceat`` over the non-empty rows)."""
        out = np.zeros(self.shape[0], self.data.dtype if self.data.dtype.kind in "fc" else np.int_)
        rows = np.flatnonzero(np.diff(self.indptr))
        out[rows] = np.add.reduceat(self.data, self.indptr[rows].astype(np.intp))
        return out
