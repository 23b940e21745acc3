"""Behaviour Alignment Explainability (BAE): does a model's picture of the raters match how they agree?

The ``multi_annotator_tendency_dic_bae`` paper (§3.2) compares two rater x rater similarity
matrices: ``S_true``, the raters' agreement on the samples they share (Eq. 4; here the pairwise
α of the agreement run's collaboration diagnostic, matched with the agreement's own
threshold, distance, solver and cost), and ``S_model``, the cosine similarity of each rater's
average representation in a model (Eq. 5: ``F_i = mean over the rater's samples of f(x, i)``;
region level, Eq. 6, is the same with attention maps). Eq. 7::

    BAE = 1 - ||S_model - S_true||_F / ||S_true||_F

1 when the model's similarities reproduce the agreement exactly; higher is better (it is an
alignment score, not an error). Conventions (those of :mod:`kalos_core.dic`): only raters with
labels *and* a representation enter the matrices (the others are reported); the diagonal (1 in
both) is part of the matrices, as in the paper; a pair without α (no shared image) is left out
of both norms. The two rater maps (the paper's Fig. 4) are the classical MDS of ``1 - S``, the
model's aligned to the ground truth's by Procrustes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np

from ..agreement.config import DIAGNOSTICS, AgreementConfig
from ..agreement.pipeline import agreement_steps
from ..data import MultiRaterDataset
from ..dic.engine import bae, procrustes_align
from ..dic.rater_map import alpha_matrix, classical_mds, distances
from ..jsonsafe import json_safe
from ..matching.params import MATCHING_PARAMS, MatchingConfig
from ..params import Config, param, same_param
from ..progress import rescale, run_steps

#: which pairwise α is ``S_true``: over the pair's shared images at once, or the mean of per-image α
SCOPES = ("global", "per_image")


@dataclass(frozen=True)
class BAEConfig(Config):
    """Settings of a BAE run: the matching behind the pairwise α (the agreement's own parameters)."""

    threshold: float = same_param(MatchingConfig, "threshold")
    distance: str | None = same_param(MatchingConfig, "distance")
    solver: str = same_param(MatchingConfig, "solver")
    cost: str = same_param(MatchingConfig, "cost")
    scope: str = param("global", "choice", "S_true: each pair's alpha over their shared images at once (global, as "
                       "the paper's kappa) or the mean of their per-image alpha (per_image)", choices=SCOPES)


@dataclass
class BAEResult:
    """BAE, the two similarity matrices in rater order, and the two aligned rater maps."""

    bae: float
    raters: list[str]                       #: with labels and a representation (matrix order)
    only_labels: list[str]                  #: raters without a representation (left out)
    only_embeddings: list[str]              #: representations of no rater in the labels (left out)
    masked_pairs: list[list[str]]           #: pairs without α (no shared image): out of both norms
    true: list[list[float | None]]          #: S_true, the pairwise α (None = masked)
    model: list[list[float | None]]         #: S_model, cosine of the raters' mean representations
    difference: list[list[float | None]]    #: |S_model - S_true|
    map_true: dict[str, list[float]] = field(default_factory=dict)
    map_model: dict[str, list[float]] = field(default_factory=dict)   #: aligned to map_true
    procrustes_disparity: float = float("nan")
    n_images: int = 0
    n_annotations: int = 0
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON contract: every field, NaN as null."""
        return json_safe(asdict(self))


def rater_vectors(embeddings: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Each rater's mean representation ``F_i`` (Eq. 5) from ``{rater: vector}`` or
    ``{rater: [vector per sample, ...]}``; a ValueError names a rater whose vectors are unusable."""
    out, dims = {}, set()
    for rater, value in embeddings.items():
        try:
            v = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"embeddings of rater {rater!r} are not numbers of one length") from None
        v = v.mean(axis=0) if v.ndim == 2 and len(v) else v
        if v.ndim != 1 or not len(v) or not np.all(np.isfinite(v)):
            raise ValueError(f"embeddings of rater {rater!r}: need a vector (or a list of vectors) of finite numbers")
        if not np.any(v):
            raise ValueError(f"embeddings of rater {rater!r} average to the zero vector: no cosine similarity")
        out[str(rater)] = v
        dims.add(len(v))
    if len(dims) > 1:
        raise ValueError(f"embeddings differ in length ({', '.join(map(str, sorted(dims)))}): one model's "
                         "representations have one length")
    return out


def cosine_matrix(vectors: list[np.ndarray]) -> np.ndarray:
    """``S_model``: cosine similarity of every two vectors (Eq. 5)."""
    e = np.array(vectors, dtype=float)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    s = np.clip(e @ e.T, -1.0, 1.0)
    np.fill_diagonal(s, 1.0)
    return s


def _rows(m: np.ndarray, mask: np.ndarray) -> list[list[float | None]]:
    return [[None if masked or np.isnan(v) else float(v) for v, masked in zip(row, mrow)] for row, mrow in zip(m, mask)]


def compare(alphas: Mapping[str, Mapping[str, float]], embeddings: Mapping[str, Any],
            config: BAEConfig = BAEConfig()) -> BAEResult:
    """BAE of pairwise α ``{rater: {rater: α}}`` against per-rater representations.

    Parameters
    ----------
    alphas : ``S_true`` as the collaboration diagnostic stores it (symmetric, diagonal 1).
    embeddings : ``{rater: vector}`` or ``{rater: [vector per sample]}`` (averaged, Eq. 5).
    config : recorded in the result.
    """
    vectors = rater_vectors(embeddings)
    raters = sorted(set(alphas) & set(vectors))
    if len(raters) < 2:
        raise ValueError(f"BAE needs two raters with labels and embeddings; raters in the labels: "
                         f"{', '.join(sorted(alphas)) or 'none'}, in the embeddings: "
                         f"{', '.join(sorted(vectors)) or 'none'}")
    true, model = alpha_matrix(alphas, raters), cosine_matrix([vectors[r] for r in raters])
    mask = np.isnan(true)
    if mask.all(where=~np.eye(len(raters), dtype=bool)):
        raise ValueError("no two of the raters share an image: no pairwise alpha, no BAE")
    value = bae(alphas, {r: vectors[r] for r in raters})
    out = BAEResult(value, raters, sorted(set(alphas) - set(vectors)), sorted(set(vectors) - set(alphas)),
                    [[raters[i], raters[j]] for i, j in zip(*np.nonzero(np.triu(mask, 1)))],
                    _rows(true, mask), _rows(model, mask), _rows(np.abs(model - true), mask), config=config.to_dict())
    x = classical_mds(distances(true), dims=2)
    y, out.procrustes_disparity = procrustes_align(x, classical_mds(distances(model), dims=2))
    out.map_true = {r: x[k].tolist() for k, r in enumerate(raters)}
    out.map_model = {r: y[k].tolist() for k, r in enumerate(raters)}
    return out


def bae_steps(dataset: MultiRaterDataset, embeddings: Mapping[str, Any], config: BAEConfig = BAEConfig()):
    """:func:`compute_bae` as a generator of ``(fraction, message)`` steps; returns the result."""
    rater_vectors(embeddings)   # refuse unusable embeddings before the matching
    agreement = AgreementConfig(**{n: getattr(config, n) for n in MATCHING_PARAMS}, bootstrap=0,
                                **{d: d == "collaboration" for d in DIAGNOSTICS})
    result = yield from rescale(agreement_steps(dataset, agreement), 0.0, 0.9)
    yield 0.9, "comparing the similarity structures"
    alphas = result.collaboration_global if config.scope == "global" else result.collaboration
    out = compare(alphas or {}, embeddings, config)
    out.n_images, out.n_annotations = result.n_images, result.n_annotations
    return out


def compute_bae(dataset: MultiRaterDataset, embeddings: Mapping[str, Any],
                config: BAEConfig = BAEConfig()) -> BAEResult:
    """BAE of the raters' labels (pairwise α, matched as the agreement run matches) against a
    model's per-rater representations (``{rater: vector}`` or ``{rater: [vector per sample]}``)."""
    return run_steps(bae_steps(dataset, embeddings, config))
