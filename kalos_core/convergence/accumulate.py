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


def subsets_ap(table: DirectionTable, masks: np.ndarray, cells: int = 1 << 16) -> np.ndarray:
    """(S, T, K) AP per subset (a row of ``masks``, (S, I) bool over ``table.image_ids``), IoU
    threshold and category; subsets go in chunks of about ``cells`` (threshold, detection) cells."""
    T = table.matched.shape[0]
    masks = np.asarray(masks, dtype=bool)
    out = np.empty((len(masks), T, len(table.cat_ids)))
    pad = np.zeros((T, 1), dtype=bool)
    flags = (_packed(np.concatenate([table.matched & ~table.ignored, pad], axis=1)),
             _packed(np.concatenate([~table.matched & ~table.ignored, pad], axis=1)), np.r_[table.det_cat, -1])
    need = _first_tp_needed(int(table.npig.sum(axis=1).max(initial=0)))
    per_image = np.bincount(table.det_img, minlength=masks.shape[1])    # detections per image
    width = max(1, int((masks.astype(np.int64) @ per_image).max(initial=0)) * T)
    step = max(1, cells // width)
    for lo in range(0, len(masks), step):
        out[lo:lo + step] = _chunk_ap(table, masks[lo:lo + step], flags, need)
    return out


def _chunk_ap(table: DirectionTable, masks: np.ndarray, flags: tuple, need_of: np.ndarray) -> np.ndarray:
    """:func:`subsets_ap` on one chunk. Each subset's kept detections form a row of a padded
    (T, S, L) array in accumulation order; every float operation is the one-subset computation's
    (the envelope's ``(pr + offset) - offset`` keeps each row's own segment offsets), so the bits
    do not depend on how the subsets are batched."""
    T, N = table.matched.shape
    S = len(masks)
    npig = masks.astype(np.int64) @ table.npig.T                      # (S, K)
    ap = np.where(npig > 0, 0.0, np.nan)[:, None, :].repeat(T, axis=1)
    keep = masks[:, table.det_img]                                    # (S, N)
    length = np.count_nonzero(keep, axis=1)
    L = int(length.max(initial=0))
    if L == 0:
        return ap
    rows, cols = np.nonzero(keep)
    det = np.full((S, L), N)                                          # N: padding
    det[rows, np.arange(len(rows)) - np.repeat(np.cumsum(length) - length, length)] = cols
    real = det < N
    cat = flags[2][det]
    tp = _unpacked(flags[0], det, T)                                  # (T, S, L)
    start = np.ones((S, L), dtype=bool)
    start[:, 1:] = cat[:, 1:] != cat[:, :-1]
    head = start & real
    # cells per segment, row-major; the first count: cells before any segment (rows of no detection)
    seg_len = np.diff(np.r_[0, np.flatnonzero(head), S * L])
    tp_c = _segment_cumsum(tp, head, seg_len)
    if table.ignored.any():
        counted = tp_c + _segment_cumsum(_unpacked(flags[1], det, T), head, seg_len)
    else:   # every detection is a TP or an FP: TP + FP = the place in the segment
        place = np.arange(1, L + 1, dtype=np.int32)
        counted = place - np.maximum.accumulate(np.where(start, place - 1, 0), axis=1)
    pr = tp_c / (counted + np.spacing(1))
    seg_of = np.cumsum(start, axis=1) - 1                             # segment index within its row
    offset = 2.0 * (head.sum(axis=1)[:, None] - seg_of)
    shifted = np.add(pr, offset, out=pr)
    if not real.all():
        shifted[:, ~real] = -np.inf
    acc = np.maximum.accumulate(shifted[:, :, ::-1], axis=2).ravel()   # each row reversed; less the offset when read
    # flat over the padded cells, groups = (threshold, subset, segment) in order; a recall point
    # reads the envelope where the TP count first reaches the count it needs
    first = (np.flatnonzero(head)[None, :] + (np.arange(T) * S * L)[:, None]).ravel()
    g_sub = np.tile(np.broadcast_to(np.arange(S)[:, None], (S, L))[head], T)
    g_cat = np.tile(cat[head], T)
    g_thr = np.repeat(np.arange(T), len(g_cat) // T)
    n_g = npig[g_sub, g_cat]
    tp_pos = np.flatnonzero(tp)
    before = np.searchsorted(tp_pos, first)                           # TPs before each group
    total = np.diff(np.r_[before, len(tp_pos)])                       # TPs in each group
    env = _Envelope(acc, L, np.tile(offset[head], T))
    value = _recall_mean(env, tp_pos, first, before, np.minimum(total, n_g), need_of[n_g])
    ap[g_sub, g_thr, g_cat] = np.where(n_g > 0, value, ap[g_sub, g_thr, g_cat])
    return ap


class _Envelope:
    """The envelope of a chunk: ``acc``, the running maximum of ``pr + offset`` over each padded row
    of length ``L`` taken from its end (stored reversed), and each group's ``offset``."""

    def __init__(self, acc: np.ndarray, L: int, offset: np.ndarray):
        self.acc, self.L, self.offset = acc, L, offset

    def at(self, cells: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """The envelope at the flat (T, S, L) ``cells`` of ``groups``: ``(max + offset) - offset``."""
        return self.acc[cells + (self.L - 1) - 2 * (cells % self.L)] - self.offset[groups]


def _recall_mean(env: _Envelope, tp_pos, first, before, reach, need) -> np.ndarray:
    """(G,) mean over the recall points of the envelope at the detection where each group's TP count
    first reaches ``need`` (G, R) (the group's first cell for 0; 0.0 beyond ``reach``, the TP count
    the group reaches and can use). Large groups read it per recall point; many small ones from a
    table per TP count k = 0 .. reach."""
    tp_at = np.r_[tp_pos, 0]
    if need.size <= (reach + 1).sum():
        at = np.where(need > 0, tp_at[np.minimum(before[:, None] + need - 1, len(tp_pos))], first[:, None])
        return np.where(need <= reach[:, None], env.at(at, np.arange(len(reach))[:, None]), 0.0).mean(axis=1)
    size = reach + 2                                                  # k = 0 .. reach, then 0.0
    grp = np.repeat(np.arange(len(reach)), size)
    k = np.arange(len(grp)) - np.repeat(np.cumsum(size) - size, size)
    at = np.where(k > 0, tp_at[np.minimum(before[grp] + k - 1, len(tp_pos))], first[grp])
    by_count = np.where(k <= reach[grp], env.at(at, grp), 0.0)
    return by_count[(np.cumsum(size) - size)[:, None] + np.minimum(need, reach[:, None] + 1)].mean(axis=1)


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
