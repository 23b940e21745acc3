"""Axis-aligned boxes: IoU, GIoU and the two centroid distances (vectorised)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..columns import box_array
from ..data import Annotation, ImageRecord
from .registry import (Prepared, box_intersection_union, box_iou_xyxy, centroid_box_similarity, centroid_similarity,
                       pixel_scale, register_distance)


def prepare_boxes(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """Boxes as image-relative ``(x1, y1, x2, y2)``, with the image's pixel size (``scale``)."""
    xywh = box_array(anns)
    scale = np.array([image.width, image.height, image.width, image.height])
    xywh = xywh / scale
    xyxy = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
    return Prepared(len(anns), xyxy=xyxy, scale=pixel_scale(image, len(anns)))


@register_distance("box", "iou", prepare=prepare_boxes)
def box_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Box intersection over union."""
    return box_iou_xyxy(a["xyxy"], b["xyxy"])


@register_distance("box", "giou", prepare=prepare_boxes)
def box_giou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Generalised IoU mapped to ``[0, 1]`` as ``(1 + GIoU) / 2``."""
    A, B = a["xyxy"], b["xyxy"]
    inter, union = box_intersection_union(A, B)
    cw = np.maximum(A[:, None, 2], B[None, :, 2]) - np.minimum(A[:, None, 0], B[None, :, 0])
    ch = np.maximum(A[:, None, 3], B[None, :, 3]) - np.minimum(A[:, None, 1], B[None, :, 1])
    enclosing = cw * ch
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / union, 0.0)
        giou = iou - np.where(enclosing > 0, (enclosing - union) / enclosing, 0.0)
    return (1.0 + giou) / 2.0


@register_distance("box", "centroid", prepare=prepare_boxes, scale_invariant=False)
def box_centroid(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Centroid L2 distance, normalised by the image diagonal."""
    ca = (a["xyxy"][:, :2] + a["xyxy"][:, 2:]) / 2.0
    cb = (b["xyxy"][:, :2] + b["xyxy"][:, 2:]) / 2.0
    return centroid_similarity(ca, cb)


@register_distance("box", "centroid_box", prepare=prepare_boxes)
def box_centroid_box(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Centroid L2 distance in pixels, normalised by the larger box's diagonal (scale-invariant)."""
    return centroid_box_similarity(a["xyxy"], a["scale"], b["xyxy"], b["scale"])
