"""Re-accumulate COCO AP on a subset of images from one direction's per-image results.

``COCOeval.accumulate`` walks categories in Python; a bootstrap of 1,000 subsets would call it
2,000 times. Restricting the detections of a :class:`~.cocoeval.DirectionTable` to the subset's
images keeps their accumulation order, so the subset's AP follows from segmented cumulative sums,
vectorised over categories and IoU thresholds. It reproduces ``accumulate()`` exactly, including
its float comparison of recall against the 101 recall points (``recall_steps`` works in integers).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..arrays import ranges
from ..coco_eval import REC_THRESHOLDS

if TYPE_CHECKING:
    from .cocoeval import DirectionTable


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
    """AP per IoU threshold and category on the images where ``image_mask`` is true: (T, K), NaN
    where the category has no ground truth on the subset (COCOeval's -1); None = all images."""
    if image_mask is None:
        image_mask = np.ones(len(table.image_ids), dtype=bool)
    return subsets_ap(table, np.asarray(image_mask, dtype=bool)[None, :])[0]


def prepare(table: DirectionTable) -> tuple:
    """What :func:`subsets_ap` reads from a table whatever the subsets (a direction's bootstrap chunks
    share it): the packed flags, the TP count each recall point needs, the image runs."""
    return _flags(table), _first_tp_needed(int(table.npig.sum(axis=1).max(initial=0))), _runs(table)


def subsets_ap(table: DirectionTable, masks: np.ndarray, cells: int = 1 << 16,
               prepared: tuple | None = None) -> np.ndarray:
    """(S, T, K) AP per subset (a row of ``masks``, (S, I) bool over ``table.image_ids``), IoU
    threshold and category; subsets go in chunks of about ``cells`` (threshold, detection) cells;
    ``prepared``: :func:`prepare` of the table, if already made."""
    T = table.matched.shape[0]
    masks = np.asarray(masks, dtype=bool)
    out = np.empty((len(masks), T, len(table.cat_ids)))
    flags, need, runs = prepared or prepare(table)
    per_image = np.bincount(table.det_img, minlength=masks.shape[1])    # detections per image
    width = max(1, int((masks.astype(np.int64) @ per_image).max(initial=0)) * T)
    step = max(1, cells // width)
    # runs pay where a subset's (class, image) pairs are fewer than the detections a flag per detection scans
    if 4 * len(table.cat_ids) * int(masks.sum(axis=1).max(initial=0)) >= len(table.det_img):
        runs = None
    for lo in range(0, len(masks), step):
        out[lo:lo + step] = _chunk_ap(table, masks[lo:lo + step], flags, need, runs)
    return out


def _flags(table: DirectionTable) -> tuple:
    """(TP flags, FP flags, class) per detection and one padding column after them (no TP, no FP,
    class -1), the flags :func:`_packed`; the FP flags only where a detection is ignored (None: every
    detection is a TP or an FP)."""
    pad = np.zeros((table.matched.shape[0], 1), dtype=bool)
    fp = _packed(np.concatenate([~table.matched & ~table.ignored, pad], axis=1)) if table.ignored.any() else None
    return _packed(np.concatenate([table.matched & ~table.ignored, pad], axis=1)), fp, np.r_[table.det_cat, -1]


def _runs(table: DirectionTable) -> np.ndarray | None:
    """(K, I + 1) where the detections of each (class, image) start, when within every class they go
    by image (equal scores: a rater's labels), so that a subset's detections are the runs of its images
    class by class; None otherwise."""
    K, I = len(table.cat_ids), len(table.image_ids)
    key = table.det_cat * I + table.det_img
    if np.any(key[1:] < key[:-1]):
        return None
    return np.searchsorted(key, np.arange(K)[:, None] * I + np.arange(I + 1)[None, :])


def _kept(table: DirectionTable, masks: np.ndarray, runs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)``: the detections each subset keeps, in order (as ``np.nonzero`` of the (S, N)
    kept flags gives them), from the runs of its images where :func:`_runs` found them."""
    if runs is None:
        return np.nonzero(masks[:, table.det_img])
    sub, img = np.nonzero(masks)                                     # each subset's images, in order
    K, n = len(runs), np.bincount(sub, minlength=len(masks))
    if len(n) and (n == n[0]).all():   # subsets of one size: their runs as one (subset, class, image) block
        first = runs[:, img].reshape(K, len(n), int(n[0])).swapaxes(0, 1).ravel()
        count = runs[:, img + 1].reshape(K, len(n), int(n[0])).swapaxes(0, 1).ravel() - first
        owner, cols = ranges(first, count)
        return owner // (K * int(n[0])), cols
    sub_k = np.repeat(np.arange(len(masks)), K * n)                   # (subset, class, image) in that order
    j = np.arange(len(sub_k)) - np.repeat(np.cumsum(K * n) - K * n, K * n)
    cls, at = j // n[sub_k], (np.cumsum(n) - n)[sub_k] + j % n[sub_k]
    first = runs[cls, img[at]]
    count = runs[cls, img[at] + 1] - first
    owner, cols = ranges(first, count)
    return sub_k[owner], cols


def _chunk_ap(table: DirectionTable, masks: np.ndarray, flags: tuple, need_of: np.ndarray,
              runs: np.ndarray | None = None) -> np.ndarray:
    """:func:`subsets_ap` on one chunk. Each subset's kept detections form a row of a padded
    (T, S, L) array in accumulation order; a group is a (threshold, subset, class) segment of it.
    Only the true positives are computed: past a group's m-th TP the precision peaks at a TP (an FP or
    ignored cell's precision is at most its predecessor's), so the envelope at the m-th TP is the
    maximum of ``j / (counted_j + eps)`` over its TPs j >= m, the float values of the all-cell
    computation. It is read as ``(max + offset) - offset`` with each row's own segment offsets, the
    all-cell envelope's values (rounding is monotone), so the bits do not depend on the batching."""
    T, N = table.matched.shape
    S = len(masks)
    npig = masks.astype(np.int64) @ table.npig.T                      # (S, K)
    ap = np.where(npig > 0, 0.0, np.nan)[:, None, :].repeat(T, axis=1)
    rows, cols = _kept(table, masks, runs)
    length = np.bincount(rows, minlength=S)
    L = int(length.max(initial=0))
    if L == 0:
        return ap
    if (length == L).all():
        det = cols.reshape(S, L)
    else:
        det = np.full((S, L), N)                                      # N: padding
        det[rows, np.arange(len(rows)) - np.repeat(np.cumsum(length) - length, length)] = cols
    cat = flags[2][det]
    tp = _unpacked(flags[0], det, T)                                  # (T, S, L)
    start = np.ones((S, L), dtype=bool)
    start[:, 1:] = cat[:, 1:] != cat[:, :-1]
    head = start & (det < N)
    seg_of = np.cumsum(start, axis=1) - 1                             # segment index within its row
    offset = 2.0 * (head.sum(axis=1)[:, None] - seg_of)
    # groups = (threshold, subset, segment) in flat (T, S, L) order, from their first cell
    first = (np.flatnonzero(head)[None, :] + (np.arange(T) * S * L)[:, None]).ravel()
    g_sub = np.tile(np.broadcast_to(np.arange(S)[:, None], (S, L))[head], T)
    g_cat = np.tile(cat[head], T)
    g_thr = np.repeat(np.arange(T), len(g_cat) // T)
    n_g = npig[g_sub, g_cat]
    tp_pos = np.flatnonzero(tp)
    before = np.searchsorted(tp_pos, first)                           # TPs before each group
    total = np.diff(np.r_[before, len(tp_pos)])                       # TPs in each group
    j = np.arange(1.0, len(tp_pos) + 1)                               # each TP's rank in its group (exact
    j -= np.repeat(before.astype(float), total)                       # integers, held as floats)
    if flags[1] is not None:   # counted = TPs + FPs so far in the segment
        seg_len = np.diff(np.r_[0, np.flatnonzero(head), S * L])
        counted = j + _segment_cumsum(_unpacked(flags[1], det, T), head, seg_len).ravel()[tp_pos]
    else:   # every detection is a TP or an FP: counted = the place in the segment
        counted = (tp_pos - np.repeat(first - 1, total)).astype(float)
    counted += np.spacing(1)
    pr = np.empty(len(tp_pos) + 1)                                    # and a 0.0 after the last
    np.divide(j, counted, out=pr[:-1])
    pr[-1] = 0.0
    value = _recall_mean(pr, j, before, total, n_g, need_of, np.tile(offset[head], T))
    ap[g_sub, g_thr, g_cat] = np.where(n_g > 0, value, ap[g_sub, g_thr, g_cat])
    return ap


def _recall_mean(pr, rank, before, total, n_g, need_of, offset) -> np.ndarray:
    """(G,) mean over the 101 recall points of the envelope where each group's TP count first reaches
    the count ``need_of[n_g]`` needs: the maximum of ``pr`` (each TP's precision, groups in order;
    ``rank``: its place among the group's TPs, from 1) over the group's TPs from that one on (from its
    first for 0; 0.0 beyond the TPs it has, as for a group of none), read as ``(max + offset) - offset``.
    TPs never outnumber a group's ``n_g`` ground truth."""
    G, W = len(total), max(1, int(total.max(initial=0)))
    if W > need_of.shape[1]:   # many TPs: the maxima between consecutive read TPs, then from the end
        need = need_of[n_g]
        k = np.minimum(np.maximum(need, 1), np.maximum(total, 1)[:, None]) - 1
        # a block ends where the next read begins (equal reads: the read TP alone, still in the group's
        # suffix); a group's last block ends where the next group's TPs begin (the 0.0 after the last)
        blocks = np.maximum.reduceat(pr, (before[:, None] + k).ravel()).reshape(need.shape)
        env = np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1]
        off = offset[:, None]
        return np.where(need <= np.where(total > 0, total, -1)[:, None], (env + off) - off, 0.0).mean(axis=1)
    # few TPs: a (TP count 0 .. W + 1, group) table of the envelope, 0.0 past each group's TPs
    by_count = np.zeros((W + 2, G))
    by_count.ravel()[rank.astype(np.int64) * G + np.repeat(np.arange(G), total)] = pr[:-1]
    for k in range(W - 1, 0, -1):                                     # the maximum from the k-th TP on
        np.maximum(by_count[k], by_count[k + 1], out=by_count[k])
    by_count[1:W + 1] += offset
    by_count[1:W + 1] -= offset
    by_count[0] = by_count[1]
    return by_count.ravel()[(np.minimum(need_of, W + 1) * G)[n_g] + np.arange(G)[:, None]].mean(axis=1)


def _segment_cumsum(flags: np.ndarray, head: np.ndarray, seg_len: np.ndarray) -> np.ndarray:
    """(T, S, L) running count of ``flags`` within each segment (``head``: the first cells, ``seg_len``: the
    cells before the first segment, then the cells of each)."""
    cum = np.cumsum(flags, axis=2, dtype=np.int32)
    base = cum[:, head] - flags[:, head]                              # (T, segments): the count before each
    return cum - np.repeat(np.concatenate([base[:, :1], base], axis=1), seg_len, axis=1).reshape(cum.shape)


def _packed(flags: np.ndarray) -> np.ndarray:
    """(T, M) bool flags as one unsigned integer per column (bit t: threshold t), so that a subset's
    detections are gathered once for all thresholds; the flags themselves beyond 64 thresholds."""
    T = len(flags)
    if T > 64:
        return flags
    kind = np.dtype(f"uint{max(8, 1 << (T - 1).bit_length())}")
    return np.bitwise_or.reduce(flags.astype(kind) << np.arange(T, dtype=kind)[:, None], axis=0)


def _unpacked(packed: np.ndarray, det: np.ndarray, T: int) -> np.ndarray:
    """(T, S, L) bool: the flags of :func:`_packed` at the detections ``det`` (S, L)."""
    if packed.ndim == 2:
        return packed[:, det]
    bits = packed[det]
    return (bits[None] & (np.ones(1, packed.dtype) << np.arange(T, dtype=packed.dtype))[:, None, None]).astype(bool)
