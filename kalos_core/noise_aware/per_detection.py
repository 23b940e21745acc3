"""Per prediction: matched or not at each IoU threshold under IoU − ε̄, IoU and IoU + ε̄, its IoU
and the bounds — what a reader browses next to AP^l / AP / AP^u.

One COCOeval ``evaluate()`` per shift (all areas, no ``maxDets`` truncation), read from its
per-image results: ``dtMatches`` (COCOeval's greedy matching, as the AP uses it) and the IoU
matrix of the unshifted run. A prediction's IoU is that of the ground truth it matches at .50,
otherwise its best IoU with a ground truth of its class (0 when there is none); ε̄ is that of
the same ground truth's size, so the bounds are clip(IoU ∓ ε̄, 0, 1). Its size is COCO's of its
own box (area < 32², < 96², else large), as COCOeval ranges an unmatched detection.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
from pycocotools.coco import COCO

from ..coco_eval import IOU_THRESHOLDS, REC_THRESHOLDS
from ..convergence.cocoeval import rater_labels
from ..io.predictions import prepare_predictions
from .bounds import ShiftedIoUEval
from .tables import AREA_RANGES, SHIFTS


def _evaluate(gt, dt, eps_fn, shift, image_ids, cat_ids, max_dets):
    with contextlib.redirect_stdout(io.StringIO()):
        ev = ShiftedIoUEval(gt, dt, eps_fn, shift)
        ev.params.imgIds, ev.params.catIds = list(image_ids), list(cat_ids)
        ev.params.iouThrs, ev.params.recThrs = IOU_THRESHOLDS.copy(), REC_THRESHOLDS.copy()
        ev.params.areaRng, ev.params.areaRngLbl = [AREA_RANGES["all"]], ["all"]
        ev.params.maxDets = [max_dets]
        ev.evaluate()
    return ev


def status(lower: bool, upper: bool) -> str:
    """``matched`` (even under IoU − ε̄), ``unmatched`` (not even under IoU + ε̄), else ``uncertain``."""
    return "matched" if lower and upper else "unmatched" if not (lower or upper) else "uncertain"


def size_of(area: float) -> str:
    """COCO size of a box area in pixels²: ``small`` (< 32²), ``medium`` (< 96²), else ``large``."""
    return "small" if area < 32 ** 2 else "medium" if area < 96 ** 2 else "large"


def coco_pair(dataset, images: list, gt_labels: list[dict], preds: list[dict], cats: list):
    """pycocotools' ground truth (ids 1..n) and ``loadRes`` detections, and a ``maxDets`` that truncates nothing."""
    gt, on_images = COCO(), set(images)
    gt.dataset = {"images": [{"id": im.id, "width": im.width, "height": im.height}
                             for im in dataset.images if im.id in on_images],
                  "annotations": [{"id": n, "image_id": d["image_id"], "category_id": d["category_id"],
                                   "bbox": d["bbox"], "area": d["bbox"][2] * d["bbox"][3], "iscrowd": 0}
                                  for n, d in enumerate(gt_labels, start=1)],
                  "categories": [{"id": c} for c in cats]}
    counts: dict = {}
    for p in preds:
        counts[p["image_id"], p["category_id"]] = counts.get((p["image_id"], p["category_id"]), 0) + 1
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes([{k: p[k] for k in ("image_id", "category_id", "bbox", "score")} for p in preds])
    return gt, dt, max(counts.values()) + 1


def prediction_outcomes(dataset, predictions, reference: str, images: list, cats: list, eps_fn) -> dict:
    """:func:`detection_outcomes` of ``predictions`` (COCO results) against ``reference`` on ``images``."""
    gt_labels = rater_labels(dataset, reference, images)
    on_images = set(images)
    preds = [p for p in prepare_predictions(predictions, dataset, "bbox") if p["image_id"] in on_images]
    gt, dt, max_dets = coco_pair(dataset, images, gt_labels, preds, cats)
    return detection_outcomes(gt, dt, eps_fn, images, cats, max_dets, [p["source_id"] for p in preds])


def detection_outcomes(gt, dt, eps_fn, image_ids, cat_ids, max_dets: int, source_ids: list) -> dict:
    """``{source id: {"matched": {bound: [bool × 10]}, "status": [str × 10], "iou", "iou_lower",
    "iou_upper", "uncertain", "size"}}`` for every detection of ``dt`` (ids 1..n, ``source_ids[n - 1]``)."""
    matched = {}
    ev0 = None
    for name, shift in SHIFTS.items():
        ev = _evaluate(gt, dt, eps_fn, shift, image_ids, cat_ids, max_dets)
        ev0 = ev if shift == 0 else ev0
        for e in ev.evalImgs:
            if e is None:
                continue
            m = np.asarray(e["dtMatches"]) > 0                         # (T, D)
            for j, did in enumerate(e["dtIds"]):
                matched.setdefault(did, {})[name] = m[:, j].tolist()
    iou = {}
    for e in ev0.evalImgs:
        if e is None:
            continue
        ious = ev0.ious.get((e["image_id"], e["category_id"]))
        gts = ev0._gts[e["image_id"], e["category_id"]]
        col = {g["id"]: k for k, g in enumerate(gts)}
        for j, did in enumerate(e["dtIds"]):
            if len(gts) == 0 or ious is None or len(ious) == 0:
                iou[did] = (0.0, None)
                continue
            row = np.asarray(ious)[j]
            gid = int(e["dtMatches"][0][j])
            k = col[gid] if gid in col else int(np.argmax(row))
            iou[did] = (float(row[k]), gts[k]["bbox"])
    out = {}
    for did, by in matched.items():
        value, box = iou.get(did, (0.0, None))
        eps = float(eps_fn(np.array([box[2]]), np.array([box[3]]))[0]) if box is not None else 0.0
        statuses = [status(lo, up) for lo, up in zip(by["lower"], by["upper"])]
        out[source_ids[did - 1]] = {
            "matched": by, "status": statuses, "uncertain": "uncertain" in statuses, "iou": value,
            "iou_lower": float(np.clip(value - eps, 0, 1)), "iou_upper": float(np.clip(value + eps, 0, 1)),
            "size": size_of(dt.anns[did]["bbox"][2] * dt.anns[did]["bbox"][3])}
    return out
