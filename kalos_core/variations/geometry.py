"""One image's geometry for the variation types: IoU of originals and of merged pieces.

A *merge* joins two same-class labels of one rater into one shape — the enclosing box
for boxes, the union for polygons and masks — so that it can be compared with the other
rater's single label (step 2: same class, step 4: other class). Merges are built in the
input's own format and prepared by the same registered distance as the originals
(:mod:`kalos_core.geometry`), so every IoU comes from one place.

Only *plausible* merges are built: both pieces must overlap the partner's box, and an
upper bound of the IoU (the enclosing box's intersection with the partner's box over the
largest of the three areas) must reach the lowest threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..data import Annotation, ImageRecord
from ..geometry import DistanceSpec
from ..geometry.masks import mask_utils, to_rle
from ..geometry.registry import boxes_overlap
from ..agreement.problem import annotation_key


def _merge_boxes(a: Annotation, b: Annotation, image: ImageRecord):
    (ax, ay, aw, ah), (bx, by, bw, bh) = a.geometry, b.geometry
    x1, y1 = min(ax, bx), min(ay, by)
    return (x1, y1, max(ax + aw, bx + bw) - x1, max(ay + ah, by + bh) - y1)


def _merge_polygons(a: Annotation, b: Annotation, image: ImageRecord):
    return [*a.geometry, *b.geometry]  # the polygon distances take the union of an annotation's rings


def _merge_masks(a: Annotation, b: Annotation, image: ImageRecord):
    h, w = int(round(image.height)), int(round(image.width))
    return mask_utils.merge([to_rle(a.geometry, h, w), to_rle(b.geometry, h, w)], intersect=False)


#: geometry kind -> ``merge(a, b, image) -> geometry`` (kinds without an entry: no merge steps)
MERGERS: dict[str, Callable] = {"box": _merge_boxes, "polygon": _merge_polygons, "rle": _merge_masks}


@dataclass
class MergeCandidates:
    """Merged pieces ``(i, j)`` of one rater against labels ``k`` of another, with their IoU.

    All arrays have one entry per candidate; indices refer to the image's canonical order.
    """

    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    iou: np.ndarray

    @classmethod
    def empty(cls) -> "MergeCandidates":
        e = np.zeros(0, np.int64)
        return cls(e, e, e, np.zeros(0))


@dataclass
class ImageGeometry:
    """Annotations in canonical order, their rows, classes and IoU matrix (cross-rater)."""

    image: ImageRecord
    rows: tuple[str, ...]
    annotations: list[Annotation]
    rater: np.ndarray
    category: np.ndarray
    sim: np.ndarray
    xyxy: np.ndarray | None   #: image-relative bounding boxes (None: unknown)
    area: np.ndarray | None   #: image-relative areas (None: unknown)
    prepared: object
    spec: DistanceSpec


def _bounds(image: ImageRecord, anns: list[Annotation], prep, kind: str):
    scale = np.array([image.width, image.height, image.width, image.height], float)
    if "xyxy" in prep.arrays:
        xyxy = np.asarray(prep["xyxy"], float).reshape(-1, 4)
    elif anns and all(a.bbox for a in anns):
        b = np.array([a.bbox for a in anns], float) / scale
        xyxy = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1)
    else:
        return None, None
    if "area" in prep.arrays:
        area = np.asarray(prep["area"], float)
    elif kind == "box":
        area = (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1])
    else:
        area = None
    return xyxy, area


def image_geometry(image: ImageRecord, spec: DistanceSpec, floor: float) -> ImageGeometry:
    """Canonical order (as in agreement), rows, classes and the cross-rater IoU matrix."""
    rows = tuple(sorted(image.raters))
    row_index = {r: k for k, r in enumerate(rows)}
    anns = sorted(image.annotations, key=annotation_key)
    rater = np.array([row_index[a.rater] for a in anns], dtype=np.int64)
    category = np.array([a.category for a in anns], dtype=np.int64)
    prep = spec.prepare(image, anns)
    if anns:
        need = rater[:, None] != rater[None, :]
        sim = np.where(need, spec.similarity(prep, prep, need=need, floor=floor), 0.0)
        sim = np.maximum(sim, sim.T)
    else:
        sim = np.zeros((0, 0))
    xyxy, area = _bounds(image, anns, prep, spec.kind)
    return ImageGeometry(image, rows, anns, rater, category, sim, xyxy, area, prep, spec)


def merge_bound_ok(a: np.ndarray, b: np.ndarray, k: np.ndarray, area_a: np.ndarray, area_b: np.ndarray,
                   area_k: np.ndarray, floor: float) -> np.ndarray:
    """Can the merge of boxes ``a`` and ``b`` (image-relative xyxy rows) reach IoU ``floor`` with box
    ``k``? The enclosing box's intersection with ``k`` over the largest of the three areas bounds it."""
    enc = np.concatenate([np.minimum(a[:, :2], b[:, :2]), np.maximum(a[:, 2:], b[:, 2:])], axis=1)
    w = np.clip(np.minimum(enc[:, 2], k[:, 2]) - np.maximum(enc[:, 0], k[:, 0]), 0, None)
    h = np.clip(np.minimum(enc[:, 3], k[:, 3]) - np.maximum(enc[:, 1], k[:, 1]), 0, None)
    big = np.maximum.reduce([area_a, area_b, area_k])
    with np.errstate(divide="ignore", invalid="ignore"):
        return w * h >= floor * big * (1 - 1e-9)


def merge_candidates(g: ImageGeometry, own: np.ndarray, other: np.ndarray, floor: float) -> MergeCandidates:
    """Plausible merges of two same-class labels in ``own`` against each label in ``other``.

    Returns the candidates whose IoU reaches ``floor`` (any class of the partner; the steps
    filter by class and by what is still unmatched).
    """
    merge = MERGERS.get(g.spec.kind)
    if merge is None or len(own) < 2 or len(other) == 0 or g.xyxy is None:
        return MergeCandidates.empty()
    A, B = g.xyxy[own], g.xyxy[other]
    touch = boxes_overlap(A, B)                                        # (n_own, n_other)
    same = g.category[own][:, None] == g.category[own][None, :]
    upper = np.triu(same, 1)
    ii, jj, kk = np.nonzero(upper[:, :, None] & touch[:, None, :] & touch[None, :, :])
    if len(ii) and g.area is not None:
        ok = merge_bound_ok(A[ii], A[jj], B[kk], g.area[own][ii], g.area[own][jj], g.area[other][kk], floor)
        ii, jj, kk = ii[ok], jj[ok], kk[ok]
    if len(ii) == 0:
        return MergeCandidates.empty()
    pairs, inverse = np.unique(np.stack([ii, jj], 1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    anns = [g.annotations[k] for k in own]
    merged = [Annotation(("merge", p, q), anns[p].rater, anns[p].category,
                         merge(anns[p], anns[q], g.image)) for p, q in pairs]
    prep_m = g.spec.prepare(g.image, merged)
    cols, col_of = np.unique(kk, return_inverse=True)
    need = np.zeros((len(pairs), len(cols)), bool)
    need[inverse, col_of.reshape(-1)] = True
    sim = g.spec.similarity(prep_m, g.prepared.take(other[cols]), need=need, floor=floor)
    iou = sim[inverse, col_of.reshape(-1)]
    keep = iou >= floor
    return MergeCandidates(own[ii[keep]], own[jj[keep]], other[kk[keep]], iou[keep])
