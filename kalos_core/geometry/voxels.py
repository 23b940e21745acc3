"""Voxel sets (3D): voxel IoU (Eq. 28) on a shared integer grid."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from .registry import Prepared, register_distance


def prepare_voxels(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """Each annotation's voxels as a sorted array of unique int64 keys."""
    keys = np.empty(len(anns), dtype=object)
    for i, a in enumerate(anns):
        v = np.asarray(a.geometry, dtype=np.int64).reshape(-1, 3)
        keys[i] = np.unique((v[:, 0] << 42) + (v[:, 1] << 21) + v[:, 2])
    sizes = np.array([len(k) for k in keys], dtype=float)
    return Prepared(len(anns), keys=keys, size=sizes)


@register_distance("voxels", "iou", prepare=prepare_voxels)
def voxel_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Voxel intersection over union."""
    out = np.zeros((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            if need is not None and not need[i, j]:
                continue
            inter = len(np.intersect1d(a["keys"][i], b["keys"][j], assume_unique=True))
            union = a["size"][i] + b["size"][j] - inter
            out[i, j] = inter / union if union > 0 else 0.0
    return out
