"""Keypoint sets (pose): image-normalised per-joint error and OKS.

Coordinates are image-relative; the error of a joint seen by both raters is
its L2 distance divided by ``sqrt(2)`` (the diagonal of the unit image), a
joint visible to only one rater costs 1.0 (Eq. 30-31), joints visible to
neither are ignored. The similarity is ``1 - mean error``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from .registry import Prepared, register_distance

#: COCO person keypoint sigmas (17 joints); other skeletons default to 0.05 per joint
COCO_SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89]) / 10.0


def prepare_keypoints(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """``(n, K, 3)`` array of relative ``x, y`` and visibility, plus relative box areas."""
    k = max((len(a.geometry) // 3 for a in anns), default=0)
    pts = np.zeros((len(anns), k, 3))
    area = np.zeros(len(anns))
    for i, a in enumerate(anns):
        arr = np.asarray(a.geometry, dtype=float).reshape(-1, 3)
        pts[i, : len(arr)] = arr
        if a.bbox is not None:
            area[i] = a.bbox[2] * a.bbox[3] / (image.width * image.height)
    pts[..., 0] /= image.width
    pts[..., 1] /= image.height
    vis = pts[..., 2] > 0
    pts[..., :2] = np.where(vis[..., None], pts[..., :2], 0.0)
    for i in np.flatnonzero(area == 0):
        v = vis[i]
        if v.sum() >= 2:
            span = pts[i, v, :2].max(0) - pts[i, v, :2].min(0)
            area[i] = span[0] * span[1]
    return Prepared(len(anns), xy=pts[..., :2], vis=vis, area=area)


def _pair_terms(a: Prepared, b: Prepared):
    ka, kb = a["xy"].shape[1], b["xy"].shape[1]
    if ka != kb:
        raise ValueError(f"keypoint sets of different length ({ka} vs {kb}) cannot be compared")
    va, vb = a["vis"][:, None, :], b["vis"][:, None, :].transpose(1, 0, 2)
    d = np.sqrt(((a["xy"][:, None] - b["xy"][None]) ** 2).sum(-1))
    return va & vb, va ^ vb, va | vb, d


@register_distance("keypoints", "mpjpe", prepare=prepare_keypoints, scale_invariant=False)
def keypoint_mpjpe(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Image-normalised mean per-joint error with the visibility penalty."""
    both, one, either, d = _pair_terms(a, b)
    err = np.where(both, d / np.sqrt(2.0), 0.0).sum(-1) + one.sum(-1)
    n = either.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(n > 0, 1.0 - err / n, 1.0), 0.0, 1.0)


@register_distance("keypoints", "oks", prepare=prepare_keypoints)
def keypoint_oks(a: Prepared, b: Prepared, need=None, floor: float = 0.0, sigmas=None) -> np.ndarray:
    """Object keypoint similarity over the union of visible joints (one-sided joints score 0)."""
    both, one, either, d = _pair_terms(a, b)
    k = d.shape[-1]
    if sigmas is None:
        sigmas = COCO_SIGMAS if k == 17 else np.full(k, 0.05)
    s2 = (a["area"][:, None] + b["area"][None, :]) / 2.0
    var = (2 * np.asarray(sigmas)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        e = d**2 / (2 * np.maximum(s2, 1e-12)[..., None] * var)
    score = np.where(both, np.exp(-e), 0.0).sum(-1)
    n = either.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, score / n, 1.0)
