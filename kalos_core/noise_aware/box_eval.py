"""The noise-aware AP bounds from arrays: :func:`.bounds.bounded_ap`'s three pycocotools runs with
four area ranges (12 matchings of every (image, class) in Python), here :class:`kalos_core.coco_eval.BoxEval`
with the IoU shift ``clip(IoU + shift · ε̄(gt W, gt H), 0, 1)``, bit for bit
(tests/core/test_noise_aware_box_eval.py holds the two equal)."""

from __future__ import annotations

import numpy as np

from ..coco_eval import Boxes, BoxEval
from .tables import AREA_RANGES, SHIFTS, ap_table, bound_table


def bounded_ap_arrays(gt: Boxes, dt: Boxes, scores: np.ndarray, n_cats: int, eps_fn) -> dict:
    """:func:`.bounds.bounded_ap` of ``gt`` and ``dt`` (its ``loadRes`` order, with ``scores``)."""
    gt_eps = np.asarray(eps_fn(gt.xywh[:, 2], gt.xywh[:, 3]), dtype=float).reshape(-1)
    ev = BoxEval(gt, dt, scores, n_cats, gt_eps)
    return bound_table({name: ap_table(np.stack([ev.precision(shift, tuple(rng)) for rng in AREA_RANGES.values()],
                                                axis=-1))
                        for name, shift in SHIFTS.items()})


def bounded_ap_columns(gt_labels: list[dict], preds: list[dict], image_ids, cat_ids, eps_fn) -> dict:
    """:func:`.bounds.bounded_ap` of the COCO dicts ``gt_labels`` and ``preds`` (its ``loadRes`` order)
    on ``image_ids`` and ``cat_ids``."""
    img_at = {i: n for n, i in enumerate(np.unique(np.asarray(list(image_ids))).tolist())}
    cat_at = {c: n for n, c in enumerate(np.unique(np.asarray(list(cat_ids))).tolist())}
    return bounded_ap_arrays(Boxes.from_dicts(gt_labels, img_at, cat_at), Boxes.from_dicts(preds, img_at, cat_at),
                             np.array([d["score"] for d in preds], dtype=float), len(cat_at), eps_fn)


def coco_boxes(image_pos: np.ndarray, cat: np.ndarray, xywh: np.ndarray, images: list, cats: np.ndarray) -> Boxes:
    """:class:`kalos_core.coco_eval.Boxes` with pycocotools' image ranks (its sorted ``np.unique`` of ids) and class indices."""
    rank = {v: n for n, v in enumerate(np.unique(np.asarray(images)).tolist())}
    image_rank = np.array([rank[i] for i in images], dtype=np.int64)
    return Boxes(xywh, image_rank[image_pos] if len(image_pos) else image_pos, np.searchsorted(cats, cat))
