"""Regions read from FiftyOne labels: Detections' instance masks and Polylines (docs/input.md).

An instance mask covers its detection's box: it is stretched to the box's pixel extent
(nearest neighbour, as FiftyOne renders it), clipped to the image, and a pixel belongs to
the object when it is nonzero (any dtype; a colour mask: any of its first three channels).
A detection without a mask (neither ``mask`` nor ``mask_path``), a mask that is not
H x W (x 1, 3 or 4), and a region with no pixel / no area inside the image are refused,
naming the sample, field and label.
"""

from __future__ import annotations

import numpy as np

NO_MASK = ("has no instance mask (neither mask nor mask_path): a mask distance compares masks, "
           "so every detection needs one (choose a box distance, or add the masks)")
EMPTY = "has no area inside the image (an empty mask, or one that lies outside the image)"


def _binary(mask) -> tuple[np.ndarray | None, str | None]:
    m = np.asarray(mask)
    if m.ndim == 3 and m.shape[2] in (1, 3, 4):
        m = m[:, :, :3].any(axis=2) if m.shape[2] > 1 else m[:, :, 0]
    if m.ndim != 2 or m.dtype.kind not in "biuf":
        return None, (f"instance mask of shape {m.shape} and dtype {m.dtype} is not an image "
                      "(expected H x W, or H x W x 1/3/4 channels, of numbers)")
    return m != 0, None


def mask_frame(mask, box, width: int, height: int) -> tuple[np.ndarray | None, str | None]:
    """``(full-frame boolean mask, None)`` or ``(None, why it cannot be read)``."""
    if mask is None:
        return None, NO_MASK
    m, err = _binary(mask)
    if err:
        return None, err
    x0, y0 = int(round(box[0] * width)), int(round(box[1] * height))
    x1, y1 = int(round((box[0] + box[2]) * width)), int(round((box[1] + box[3]) * height))
    frame = np.zeros((height, width), bool)
    if x1 > x0 and y1 > y0 and m.size:
        if m.shape != (y1 - y0, x1 - x0):   # stretched over the box, nearest neighbour
            rows = ((np.arange(y1 - y0) + 0.5) * m.shape[0] / (y1 - y0)).astype(int)
            cols = ((np.arange(x1 - x0) + 0.5) * m.shape[1] / (x1 - x0)).astype(int)
            m = m[rows][:, cols]
        cy, cx = max(y0, 0), max(x0, 0)
        part = m[cy - y0: min(y1, height) - y0, cx - x0: min(x1, width) - x0]
        frame[cy: cy + part.shape[0], cx: cx + part.shape[1]] = part
    if not frame.any():
        return None, EMPTY
    return frame, None


def mask_rle(mask, box, width: int, height: int) -> tuple[dict | None, str | None]:
    """A Detection's instance mask as a full-frame COCO RLE, or ``(None, why not)``."""
    from pycocotools import mask as mask_utils

    frame, err = mask_frame(mask, box, width, height)
    if err:
        return None, err
    return mask_utils.encode(np.asfortranarray(frame.astype(np.uint8))), None


def load_mask(mask, path):
    """The label's ``mask``, or the image at its ``mask_path`` (None when it has neither)."""
    if mask is not None or not path:
        return mask
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im)


def polygons_without_area(images, field_of: dict) -> list[str]:
    """``sample, field, label: why`` for each polyline that encloses no area inside its image."""
    import shapely

    from kalos_core.geometry.polygons import ring_polygons

    out = []
    for im in images:
        if not im.annotations:
            continue
        rings, owner = ring_polygons(im, im.annotations)
        has = np.bincount(owner[shapely.area(rings) > 0], minlength=len(im.annotations)) > 0
        out += [f"sample {im.id}, field {field_of.get(a.id)}, label {a.id}: polyline encloses no area inside the "
                "image (a line, collinear or repeated points, or outside the image)"
                for a, ok in zip(im.annotations, has) if not ok]
    return out
