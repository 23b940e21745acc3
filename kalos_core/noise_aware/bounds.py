"""COCO AP with the noise-aware IoU bounds IoU ± ε̄(W, H) (the paper's Eq. 10), clipped to [0, 1].

ε̄ is that of the ground-truth box's size. A :class:`COCOeval` subclass shifts the IoU matrix
that ``evaluate()`` computes; matching, accumulation and the four COCO area ranges are
pycocotools' own. AP is read from the accumulated precision array.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
from pycocotools.cocoeval import COCOeval

from ..coco_eval import IOU_THRESHOLDS, REC_THRESHOLDS
from .tables import AREA_RANGES, SHIFTS, ap_table, bound_table


class ShiftedIoUEval(COCOeval):
    """COCOeval whose box IoU is ``clip(IoU + shift · ε̄(gt W, gt H), 0, 1)``."""

    def __init__(self, gt, dt, eps_fn, shift: float):
        super().__init__(gt, dt, "bbox")
        self.eps_fn, self.shift = eps_fn, float(shift)

    def computeIoU(self, imgId, catId):
        ious = super().computeIoU(imgId, catId)
        if self.shift == 0 or len(ious) == 0:
            return ious
        gt = self._gts[imgId, catId]
        gt_wh = np.array([g["bbox"][2:4] for g in gt], dtype=float)
        eps = self.eps_fn(gt_wh[:, 0], gt_wh[:, 1])
        return np.clip(np.asarray(ious) + self.shift * eps[None, :], 0.0, 1.0)


def bounded_ap(gt, dt, eps_fn, image_ids, cat_ids, max_dets: int) -> dict[str, dict[str, dict[str, float]]]:
    """AP at shifts −1, 0, +1 -> {area: {key: {"lower", "ap", "upper"}}} (fractions)."""
    tables = {}
    for name, shift in SHIFTS.items():
        with contextlib.redirect_stdout(io.StringIO()):
            ev = ShiftedIoUEval(gt, dt, eps_fn, shift)
            ev.params.imgIds, ev.params.catIds = list(image_ids), list(cat_ids)
            ev.params.iouThrs, ev.params.recThrs = IOU_THRESHOLDS.copy(), REC_THRESHOLDS.copy()
            ev.params.areaRng, ev.params.areaRngLbl = list(AREA_RANGES.values()), list(AREA_RANGES)
            ev.params.maxDets = [max_dets]
            ev.evaluate()
            ev.accumulate()
        tables[name] = ap_table(ev.eval["precision"][..., 0])
    return bound_table(tables)
