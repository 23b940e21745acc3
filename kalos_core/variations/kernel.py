"""The variation types of a chunk of box images in whole-array operations.

:func:`kalos_core.variations.engine.variation_steps` classifies image by image, threshold by
threshold and pair of raters by pair, a few dozen numpy calls and a Python loop over the accepted
matches each time. When a chunk's images hold their boxes as columns and the distance has an
element-wise form (as for the agreement kernel, :mod:`kalos_core.agreement.chunk_kernel`), this
module classifies the whole chunk at once:

1. the canonical order and the candidate pairs with their similarity, once (the agreement
   kernel's :func:`~kalos_core.agreement.chunk_kernel.gather` and ``candidate_pairs``);
2. every image's merge candidates, filtered and measured as
   :func:`kalos_core.variations.geometry.merge_candidates` does;
3. the four matching steps of :func:`kalos_core.variations.pair.classify_pair`, for every
   threshold and pair of rows, as one greedy packing: a label of row r seen in the pair with row
   o at threshold t is the node (t, label, o), so the problems are disjoint, and the candidates
   are sorted by (step, IoU descending, the per-image path's order among equal IoU);
4. the agreement units at every threshold (greedy, ψsoft) by one union pass, for the majority;
5. each label's type, the counts and the per-label results, with whole-array reductions.

The per-image path stays the reference and serves every other chunk (polygons, masks, distances
without an element-wise form); tests/core/test_variations_kernel.py holds the two equal.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..agreement.chunk_kernel import candidate_pairs, gather, overlapping_along_x
from ..arrays import ranges
from ..columns import AnnotationColumns
from ..geometry.boxes import image_sides, prepare_box_columns, prepare_boxes
from ..geometry.registry import box_areas, paired_overlap_sides
from ..matching.costs import get_cost
from ..matching.solvers import greedy_on_sorted_pairs
from .geometry import merge_bound_ok
from .types import IOU_BINS, TYPES, LabelVariation, threshold_key

AGREED, MERGED, WRONG_CLASS, MERGED_WRONG_CLASS, MISSED, ADDITIONAL = range(len(TYPES))


#: box distances whose similarity is at most the IoU: a pair or a merge above a threshold > 0 needs
#: boxes that overlap, which is what the kernel's sweeps look for (centroid distances do not)
OVERLAP_BOUNDED = frozenset({"iou", "giou"})


def applies(images: list, spec) -> bool:
    """Can this chunk take the kernel? (Otherwise the per-image path runs; same results.)"""
    return (spec.pairs is not None and spec.prepare is prepare_boxes and spec.name in OVERLAP_BOUNDED
            and all(isinstance(im.annotations, AnnotationColumns) for im in images))


def _merges(ch, images: list, prep, spec, floor: float) -> tuple:
    """``(i, j, k, iou, direction)``: two same-class boxes ``i < j`` of one row, both overlapping box
    ``k`` of another row, whose enclosing box reaches IoU ``floor`` with ``k``; direction 1 where
    ``i, j`` are the pair's higher row (the per-image path lists those second)."""
    xyxy = prep["xyxy"]
    u, v = overlapping_along_x(ch, xyxy, 0.0)
    iw, ih = paired_overlap_sides(xyxy[u], xyxy[v])
    ok = (ch.row[u] != ch.row[v]) & (iw > 0) & (ih > 0)
    own, k = np.concatenate([u[ok], v[ok]]), np.concatenate([v[ok], u[ok]])
    order = np.lexsort((own, ch.cat[own], ch.row[own], k))    # groups: (partner, own row, own class)
    own, k = own[order], k[order]
    new = np.ones(len(own), bool)
    new[1:] = (k[1:] != k[:-1]) | (ch.row[own][1:] != ch.row[own][:-1]) | (ch.cat[own][1:] != ch.cat[own][:-1])
    starts = np.flatnonzero(new)
    end = np.append(starts[1:], len(own))[np.cumsum(new) - 1]
    at = np.arange(len(own))
    first, second = ranges(at + 1, end - at - 1)
    i, j, k = own[first], own[second], k[first]
    area = box_areas(xyxy)
    ok = merge_bound_ok(xyxy[i], xyxy[j], xyxy[k], area[i], area[j], area[k], floor)
    i, j, k = i[ok], j[ok], k[ok]
    a, b = ch.xywh[i], ch.xywh[j]                                # the enclosing box, as _merge_boxes
    x1y1 = np.minimum(a[:, :2], b[:, :2])
    merged = np.concatenate([x1y1, np.maximum(a[:, :2] + a[:, 2:], b[:, :2] + b[:, 2:]) - x1y1], axis=1)
    iou = spec.pairs(prepare_box_columns(merged, image_sides(images)[ch.img[i]]), prep.take_on_use(k))
    keep = iou >= floor
    i, j, k, iou = i[keep], j[keep], k[keep], iou[keep]
    return i, j, k, iou, (ch.row[i] > ch.row[k]).astype(np.int64)


def greedy_packing(members: np.ndarray, n_nodes: int) -> np.ndarray:
    """Accept candidates in order unless one of their nodes is taken: ``members`` ``(C, m)`` node
    ids in acceptance order -> accepted mask.

    Whole-array rounds, exact as :func:`kalos_core.matching.solvers.greedy_on_sorted_pairs`: a
    pending candidate that comes first among the pending ones at each of its nodes sees them as the
    loop would (accepted now); one with a taken node is refused whenever its turn comes."""
    C = len(members)
    taken, first = np.zeros(n_nodes, bool), np.full(n_nodes, C)
    accepted = np.zeros(C, bool)
    idx = np.arange(C)
    while len(idx):
        mem = members[idx]
        np.minimum.at(first, mem.ravel(), np.repeat(idx, mem.shape[1]))
        now = (first[mem] == idx[:, None]).all(1)
        accepted[idx[now]] = True
        taken[mem[now].ravel()] = True
        first[mem.ravel()] = C
        rest = ~now
        idx = idx[rest][~taken[mem[rest]].any(1)]
    return accepted


def _candidates(ch, images, prep, spec, floor, merge: bool, R: int):
    """Every step's candidates in acceptance order: step, IoU, annotations ``(a, b, c)`` (pairs:
    ``c = -1``), the three nodes (pairs: the first twice) and each node's partners."""
    pi, pj, ps = candidate_pairs(ch, images, spec, get_cost("soft"), floor)
    step = np.where(ch.cat[pi] == ch.cat[pj], AGREED, WRONG_CLASS)
    a, b, c, iou, d = pi, pj, np.full(len(pi), -1), ps, np.zeros(len(pi), np.int64)
    if merge:
        mi, mj, mk, miou, md = _merges(ch, images, prep, spec, floor)
        step = np.concatenate([step, np.where(ch.cat[mi] == ch.cat[mk], MERGED, MERGED_WRONG_CLASS)])
        a, b, c = np.concatenate([a, mi]), np.concatenate([b, mj]), np.concatenate([c, mk])
        iou, d = np.concatenate([iou, miou]), np.concatenate([d, md])
    order = np.lexsort((c, b, a, d, -iou, step))
    step, iou, a, b, c = step[order], iou[order], a[order], b[order], c[order]
    single = c < 0
    pa, pb = np.where(single, b, c), np.where(single, a, c)         # the partners of a and of b
    n0, n1 = a * R + ch.row[pa], b * R + ch.row[pb]
    nodes = np.stack([n0, n1, np.where(single, n0, c * R + ch.row[a])], 1)
    partners = np.stack([np.stack([pa, np.full_like(a, -1)], 1), np.stack([pb, np.full_like(a, -1)], 1),
                         np.stack([a, b], 1)], 1)                     # (C, member, 2)
    return step, iou, nodes, partners, (pi, pj, ps)


def classify_chunk(images: list, spec, config, names: dict, tally) -> None:
    """Classify every label of ``images`` at every threshold into ``tally`` (:class:`~kalos_core.variations.engine.Tally`),
    as the per-image path does image by image."""
    ch = gather(images)
    N = len(ch.img)
    if not N:
        return
    ts = np.array(config.thresholds, float)
    T, floor = len(ts), float(ts.min())
    n_rows = np.array([len(r) for r in ch.rows], np.int64)
    R = int(n_rows.max())
    rows_of = n_rows[ch.img]
    prep = prepare_box_columns(ch.xywh, image_sides(images)[ch.img])
    step, iou, nodes, partners, (pi, pj, ps) = _candidates(ch, images, prep, spec, floor, config.merge, R)

    tq, cq = np.nonzero(iou[None, :] >= ts[:, None])               # every threshold's candidates, in order
    node_id = tq[:, None] * (N * R) + nodes[cq]
    won = greedy_packing(node_id, T * N * R)
    t0 = int(np.flatnonzero(ts == config.threshold)[0])              # the run's threshold: per-label results
    kind, best_iou = np.full(T * N * R, -1, np.int64), np.full(T * N * R, -1.0)
    partner, pos = np.full((N * R, 2), -1, np.int64), np.full(N * R, -1, np.int64)
    for m in range(3):
        sel = won & ((m < 2) | (step[cq] % 2 == 1))                  # members 0, 1; merges also 2
        nd, c = node_id[sel, m], cq[sel]
        kind[nd], best_iou[nd] = step[c], iou[c]
        at0 = tq[sel] == t0
        partner[nd[at0] - t0 * N * R], pos[nd[at0] - t0 * N * R] = partners[c[at0], m], c[at0] * 3 + m

    # unmatched: missed or additional (the unit majority with >= 3 rows, else the reference row)
    lab, o = np.divmod(np.arange(N * R), R)
    valid = ((rows_of[lab] >= 2) & (o < rows_of[lab]) & (o != ch.row[lab])).reshape(N, R)
    ref = np.array([r.index(config.reference) if config.reference in r else 0 for r in ch.rows])
    real = np.broadcast_to(ch.row == ref[ch.img], (T, N))
    if R >= 3:
        t_of, q = np.nonzero(ps[None, :] >= ts[:, None])
        units = greedy_on_sorted_pairs(np.tile(ch.row, T), t_of * N + pi[q], t_of * N + pj[q])
        majority = (np.bincount(units)[units].reshape(T, N) * 2 > rows_of)
        real = np.where(rows_of >= 3, majority, real)
    kind = kind.reshape(T, N, R)
    kind = np.where(kind >= 0, kind, np.where(real, MISSED, ADDITIONAL)[:, :, None])
    kind[:, ~valid] = -1

    # per label: the most frequent type (ties: the earlier type), its best IoU (ties: the lower row)
    K = len(TYPES)
    n_types = np.bincount((np.arange(T * N)[:, None] * K + kind.reshape(T * N, R))[kind.reshape(T * N, R) >= 0],
                          minlength=T * N * K).reshape(T, N, K)
    best = np.argmax(n_types * K + np.arange(K)[::-1], -1)
    best_iou = best_iou.reshape(T, N, R)
    pick = np.argmax(np.where(kind == best[..., None], best_iou, -np.inf), -1)
    lab_iou = np.take_along_axis(best_iou, pick[..., None], -1)[..., 0]
    typed = np.flatnonzero(rows_of >= 2)
    codes = _Codes(ch, names)
    tally_add(tally, [threshold_key(float(t)) for t in ts], codes, typed, best[:, typed],
              kind, lab_iou[:, typed])

    # at the run's threshold, the labels in their order of first appearance in the per-image path:
    # by pair of rows, the accepted ones in acceptance order, then the rest
    p_index = np.minimum(ch.row[:, None], np.arange(R)) * R + np.maximum(ch.row[:, None], np.arange(R))
    C = len(iou)
    pos = np.where(pos >= 0, pos, np.repeat(C + np.arange(N), R) * 3).reshape(N, R)
    appear = np.where(valid, p_index * (3 * (C + N)) + pos, np.iinfo(np.int64).max).min(-1)
    order = typed[np.lexsort((appear[typed], ch.img[typed]))]
    chosen = partner.reshape(N, R, 2)[order, pick[t0, order]]
    tally.labels.add(partial(_labels, ch=ch, codes=codes, order=order, best=best[t0, order],
                             iou=lab_iou[t0, order], partners=chosen))


class _Codes:
    """Raters and class names of the chunk as codes: each label's and each (label, other row)'s."""

    def __init__(self, ch, names: dict) -> None:
        self.raters = sorted({r for rows in ch.rows for r in rows})
        of = {r: k for k, r in enumerate(self.raters)}
        table = [[of[r] for r in rows] for rows in ch.rows]
        width = max(len(r) for r in table)
        padded = np.array([r + [-1] * (width - len(r)) for r in table], np.int64).reshape(len(table), width)
        self.rater = padded[ch.img, ch.row]
        self.other = padded[ch.img]                                  # (N, R): -1 past the image's rows
        cats, self.cat = np.unique(ch.cat, return_inverse=True)
        self.classes = [names.get(int(c), str(int(c))) for c in cats.tolist()]


def tally_add(tally, keys: list, codes: _Codes, typed: np.ndarray, best: np.ndarray, kind: np.ndarray,
              iou: np.ndarray) -> None:
    """Add every threshold's label types (``best`` (T, labels) of the labels ``typed``) and pairwise
    types (``kind`` (T, N, R), -1: no such pair) to the tally's counts."""
    T = len(keys)
    t = np.repeat(np.arange(T), best.shape[1])
    _add([{0: tally.counts[k]} for k in keys], [(0,)], t, np.zeros(best.size, np.int64), best.ravel())
    _add([tally.by_rater[k] for k in keys], [(r,) for r in codes.raters], t, np.tile(codes.rater[typed], T),
         best.ravel())
    _add([tally.by_class[k] for k in keys], [(c,) for c in codes.classes], t, np.tile(codes.cat[typed], T),
         best.ravel())
    tt, lab, o = np.nonzero(kind >= 0)
    G = len(codes.raters)
    _add([tally.by_pair[k] for k in keys], [(a, b) for a in codes.raters for b in codes.raters], tt,
         codes.rater[lab] * G + codes.other[lab, o], kind[tt, lab, o])
    for k, key in enumerate(keys):
        tally.hist[key] += np.histogram(np.clip(iou[k][best[k] == AGREED], 0, 1), bins=IOU_BINS)[0]


def _add(into: list, keys: list, t: np.ndarray, code: np.ndarray, kind: np.ndarray) -> None:
    """``into[t][*keys[code]][type] += n`` for each (t, code, type) drawn (no entry for a key never drawn)."""
    K = len(TYPES)
    n = np.bincount((t * len(keys) + code) * K + kind, minlength=len(into) * len(keys) * K)
    n = n.reshape(len(into), len(keys), K)
    for s, r in zip(*(x.tolist() for x in np.nonzero(n.sum(-1)))):
        d = into[s]
        for k in keys[r]:
            d = d[k]
        for c in np.flatnonzero(n[s, r]).tolist():
            d[TYPES[c]] += int(n[s, r, c])


def _labels(into: dict, ch, codes: _Codes, order: np.ndarray, best: np.ndarray, iou: np.ndarray,
            partners: np.ndarray) -> None:
    """``into[id] = LabelVariation(...)`` for the labels ``order`` (canonical indices), in that order."""
    ids = [ch.ids[k] for k in ch.order.tolist()]
    names, types = codes.raters, TYPES
    for k, b, v, (p, q), r, c in zip(order.tolist(), best.tolist(), iou.tolist(), partners.tolist(),
                                     codes.rater[order].tolist(), ch.cat[order].tolist()):
        into[ids[k]] = LabelVariation(types[b], () if p < 0 else (ids[p],) if q < 0 else (ids[p], ids[q]),
                                      None if v < 0 else v, names[r], c)
