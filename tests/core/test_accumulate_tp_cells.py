"""The bootstrap's AP kernel (kalos_core.convergence.accumulate) computes the precision at true
positives only; here it meets a plain per-(subset, threshold, class) loop over every cell, COCOeval's
accumulate with the kernel's envelope offsets, bit for bit, on random direction tables."""

import numpy as np
import pytest

from kalos_core.coco_eval import REC_THRESHOLDS
from kalos_core.convergence.accumulate import prepare, subsets_ap
from kalos_core.convergence.cocoeval import DirectionTable


def reference_ap(table, mask):
    """(T, K) AP on the images of ``mask``: every cell's precision, the envelope as the running maximum
    from the end of ``pr + offset`` less the offset (offset 2 x the classes left in the subset's row, the
    kernel's), read at the detection where the TP count first reaches each recall point."""
    T = table.matched.shape[0]
    npig = table.npig[:, mask].sum(axis=1)
    out = np.where(npig > 0, 0.0, np.nan)[None, :].repeat(T, axis=0)
    kept = np.flatnonzero(mask[table.det_img])
    present = list(dict.fromkeys(table.det_cat[kept].tolist()))
    for s, c in enumerate(present):
        n = int(npig[c])
        if n == 0:
            continue
        cells = kept[table.det_cat[kept] == c]
        steps = np.arange(n + 1)[:, None] / n >= REC_THRESHOLDS[None, :]
        need = np.where(steps.any(axis=0), steps.argmax(axis=0), n + 1)
        offset = 2.0 * (len(present) - s)
        for t in range(T):
            tp = table.matched[t, cells] & ~table.ignored[t, cells]
            fp = ~table.matched[t, cells] & ~table.ignored[t, cells]
            tp_c, fp_c = np.cumsum(tp), np.cumsum(fp)
            pr = tp_c / (tp_c + fp_c + np.spacing(1))
            env = np.maximum.accumulate((pr + offset)[::-1])[::-1] - offset
            at = np.flatnonzero(tp)
            reach = min(len(at), n)
            out[t, c] = np.array([0.0 if k > reach else env[at[k - 1] if k else 0] for k in need]).mean()
    return out


def random_table(rng, T, K, I, N, ignored, big=0):
    """Detections in accumulation order (class, then any image order), random TP / FP / ignored flags;
    ground truth at least the TPs of each (class, image) at every threshold, none for one class (its
    detections all FPs), some but no detection for the last; ``big`` more detections of class 0 on
    three images, nearly all TPs (a group of more than 101 TPs)."""
    det_cat = np.sort(rng.integers(0, K - 1, N))
    det_img = rng.integers(0, I, N)
    if rng.random() < 0.5:                          # a rater's labels: by image within each class
        det_img = det_img[np.lexsort((det_img, det_cat))]
    matched = rng.random((T, N)) < rng.uniform(0.2, 0.9)
    det_cat = np.r_[np.zeros(big, int), det_cat]
    det_img = np.r_[rng.integers(0, 3, big), det_img]
    matched = np.concatenate([rng.random((T, big)) < 0.95, matched], axis=1)
    matched[:, det_cat == 1] = False
    ignore = rng.random(matched.shape) < ignored    # matched to ignored ground truth, or unmatched and ignored
    tp = matched & ~ignore
    npig = np.zeros((K, I), dtype=np.int64)
    for t in range(T):
        per = np.zeros((K, I), dtype=np.int64)
        np.add.at(per, (det_cat[tp[t]], det_img[tp[t]]), 1)
        npig = np.maximum(npig, per)
    npig += rng.integers(0, 3, (K, I)) * (np.arange(K) != 1)[:, None]
    npig[K - 1, rng.random(I) < 0.5] = 0
    return DirectionTable(np.arange(K) + 1, list(range(I)), det_cat, det_img, list(range(len(det_cat))),
                          matched, ignore, npig, np.zeros((T, 101, K)))


@pytest.mark.parametrize("seed", range(12))
def test_tp_cell_kernel_is_the_all_cell_envelope_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    T = [1, 3, 10][seed % 3]
    table = random_table(rng, T, K=int(rng.integers(4, 9)), I=40, N=int(rng.integers(0, 400)),
                         ignored=[0.0, 0.15][seed % 2], big=[0, 350][(seed // 2) % 2])
    masks = rng.random((30, 40)) < rng.uniform(0.05, 0.6)
    masks[0], masks[1] = False, True
    masks[2] = False
    masks[2, np.setdiff1d(np.arange(40), table.det_img)[:3]] = True   # images without detections
    got = subsets_ap(table, masks, cells=int(rng.choice([1, 500, 1 << 16])))
    want = np.stack([reference_ap(table, m) for m in masks])
    assert got.tobytes() == want.tobytes()
    assert subsets_ap(table, masks[::2], prepared=prepare(table)).tobytes() == got[::2].tobytes()   # shared
    assert np.isfinite(got).any() and (got > 0).any()
    tp = table.matched & ~table.ignored
    assert (tp[:, table.det_cat == 0].sum(axis=1).max() > 101) == bool(seed // 2 % 2)   # both envelope reads
