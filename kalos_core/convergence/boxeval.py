"""COCOeval's box evaluation of one direction without its per-image Python loops.

Reproduces, bit for bit, what ``cocoeval.evaluate_direction`` reads from pycocotools for
boxes (verified on LVIS and the 291k-box file, tests/core/test_convergence.py):

* IoU as pycocotools' ``bbIou`` computes it (``fmin``/``fmax`` of the corners, ``da + ga - i``);
* the greedy match per threshold: detections by score (stable), each takes the unmatched ground
  truth with the largest IoU at or above the threshold (the last one among equal IoUs), ignored
  ground truth only when no other qualifies; ground truth is never a crowd here;
* an unmatched detection outside the area range is ignored;
* ``accumulate``'s precision array: cumulative TP / FP per category in the score order, its
  backward envelope and the first detection reaching each recall point.
"""

from __future__ import annotations

import numpy as np

#: COCO's IoU thresholds .50:.05:.95 and 101 recall points (pycocotools' defaults); one area range
IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
REC_THRESHOLDS = np.linspace(0.0, 1.00, 101)
ALL_AREAS = [0.0, 1e5**2]


def _columns(labels: list[dict], img_index: dict, cat_index: dict):
    img = np.array([img_index[d["image_id"]] for d in labels], dtype=np.int64)
    cat = np.array([cat_index[d["category_id"]] for d in labels], dtype=np.int64)
    box = np.array([d["bbox"] for d in labels], dtype=float).reshape(-1, 4)
    return img, cat, box


def _iou(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """pycocotools' ``bbIou`` (non-crowd) of boxes ``d`` (..., 4) against ``g`` (..., 4)."""
    w = np.minimum(d[..., 2] + d[..., 0], g[..., 2] + g[..., 0]) - np.maximum(d[..., 0], g[..., 0])
    h = np.minimum(d[..., 3] + d[..., 1], g[..., 3] + g[..., 1]) - np.maximum(d[..., 1], g[..., 1])
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        o = inter / (d[..., 2] * d[..., 3] + g[..., 2] * g[..., 3] - inter)
    return np.where((w > 0) & (h > 0), o, 0.0)


def match_boxes(gt_labels: list[dict], dt_labels: list[dict], image_ids: list, cats: list):
    """Greedy COCO matching of every (image, category).

    Returns
    -------
    order : (N,) detections (indices into ``dt_labels``) in accumulation order (category, score
        descending, image order, in-image order).
    det_cat, det_img : (N,) in that order.
    matched, ignored : (T, N) bool in that order.
    npig : (K, I) non-ignored ground truth per category and image.
    """
    I, K, T = len(image_ids), len(cats), len(IOU_THRESHOLDS)
    img_index, cat_index = {i: n for n, i in enumerate(image_ids)}, {c: n for n, c in enumerate(cats)}
    g_img, g_cat, g_box = _columns(gt_labels, img_index, cat_index)
    d_img, d_cat, d_box = _columns(dt_labels, img_index, cat_index)
    score = np.array([d["score"] for d in dt_labels], dtype=float)
    lo, hi = ALL_AREAS
    g_area, d_area = g_box[:, 2] * g_box[:, 3], d_box[:, 2] * d_box[:, 3]
    g_ig = (g_area < lo) | (g_area > hi)
    npig = np.bincount((g_img * K + g_cat)[~g_ig], minlength=I * K).reshape(I, K).T
    # groups (image, category) numbered among those present
    groups, inverse = np.unique(np.r_[g_img * K + g_cat, d_img * K + d_cat], return_inverse=True)
    g_grp, d_grp = inverse[:len(g_img)], inverse[len(g_img):]
    # ground truth per group: non-ignored first, then label order, in a padded (group, slot) table
    g_ord = np.lexsort((np.arange(len(g_grp)), g_ig, g_grp))
    n_g = np.bincount(g_grp, minlength=len(groups))
    G = int(n_g.max(initial=0))
    pad = np.arange(G)[None, :] >= n_g[:, None]                                # (groups, G)
    gi = g_ord[np.minimum((np.cumsum(n_g) - n_g)[:, None] + np.arange(G)[None, :], max(len(g_ord) - 1, 0))] \
        if len(g_ord) else np.zeros(pad.shape, dtype=np.int64)
    # detections per group by score (stable), then label order
    d_ord = np.lexsort((np.arange(len(d_grp)), -score, d_grp))
    n_d = np.bincount(d_grp, minlength=len(groups))
    rank = np.arange(len(d_ord)) - (np.cumsum(n_d) - n_d)[d_grp[d_ord]]
    d_grp_s = d_grp[d_ord]
    thr = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)[:, None, None]
    taken = np.zeros((T, len(groups), G), dtype=bool)
    m_s = np.zeros((T, len(d_ord)), dtype=bool)
    ig_s = np.zeros((T, len(d_ord)), dtype=bool)
    for r in range(int(n_d.max(initial=0))):
        at = np.flatnonzero(rank == r)
        grp = d_grp_s[at]
        if G == 0:
            break
        iou = _iou(d_box[d_ord[at]][:, None, :], g_box[gi[grp]])           # (A, G)
        free = ~taken[:, grp] & ~pad[grp][None] & (iou[None] >= thr)         # (T, A, G)
        m_s[:, at], ig_s[:, at], pick = _best(np.where(free, iou[None], -np.inf), g_ig[gi[grp]])
        t_hit, a_hit = np.nonzero(m_s[:, at])
        taken[t_hit, grp[a_hit], pick[t_hit, a_hit]] = True
    ig_s |= ~m_s & ((d_area < lo) | (d_area > hi))[d_ord][None]
    # accumulation order: category, score descending, image, in-image rank
    acc = np.lexsort((rank, d_img[d_ord], -score[d_ord], d_cat[d_ord]))
    return d_ord[acc], d_cat[d_ord][acc], d_img[d_ord][acc], m_s[:, acc], ig_s[:, acc], npig


def _best(val: np.ndarray, g_ig: np.ndarray):
    """Per (threshold, detection): matched, ignored (matched to ignored ground truth) and the slot
    of the chosen ground truth: the last largest IoU among non-ignored candidates, else among
    ignored ones."""
    plain = np.where(g_ig[None], -np.inf, val)
    use = np.where(np.isfinite(plain).any(axis=2, keepdims=True), plain, val)
    G = val.shape[2]
    pick = G - 1 - np.argmax(use[..., ::-1], axis=2)
    hit = np.isfinite(np.take_along_axis(use, pick[..., None], axis=2)[..., 0])
    ig = hit & np.take_along_axis(np.broadcast_to(g_ig[None], use.shape), pick[..., None], axis=2)[..., 0]
    return hit, ig, pick


def precision_array(det_cat, matched, ignored, npig) -> np.ndarray:
    """(T, R, K) COCOeval ``accumulate``'s precision (-1 where a category has no ground truth)."""
    T, R, K = matched.shape[0], len(REC_THRESHOLDS), npig.shape[0]
    out = -np.ones((T, R, K))
    n_gt = npig.sum(axis=1)
    for k in np.flatnonzero(n_gt):
        sel = det_cat == k
        tps = np.cumsum(matched[:, sel] & ~ignored[:, sel], axis=1).astype(float)
        fps = np.cumsum(~matched[:, sel] & ~ignored[:, sel], axis=1).astype(float)
        rc = tps / n_gt[k]
        pr = tps / (fps + tps + np.spacing(1))
        pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
        out[:, :, k] = 0.0
        for t in range(T):
            idx = np.searchsorted(rc[t], REC_THRESHOLDS, side="left")
            ok = idx < pr.shape[1]
            out[t, ok, k] = pr[t, idx[ok]]
    return out
