"""Re-accumulate COCO AP on a subset of images from one direction's per-image results.

``COCOeval.accumulate`` walks categories in Python; a bootstrap of 1,000 subsets would call it
2,000 times. Restricting the detections of a :class:`~.cocoeval.DirectionTable` to the subset's
images keeps their accumulation order, so the subset's AP follows from segmented cumulative sums,
vectorised over categories and IoU thresholds. It reproduces ``accumulate()`` exactly, including
its float comparison of recall against the 101 recall points (``recall_steps`` works in integers).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .cocoeval import REC_THRESHOLDS, DirectionTable


@lru_cache(maxsize=64)
def _first_tp_needed(npig_max: int) -> np.ndarray:
    """(npig_max + 1, R) int: for ``n`` ground-truth objects, the smallest true-positive count
    ``k`` with ``k / n >= r`` (in float64, as COCOeval computes recall) per recall point ``r``;
    ``n + 1`` where none reaches it."""
    n = np.arange(npig_max + 1, dtype=float)[:, None]
    k = np.ceil(REC_THRESHOLDS[None, :] * n).astype(np.int64)
    for _ in range(2):   # fix the float rounding of the ceiling in both directions
        with np.errstate(divide="ignore", invalid="ignore"):
            too_low = (k / n) < REC_THRESHOLDS[None, :]
            k = k + too_low
            lower_ok = ((k - 1) / n) >= REC_THRESHOLDS[None, :]
            k = k - (lower_ok & (k > 0))
    k[0, :] = 1
    return np.minimum(k, np.arange(npig_max + 1)[:, None] + 1)


def subset_ap(table: DirectionTable, image_mask: np.ndarray | None = None) -> np.ndarray:
    """AP per IoU threshold and category on the images where ``image_mask`` is true.

    Parameters
    ----------
    table : one direction's per-image results.
    image_mask : (I,) bool over ``table.image_ids``; None = all images.

    Returns
    -------
    (T, K) float: AP in [0, 1], NaN where the category has no ground truth on the subset
    (COCOeval's -1).
    """
    T = table.matched.shape[0]
    if image_mask is None:
        image_mask = np.ones(len(table.image_ids), dtype=bool)
    npig = table.npig[:, image_mask].sum(axis=1)
    ap = np.where(npig > 0, 0.0, np.nan)[None, :].repeat(T, axis=0)
    keep = image_mask[table.det_img]
    seg = table.det_cat[keep]
    if len(seg) == 0 or not (npig > 0).any():
        return ap
    m, ig = table.matched[:, keep], table.ignored[:, keep]
    tp, fp = (m & ~ig), (~m & ~ig)
    tp_cum, fp_cum = np.cumsum(tp, axis=1), np.cumsum(fp, axis=1)
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    lengths = np.diff(np.r_[starts, len(seg)])
    base_tp = np.repeat(np.where(starts > 0, tp_cum[:, starts - 1], 0) * (starts > 0), lengths, axis=1)
    base_fp = np.repeat(np.where(starts > 0, fp_cum[:, starts - 1], 0) * (starts > 0), lengths, axis=1)
    tp_c, fp_c = tp_cum - base_tp, fp_cum - base_fp
    pr = tp_c / (tp_c + fp_c + np.spacing(1))
    # precision envelope: max over the rest of the segment (COCOeval's backward sweep)
    seg_of = np.repeat(np.arange(len(starts)), lengths)
    offset = 2.0 * (len(starts) - seg_of)
    env = np.maximum.accumulate((pr + offset)[:, ::-1], axis=1)[:, ::-1] - offset
    # first detection of each segment whose TP count reaches the count each recall point needs
    cats = seg[starts]
    n_seg = npig[cats]
    need = _first_tp_needed(int(npig.max()))[n_seg]                  # (S, R)
    big = int(max(tp_c.max(), n_seg.max())) + 2
    out = np.zeros((T, len(starts), need.shape[1]))
    seg_key = seg_of * big
    for t in range(T):
        key = seg_key + tp_c[t]
        idx = np.searchsorted(key, (np.arange(len(starts)) * big)[:, None] + need, side="left")
        valid = (idx < (starts + lengths)[:, None]) & (need <= n_seg[:, None])
        out[t] = np.where(valid, env[t][np.minimum(idx, len(seg) - 1)], 0.0)
    ap[:, cats] = np.where(n_seg > 0, out.mean(axis=2), ap[:, cats])
    return ap
