"""Run-length-encoded masks: IoU with pycocotools (C), and mask centroids.

Masks of images of different sizes (cross-image comparisons during
calibration) are resampled to a common grid of ``COMMON_GRID`` pixels first.
Polygons can be rasterised to RLE too (distance ``mask_iou`` on polygons).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from ..lazy import LazyModule
from .registry import CENTROID_NEAREST, Prepared, centroid_pairs, centroid_similarity, register_distance

COMMON_GRID = (256, 256)


mask_utils = LazyModule("pycocotools.mask")   # imported on first use: box-only runs never pay for it


def to_rle(geometry, height: int, width: int) -> dict:
    """COCO RLE (compressed) from an RLE dict (compressed or not) or polygon rings."""
    if isinstance(geometry, dict):
        if isinstance(geometry.get("counts"), list):
            return mask_utils.frPyObjects(geometry, height, width)
        counts = geometry["counts"]
        return {"size": list(geometry["size"]), "counts": counts.encode() if isinstance(counts, str) else counts}
    # rings of fewer than 3 points enclose nothing (and 4 numbers would be read as a box)
    rings = [list(map(float, r)) for r in geometry if len(r) >= 6]
    if not rings:
        return mask_utils.encode(np.zeros((height, width), np.uint8, order="F"))
    return mask_utils.merge(mask_utils.frPyObjects(rings, height, width))


def _resample(rle: dict, grid=COMMON_GRID) -> dict:
    m = mask_utils.decode(rle)
    h, w = m.shape
    rows = (np.arange(grid[0]) + 0.5) * h / grid[0]
    cols = (np.arange(grid[1]) + 0.5) * w / grid[1]
    small = m[rows.astype(int)][:, cols.astype(int)]
    return mask_utils.encode(np.asfortranarray(small.astype(np.uint8)))


def _prepare(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    h, w = int(round(image.height)), int(round(image.width))
    rles = np.empty(len(anns), dtype=object)
    for k, a in enumerate(anns):
        rles[k] = to_rle(a.geometry, h, w)
    sizes = np.array([[h, w]] * len(anns), dtype=int).reshape(-1, 2)
    return Prepared(len(anns), rle=rles, size=sizes)


def prepare_masks(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """RLEs (pixel grid of the image) and mask centroids (image-relative)."""
    prep = _prepare(image, anns)
    cent = np.zeros((len(anns), 2))
    for k, rle in enumerate(prep["rle"]):
        m = mask_utils.decode(rle)
        ys, xs = np.nonzero(m)
        if len(xs):
            cent[k] = ((xs.mean() + 0.5) / m.shape[1], (ys.mean() + 0.5) / m.shape[0])
    prep.arrays["centroid"] = cent
    return prep


def mask_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Mask IoU with pycocotools; pairs from different image sizes are resampled."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    ra, rb = list(a["rle"]), list(b["rle"])
    sizes = {tuple(s) for s in a["size"]} | {tuple(s) for s in b["size"]}
    if len(sizes) > 1:
        ra, rb = [_resample(r) for r in ra], [_resample(r) for r in rb]
    return np.asarray(mask_utils.iou(ra, rb, [0] * len(rb)), dtype=float).reshape(len(a), len(b))


register_distance("rle", "iou", prepare=prepare_masks, description="Mask IoU (pycocotools RLE).")(mask_iou)
register_distance("polygon", "mask_iou", prepare=prepare_masks,
                  description="Polygons rasterised to RLE masks, then mask IoU.")(mask_iou)


@register_distance("rle", "centroid", prepare=prepare_masks, scale_invariant=False, pairs=centroid_pairs,
                   nearest_key=CENTROID_NEAREST)
def mask_centroid(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Distance between mask centroids, normalised by the image diagonal."""
    return centroid_similarity(a["centroid"], b["centroid"])
