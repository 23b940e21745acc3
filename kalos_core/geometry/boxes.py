"""Axis-aligned boxes: IoU, GIoU and the two centroid distances (vectorised)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from .registry import (CENTROID_BOX_NEAREST, Prepared, box_areas, box_iou_xyxy, centroid_box_pairs,
                       centroid_box_similarity, centroid_key, centroid_similarity, centroid_similarity_of_key, iou_of,
                       paired_centroid_similarity, paired_intersection_union, register_distance)


def box_array(anns: Sequence[Annotation]) -> np.ndarray:
    """``(n, 4)`` float ``(x, y, w, h)`` of box annotations (columns: no copy of objects)."""
    boxes = getattr(anns, "boxes", None)   # :class:`kalos_core.columns.AnnotationColumns`
    if boxes is not None:
        return boxes
    return np.array([a.geometry for a in anns], dtype=float).reshape(-1, 4)


def prepare_boxes(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """Boxes as image-relative ``(x1, y1, x2, y2)``, with the image's pixel size (``scale``)."""
    sides = np.array([[image.width, image.height]], dtype=float)
    return prepare_box_columns(box_array(anns), np.broadcast_to(sides, (len(anns), 2)))


def image_sides(images: Sequence[ImageRecord]) -> np.ndarray:
    """``(n_images, 2)`` float pixel width and height of each image: ``image_sides(images)[img]`` is the
    ``sides`` argument of :func:`prepare_box_columns` for boxes of images ``img``."""
    return np.array([[im.width, im.height] for im in images], dtype=float).reshape(-1, 2)


def prepare_box_columns(xywh: np.ndarray, sides: np.ndarray) -> Prepared:
    """:func:`prepare_boxes` of boxes from many images: ``sides[k]`` is box k's image width, height."""
    xywh = xywh / np.concatenate([sides, sides], axis=1)
    xyxy = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
    return Prepared(len(xywh), xyxy=xyxy, scale=np.array(sides, dtype=float))


def _intersection_union(a: Prepared, b: Prepared) -> tuple[np.ndarray, np.ndarray]:
    return a.paired(b, "intersection_union", lambda: paired_intersection_union(
        a["xyxy"], b["xyxy"], a.derived("areas", _areas)[0], b.derived("areas", _areas)[0]))


def _areas(p: Prepared) -> tuple:
    return (box_areas(p["xyxy"]),)


def _iou_pairs(a: Prepared, b: Prepared) -> np.ndarray:
    return a.paired(b, "iou", lambda: iou_of(*_intersection_union(a, b)))


@register_distance("box", "iou", prepare=prepare_boxes, pairs=_iou_pairs, at_most_iou=True)
def box_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Box intersection over union."""
    return box_iou_xyxy(a["xyxy"], b["xyxy"])


def paired_giou_similarity(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(1 + GIoU) / 2`` of broadcast box pairs (see :mod:`kalos_core.geometry.registry`)."""
    inter, union = paired_intersection_union(A, B)
    return giou_similarity_of(A, B, union, iou_of(inter, union))


def giou_similarity_of(A: np.ndarray, B: np.ndarray, union: np.ndarray, iou: np.ndarray) -> np.ndarray:
    """:func:`paired_giou_similarity` given the pairs' union and IoU."""
    return giou_similarity_of_key(giou_of(A, B, union, iou))


def giou_of(A: np.ndarray, B: np.ndarray, union: np.ndarray, iou: np.ndarray) -> np.ndarray:
    """GIoU of broadcast box pairs given their union and IoU: the :attr:`DistanceSpec.nearest_key` of ``giou``
    (``(1 + g) / 2`` is non-decreasing in ``g``, so the most similar pair's is that of the largest GIoU)."""
    cw = np.maximum(A[..., 2], B[..., 2]) - np.minimum(A[..., 0], B[..., 0])
    ch = np.maximum(A[..., 3], B[..., 3]) - np.minimum(A[..., 1], B[..., 1])
    enclosing = cw * ch
    with np.errstate(divide="ignore", invalid="ignore"):
        return iou - np.where(enclosing > 0, (enclosing - union) / enclosing, 0.0)


def giou_similarity_of_key(giou: np.ndarray) -> np.ndarray:
    """``(1 + GIoU) / 2`` (the similarity of :func:`giou_of`)."""
    return (1.0 + giou) / 2.0


def _giou_pairs(a: Prepared, b: Prepared) -> np.ndarray:
    return giou_similarity_of_key(_giou_keys(a, b))


def _giou_keys(a: Prepared, b: Prepared) -> np.ndarray:
    return giou_of(a["xyxy"], b["xyxy"], _intersection_union(a, b)[1], _iou_pairs(a, b))


@register_distance("box", "giou", prepare=prepare_boxes, pairs=_giou_pairs,
                   nearest_key=(_giou_keys, giou_similarity_of_key))
def box_giou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Generalised IoU mapped to ``[0, 1]`` as ``(1 + GIoU) / 2``."""
    return paired_giou_similarity(a["xyxy"][:, None, :], b["xyxy"][None, :, :])


def _centres(xyxy: np.ndarray) -> np.ndarray:
    return (xyxy[:, :2] + xyxy[:, 2:]) / 2.0


def _box_centres(p: Prepared) -> tuple:
    return (_centres(p["xyxy"]),)


def _centroid_pairs(a: Prepared, b: Prepared) -> np.ndarray:
    return paired_centroid_similarity(a.derived("centres", _box_centres)[0], b.derived("centres", _box_centres)[0])


def _centroid_keys(a: Prepared, b: Prepared) -> np.ndarray:
    return centroid_key(a.derived("centres", _box_centres)[0], b.derived("centres", _box_centres)[0])


@register_distance("box", "centroid", prepare=prepare_boxes, scale_invariant=False, pairs=_centroid_pairs,
                   nearest_key=(_centroid_keys, centroid_similarity_of_key))
def box_centroid(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Centroid L2 distance, normalised by the image diagonal."""
    return centroid_similarity(_centres(a["xyxy"]), _centres(b["xyxy"]))


@register_distance("box", "centroid_box", prepare=prepare_boxes, pairs=centroid_box_pairs,
                   nearest_key=CENTROID_BOX_NEAREST)
def box_centroid_box(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Centroid L2 distance in pixels, normalised by the larger box's diagonal (scale-invariant)."""
    return centroid_box_similarity(a["xyxy"], a["scale"], b["xyxy"], b["scale"])
