"""Arranging raters by how they agree: cluster order for the heatmap, classical MDS for the map.

Used by the Collaboration panel (``panels/ordering.py`` re-exports these) and by
:mod:`kalos_core.dic` (rater maps of two runs, aligned by Procrustes).

Both work on the distance ``d = 1 - α`` between two raters (0 for raters who always agree).
Pairs that never rated a common sample have no α; they count as the largest distance seen
(at least 1, "no better than chance").
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform


def alpha_matrix(nested: dict, raters: list[str]) -> np.ndarray:
    """``(n, n)`` pairwise α from the stored ``{rater: {rater: α}}`` dict; NaN where unknown."""
    n = len(raters)
    m = np.full((n, n), np.nan)
    for i, a in enumerate(raters):
        row = nested.get(a) or {}
        for j, b in enumerate(raters):
            v = row.get(b)
            if v is None:
                v = (nested.get(b) or {}).get(a)
            if v is not None:
                m[i, j] = float(v)
    np.fill_diagonal(m, 1.0)
    return m


def distances(alphas: np.ndarray) -> np.ndarray:
    """Symmetric ``1 - α`` distances, zero diagonal, unknown pairs at the largest distance (>= 1)."""
    a = np.asarray(alphas, dtype=float)
    a = np.where(np.isnan(a), a.T, a)  # take the other triangle where one side is missing
    d = np.clip(1.0 - a, 0.0, None)
    known = d[~np.isnan(d)]
    fill = max(1.0, float(known.max()) if known.size else 1.0)
    d = np.where(np.isnan(d), fill, d)
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0.0)
    return d


def cluster_order(alphas: np.ndarray) -> list[int]:
    """Rater order that puts "schools of thought" next to each other.

    Average-linkage hierarchical clustering of the ``1 - α`` distances, leaves ordered
    optimally (adjacent leaves as similar as possible); deterministic for a given matrix.
    """
    d = distances(alphas)
    n = len(d)
    if n <= 2:
        return list(range(n))
    condensed = squareform(d, checks=False)
    z = linkage(condensed, method="average")
    z = optimal_leaf_ordering(z, condensed)
    return [int(i) for i in leaves_list(z)]


def classical_mds(dist: np.ndarray, dims: int = 2) -> np.ndarray:
    """Classical (Torgerson) MDS: ``(n, dims)`` coordinates whose Euclidean distances
    approximate ``dist``.

    Double-centres the squared distances, keeps the ``dims`` largest positive eigenvalues
    (others give zero columns). Deterministic: each axis is signed so that its coordinate of
    largest magnitude (first such rater on ties) is positive.
    """
    d = np.asarray(dist, dtype=float)
    n = len(d)
    if n == 0:
        return np.zeros((0, dims))
    j = np.eye(n) - np.ones((n, n)) / n
    b = -0.5 * j @ (d ** 2) @ j
    vals, vecs = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(vals)[::-1][:dims]
    coords = np.zeros((n, dims))
    for k, idx in enumerate(order):
        if vals[idx] <= 1e-12:
            continue
        col = vecs[:, idx] * np.sqrt(vals[idx])
        pivot = int(np.argmax(np.abs(np.round(col, 12))))
        coords[:, k] = -col if col[pivot] < 0 else col
    return coords
