"""The five-step classification of one pair of raters at one threshold (paper App. C).

1. same-class pairs by descending IoU while IoU >= t -> ``agreed`` (IoU = boundary quality);
2. two leftover same-class labels of one rater, merged, against a leftover label of the
   other rater of the same class -> ``merged`` (all three labels);
3. leftover pairs of different classes by descending IoU while IoU >= t -> ``wrong_class``;
4. merged leftovers against a leftover of another class -> ``merged_wrong_class``;
5. the rest -> ``missed`` / ``additional`` (decided by the caller: reference rater or unit
   majority), returned here as ``None``.

Each step is a greedy matching by descending IoU (stable: ties keep the canonical order)
that never uses a label twice.
"""

from __future__ import annotations

import numpy as np

from .geometry import MergeCandidates

#: a label's outcome in one pair: (type or None for unmatched, partner indices, IoU)
Outcome = tuple


def _greedy(iou: np.ndarray, members: list[np.ndarray], t: float, used: np.ndarray):
    """Accept candidates by descending IoU (>= t) whose members are all unused; yields indices."""
    ok = np.flatnonzero(iou >= t)
    for c in ok[np.argsort(-iou[ok], kind="stable")]:
        m = [int(arr[c]) for arr in members]
        if not used[m].any():
            used[m] = True
            yield c, m


def classify_pair(sim: np.ndarray, category: np.ndarray, a: np.ndarray, b: np.ndarray,
                  merges: MergeCandidates, t: float) -> dict[int, Outcome]:
    """Outcome of every label of rows ``a`` and ``b`` (index arrays into the image's labels).

    Parameters
    ----------
    sim : ``(n, n)`` IoU matrix of the image's labels.
    category : ``(n,)`` class of each label.
    a, b : indices of the two raters' labels.
    merges : merge candidates of this pair (both directions), see :func:`merge_candidates`.
    t : IoU threshold (inclusive).
    """
    used = np.zeros(len(category), bool)
    out: dict[int, Outcome] = {}
    ii, jj = np.meshgrid(a, b, indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    pair_iou = sim[ii, jj] if len(ii) else np.zeros(0)
    same = category[ii] == category[jj]
    merge_same = category[merges.i] == category[merges.k]

    def singles(mask, name):
        for c, (p, q) in _greedy(np.where(mask, pair_iou, -1.0), [ii, jj], t, used):
            v = float(pair_iou[c])
            out[p], out[q] = (name, (q,), v), (name, (p,), v)

    def merged(mask, name):
        iou = np.where(mask, merges.iou, -1.0)
        for c, (p, q, k) in _greedy(iou, [merges.i, merges.j, merges.k], t, used):
            v = float(merges.iou[c])
            out[p], out[q], out[k] = (name, (k,), v), (name, (k,), v), (name, (p, q), v)

    singles(same, "agreed")
    merged(merge_same, "merged")
    singles(~same, "wrong_class")
    merged(~merge_same, "merged_wrong_class")
    for k in (*a.tolist(), *b.tolist()):
        out.setdefault(int(k), (None, (), None))
    return out
