"""Rater structure across two runs: DIC, "schools of thought", aligned MDS maps, BAE.

DIC (the ``multi_annotator_tendency_dic_bae`` paper, Eq. 3) compares two rater x rater
agreement matrices ``M`` and ``M'`` — here the pairwise α of two agreement runs
(:attr:`AgreementResult.collaboration`): ``DIC = ||M - M'||_F / ||M||_F``, 0 for identical
structure, invariant to scaling both matrices. Conventions:

* only raters present in both runs enter the matrices; the others are reported
  (``only_first``, ``only_second``), not silently dropped;
* a pair is *masked* (left out of both norms) when either run has no α for it or, where
  the shared-image counts are given (:attr:`AgreementResult.collaboration_n`), fewer than
  ``min_shared`` images;
* the diagonal (α of a rater with itself, 1 unless the matrix states it) is part of the
  matrices, as in the paper (``include_diagonal=False`` compares the off-diagonal structure
  alone); with no unmasked pair left, DIC is NaN.

Clusters are the connected components of the graph whose edges are the unmasked pairs
with α above ``level`` (the paper colours κ > 0.6). The two rater maps are the classical
MDS of ``1 - α`` (:func:`kalos_core.dic.rater_map.classical_mds`, as in the Collaboration
panel); the second is aligned to the first by Procrustes (rotation/reflection, uniform
scale, translation).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping

import numpy as np
from scipy.linalg import orthogonal_procrustes

from .rater_map import alpha_matrix, classical_mds, distances

Nested = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class DICConfig:
    min_shared: int = 10          #: pairs sharing fewer images (in either run) are masked
    level: float = 0.6            #: clusters: pairs with α above this are linked
    include_diagonal: bool = True


@dataclass
class DICResult:
    dic: float
    raters: list[str]                                    #: in both runs (matrix order)
    only_first: list[str]
    only_second: list[str]
    masked_pairs: list[tuple[str, str]]
    first: list[list[float | None]]                      #: M (None = masked)
    second: list[list[float | None]]                     #: M'
    difference: list[list[float | None]]                 #: |M - M'|
    clusters_first: list[list[str]] = field(default_factory=list)
    clusters_second: list[list[str]] = field(default_factory=list)
    map_first: dict[str, list[float]] = field(default_factory=dict)
    map_second: dict[str, list[float]] = field(default_factory=dict)   #: aligned to map_first
    shift: dict[str, float] = field(default_factory=dict)              #: each rater's move between maps
    procrustes_disparity: float = float("nan")            #: residual / spread of map_first (0 = same shape)
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["masked_pairs"] = [list(p) for p in self.masked_pairs]
        return _finite(d)


def _finite(x):
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return None if not np.isfinite(x) else float(x)
    return x


def _counts(nested: Nested | None, raters: list[str]) -> np.ndarray:
    m = np.full((len(raters), len(raters)), np.inf)
    if nested is not None:
        m = alpha_matrix(nested, raters)
        np.fill_diagonal(m, np.inf)
        m = np.where(np.isnan(m), 0.0, m)
    return m


def _matrix(nested: Nested, raters: list[str]) -> np.ndarray:
    """:func:`alpha_matrix`, keeping a diagonal the matrix states (1 where it is absent)."""
    m = alpha_matrix(nested, raters)
    for k, r in enumerate(raters):
        v = (nested.get(r) or {}).get(r)
        if v is not None:
            m[k, k] = float(v)
    return m


def _rows(m: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(v) else float(v) for v in row] for row in m]


def frobenius_dic(m1: np.ndarray, m2: np.ndarray) -> float:
    """``||M - M'||_F / ||M||_F`` over the finite entries of both (NaN = masked)."""
    ok = ~(np.isnan(m1) | np.isnan(m2))
    norm = float(np.sqrt((m1[ok] ** 2).sum()))
    return float(np.sqrt(((m1[ok] - m2[ok]) ** 2).sum())) / norm if norm > 0 else float("nan")


def clusters(nested: Nested, level: float = 0.6, raters: list[str] | None = None,
             mask: np.ndarray | None = None) -> list[list[str]]:
    """Connected components of the pairs with α > ``level`` (singletons included), sorted."""
    raters = sorted(nested) if raters is None else raters
    m = alpha_matrix(nested, raters)
    parent = list(range(len(raters)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    link = np.nan_to_num(m, nan=-np.inf) > level
    if mask is not None:
        link &= ~mask
    for i, j in zip(*np.nonzero(np.triu(link, 1))):
        parent[find(i)] = find(j)
    groups: dict[int, list[str]] = {}
    for k, r in enumerate(raters):
        groups.setdefault(find(k), []).append(r)
    return sorted(groups.values(), key=lambda g: (-len(g), g))


def procrustes_align(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """``y`` rotated/reflected, scaled and shifted onto ``x``; and the residual
    ``||x - y_aligned||^2 / ||x - mean(x)||^2``."""
    mx, my = x.mean(0), y.mean(0)
    xc, yc = x - mx, y - my
    if not np.any(yc) or not np.any(xc):
        return np.tile(mx, (len(y), 1)), float("nan")
    r, s = orthogonal_procrustes(yc, xc)
    aligned = yc @ r * (s / (yc ** 2).sum()) + mx
    return aligned, float(((x - aligned) ** 2).sum() / (xc ** 2).sum())


def compare_runs(first: Nested, second: Nested, first_n: Nested | None = None, second_n: Nested | None = None,
                 config: DICConfig = DICConfig()) -> DICResult:
    """DIC, clusters and aligned rater maps of two pairwise-α matrices.

    Parameters
    ----------
    first, second : ``{rater: {rater: α}}`` of two runs (``AgreementResult.collaboration``).
    first_n, second_n : ``{rater: {rater: shared images}}`` (``collaboration_n``); None = no
        masking by shared images.
    """
    a, b = set(first), set(second)
    raters = sorted(a & b)
    m1, m2 = _matrix(first, raters), _matrix(second, raters)
    few = (_counts(first_n, raters) < config.min_shared) | (_counts(second_n, raters) < config.min_shared)
    mask = few | np.isnan(m1) | np.isnan(m2)
    np.fill_diagonal(mask, not config.include_diagonal)
    m1, m2 = np.where(mask, np.nan, m1), np.where(mask, np.nan, m2)
    masked = [(raters[i], raters[j]) for i, j in zip(*np.nonzero(np.triu(mask, 1)))]
    pairs_left = len(raters) * (len(raters) - 1) // 2 - len(masked)
    value = frobenius_dic(m1, m2) if pairs_left > 0 else float("nan")
    out = DICResult(value, raters, sorted(a - b), sorted(b - a), masked, _rows(m1), _rows(m2),
                    _rows(np.abs(m1 - m2)), config=asdict(config))
    out.clusters_first = clusters(first, config.level, raters, few)
    out.clusters_second = clusters(second, config.level, raters, few)
    if raters:
        x = classical_mds(distances(alpha_matrix(first, raters)), dims=2)
        y = classical_mds(distances(alpha_matrix(second, raters)), dims=2)
        y, out.procrustes_disparity = procrustes_align(x, y)
        out.map_first = {r: x[k].tolist() for k, r in enumerate(raters)}
        out.map_second = {r: y[k].tolist() for k, r in enumerate(raters)}
        out.shift = {r: float(np.hypot(*(x[k] - y[k]))) for k, r in enumerate(raters)}
    return out


def bae(alphas: Nested, embeddings: Mapping[str, np.ndarray]) -> float:
    """Behaviour Alignment Explainability (Eq. 7): ``1 - ||S - A||_F / ||A||_F`` with ``S`` the
    cosine similarity of the per-rater embeddings and ``A`` the pairwise α, over the raters in both."""
    raters = sorted(set(alphas) & set(embeddings))
    e = np.array([np.asarray(embeddings[r], float) for r in raters])
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    return 1.0 - frobenius_dic(_matrix(alphas, raters), e @ e.T)
