"""COCOeval's box evaluation in whole-array operations, bit for bit pycocotools' numbers.

One implementation for every measure that evaluates boxes the COCO way: label convergence
(:mod:`.convergence.cocoeval`, its bootstrap reads the per-detection arrays) and the noise-aware
AP bounds (:mod:`.noise_aware.box_eval`, a per-ground-truth IoU shift and four area ranges).
Tests: tests/core/test_convergence.py and tests/core/test_noise_aware_box_eval.py hold it equal
to pycocotools on LVIS, the corner cases and random files.

* IoU: every (prediction, ground truth) pair of an (image, class), with pycocotools' ``bbIou``
  arithmetic (``fmin``/``fmax`` of the corners, ``da + ga - i``); optionally shifted
  ``clip(IoU + shift · ε(gt), 0, 1)``; ground truth is never a crowd here;
* matching: COCOeval's greedy (predictions by score, stable; each takes the available ground truth
  with the highest IoU ≥ t, the last one among equals, non-ignored before ignored), for every
  (image, class) and threshold at once, one prediction rank per step; an unmatched prediction
  outside the area range is ignored;
* accumulation: COCOeval's precision array (cumulative TP / FP per class in the score order, its
  backward envelope, the first detection reaching each recall point), a class at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from .arrays import ranges

#: COCO's IoU thresholds .50:.05:.95 and 101 recall points (pycocotools' defaults); the "all" area range
IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
REC_THRESHOLDS = np.linspace(0.0, 1.00, 101)
ALL_AREAS = (0.0, 1e5**2)


@dataclass
class Boxes:
    """One side's boxes: ``xywh`` (n, 4), image index and class index (n,)."""

    xywh: np.ndarray
    img: np.ndarray
    cat: np.ndarray

    @property
    def area(self) -> np.ndarray:
        return self.xywh[:, 2] * self.xywh[:, 3]

    @classmethod
    def from_dicts(cls, labels: list[dict], img_at: dict, cat_at: dict) -> Boxes:
        """COCO dicts (``bbox``, ``image_id``, ``category_id``) with indices ``img_at[id]``, ``cat_at[id]``."""
        return cls(np.array([d["bbox"] for d in labels], dtype=float).reshape(-1, 4),
                   np.array([img_at[d["image_id"]] for d in labels], dtype=np.int64),
                   np.array([cat_at[d["category_id"]] for d in labels], dtype=np.int64))


def coco_iou(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """IoU of paired xywh rows with pycocotools' ``bbIou`` arithmetic (0 where they do not overlap)."""
    w = np.minimum(d[:, 2] + d[:, 0], g[:, 2] + g[:, 0]) - np.maximum(d[:, 0], g[:, 0])
    h = np.minimum(d[:, 3] + d[:, 1], g[:, 3] + g[:, 1]) - np.maximum(d[:, 1], g[:, 1])
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (d[:, 2] * d[:, 3] + g[:, 2] * g[:, 3] - inter)
    return np.where((w > 0) & (h > 0), iou, 0.0)


class BoxEval:
    """The pairs, ranks and orders shared by every shift and area range of one evaluation.

    ``scores`` are the predictions' (``dt`` in pycocotools' ``loadRes`` order); ``n_cats`` classes;
    ``gt_eps`` (n gt,) the IoU shift's unit per ground truth (None: no shift); ``floor`` the lowest
    threshold :meth:`match` will be asked for (pairs below it are dropped; default COCO's 0.5)."""

    def __init__(self, gt: Boxes, dt: Boxes, scores: np.ndarray, n_cats: int, gt_eps: np.ndarray | None = None,
                 floor: float | None = None):
        self.gt, self.dt, self.n_cats, self.gt_eps = gt, dt, n_cats, gt_eps
        gkey, dkey = gt.img * n_cats + gt.cat, dt.img * n_cats + dt.cat
        # a prediction's rank among its (image, class) by score, stable (COCOeval's mergesort)
        by_score = np.lexsort((np.arange(len(dkey)), -scores, dkey))
        first = np.searchsorted(dkey[by_score], dkey[by_score], side="left")
        self.rank = np.empty(len(dkey), dtype=np.int64)
        self.rank[by_score] = np.arange(len(dkey)) - first
        #: accumulation order: class, score descending, image, loadRes order
        self.acc_order = np.lexsort((np.arange(len(dkey)), dt.img, -scores, dt.cat))
        # every (prediction, ground truth) pair of an (image, class), ground truths in their order
        g_order = np.argsort(gkey, kind="stable")
        lo = np.searchsorted(gkey[g_order], dkey, side="left")
        hi = np.searchsorted(gkey[g_order], dkey, side="right")
        pd, at = ranges(lo, hi - lo)
        pg = g_order[at]
        raw = coco_iou(dt.xywh[pd], gt.xywh[pg])
        reach = raw if gt_eps is None else np.maximum(
            raw, np.maximum(*(np.clip(raw + s * gt_eps[pg], 0.0, 1.0) for s in (-1.0, 1.0))))
        floor = IOU_THRESHOLDS.min() if floor is None else min(floor, 1 - 1e-10)
        keep = np.flatnonzero(reach >= floor)                                      # the rest never match
        order = keep[np.lexsort((pg[keep], pd[keep], self.rank[pd[keep]]))]        # by rank, prediction, gt
        self.pd, self.pg, self.raw = pd[order], pg[order], raw[order]

    def shifted(self, shift: float) -> np.ndarray:
        """The pairs' IoU shifted by ``shift`` units of ``gt_eps`` (:class:`.noise_aware.bounds.ShiftedIoUEval`)."""
        return self.raw if shift == 0 else np.clip(self.raw + shift * self.gt_eps[self.pg], 0.0, 1.0)

    def match(self, shift: float = 0.0, area=ALL_AREAS, thresholds: np.ndarray = IOU_THRESHOLDS,
              with_gt: bool = False) -> tuple[np.ndarray, ...]:
        """COCOeval's matching at every threshold: ``(matched, ignored, gt_ignored)``, (T, n dt) and (n gt,) bool;
        ``thresholds`` (T,) none below the ``floor``; ``with_gt``: a fourth, (T, n dt) the matched ground
        truth's index (-1: none)."""
        T = len(thresholds)
        thr = np.minimum(np.asarray(thresholds, dtype=float), 1 - 1e-10)[:, None]
        gt_ig = (self.gt.area < area[0]) | (self.gt.area > area[1])
        v = self.shifted(shift)
        pd, pg = self.pd, self.pg
        nig = ~gt_ig[pg]
        gtm = np.zeros((T, len(gt_ig)), dtype=bool)
        dtm = np.zeros((T, len(self.rank)), dtype=bool)
        dt_ig = np.zeros((T, len(self.rank)), dtype=bool)
        dt_gt = np.full((T, len(self.rank)), -1, dtype=np.int64)
        rank = self.rank[pd]
        bounds = np.searchsorted(rank, np.arange(rank[-1] + 2 if len(pd) else 0))
        for a, b in pairwise(bounds):
            if a == b:
                continue
            vs, gs, ns = v[a:b], pg[a:b], nig[a:b]
            starts = np.flatnonzero(np.r_[True, pd[a + 1:b] != pd[a:b - 1]])
            lengths = np.diff(np.r_[starts, b - a])
            ok = (vs >= thr) & ~gtm[:, gs]                                             # (T, P)
            has_free = np.maximum.reduceat(np.where(ok & ns, vs, -1.0), starts, axis=1) >= 0
            ok &= ns == np.repeat(has_free, lengths, axis=1)       # non-ignored ones first, if any
            best = np.maximum.reduceat(np.where(ok, vs, -1.0), starts, axis=1)
            win = ok & (vs == np.repeat(best, lengths, axis=1))
            last = np.maximum.reduceat(np.where(win, np.arange(a, b), -1), starts, axis=1)
            t, _ = np.nonzero(last >= 0)
            p = last[last >= 0]
            gtm[t, pg[p]] = True
            dtm[t, pd[p]] = True
            dt_ig[t, pd[p]] = gt_ig[pg[p]]
            dt_gt[t, pd[p]] = pg[p]
        dt_out = (self.dt.area < area[0]) | (self.dt.area > area[1])
        out = dtm, dt_ig | (~dtm & dt_out[None, :]), gt_ig
        return (*out, dt_gt) if with_gt else out

    def precision(self, shift: float = 0.0, area=ALL_AREAS) -> np.ndarray:
        """(T, R, K) COCOeval's accumulated precision (-1 for a class without non-ignored ground truth)."""
        return self.accumulate(*self.match(shift, area))

    def accumulate(self, dtm: np.ndarray, dt_ig: np.ndarray, gt_ig: np.ndarray) -> np.ndarray:
        """:meth:`precision` of one :meth:`match`'s ``(matched, ignored, gt_ignored)``."""
        T, R = len(IOU_THRESHOLDS), len(REC_THRESHOLDS)
        out = -np.ones((T, R, self.n_cats))
        npig = np.bincount(self.gt.cat[~gt_ig], minlength=self.n_cats)
        order = self.acc_order
        cat_of = self.dt.cat[order]
        edges = np.searchsorted(cat_of, np.arange(self.n_cats + 1))
        for k in np.flatnonzero(npig):
            idx = order[edges[k]:edges[k + 1]]
            m, ig = dtm[:, idx], dt_ig[:, idx]
            tp = np.cumsum(m & ~ig, axis=1).astype(float)
            fp = np.cumsum(~m & ~ig, axis=1).astype(float)
            rc = tp / npig[k]
            pr = tp / (fp + tp + np.spacing(1))
            nd = len(idx)
            out[:, :, k] = 0.0
            if not nd:
                continue
            pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
            for t in range(T):
                at = np.searchsorted(rc[t], REC_THRESHOLDS, side="left")
                out[t, :, k] = np.where(at < nd, pr[t][np.minimum(at, nd - 1)], 0.0)
        return out
