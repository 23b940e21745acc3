"""Many matchings of a chunk of images at once: greedy on pre-sorted pairs, in one pass.

A chunk's map step matches every image at the run's threshold and re-matches it for the
diagnostics (without a rater, a pair of raters, another threshold). Each such *request*
``(image, threshold, keep, rows)`` is what :meth:`kalos_core.agreement.problem.ImageProblem.match`
computes alone; :func:`match_requests` computes all of them with whole-array operations
over the concatenated requests and one union loop over all their pairs: the requests'
annotations are numbered consecutively, so the union-find problems are disjoint and each
one's units, numbered by first annotation, come out as a contiguous range of labels.

The results equal ``ImageProblem.match`` request by request (tests/core/test_bulk_match.py):
the same pairs in the same order reach the same union step, and the cells are the same
row-major ``(row, unit)`` list. Requests the bulk path does not cover (solvers without a
sorted-pair union step, thresholds below the image's floor, images with per-rater class
assignments) go through ``ImageProblem.match`` one by one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..arrays import ranges
from ..reliability import NO_OBJECT, Cells

if TYPE_CHECKING:
    from ..matching.costs import CostFn
    from ..matching.solvers import SolverFn
    from .problem import ImageProblem

#: (image index, threshold, keep mask or None, sorted rows or None)
Request = tuple


def match_requests(ips: list[ImageProblem], requests: list[Request], solver: SolverFn,
                   cost: CostFn) -> list[tuple[np.ndarray, Cells]]:
    """``[(units, cells)]``, one per request, as ``ips[k].match(t, solver, cost, keep, rows)``."""
    union = getattr(solver, "on_sorted_pairs", None)
    out: list = [None] * len(requests)
    bulk = []
    for q, (k, t, keep, rows) in enumerate(requests):
        ip = ips[k]
        if union is None or t < ip.floor or (ip.row_classes is not None
                                             and any(c is not None for c in ip.row_classes)):
            out[q] = ip.match(t, solver, cost, keep=keep, rows=rows)
        else:
            bulk.append(q)
    if bulk:
        for q, res in zip(bulk, _bulk(ips, [requests[q] for q in bulk], union, cost)):
            out[q] = res
    return out


def _bulk(ips, requests, union, cost) -> list[tuple[np.ndarray, Cells]]:
    used = sorted({k for k, *_ in requests})
    slot = {k: s for s, k in enumerate(used)}
    pairs = [ips[k].sorted_pairs(cost) for k in used]
    n_img = np.array([ips[k].problem.n for k in used], np.int64)
    p_img = np.array([len(p[0]) for p in pairs], np.int64)
    rows_img = np.array([ips[k].n_rows for k in used], np.int64)
    img_ann0 = np.cumsum(n_img) - n_img
    img_pair0 = np.cumsum(p_img) - p_img
    rater_c = np.concatenate([ips[k].problem.rater for k in used]).astype(np.int64, copy=False)
    cat_c = np.concatenate([ips[k].problem.category for k in used]).astype(np.int64, copy=False)
    i_c = np.concatenate([p[0] for p in pairs]).astype(np.int64, copy=False)
    j_c = np.concatenate([p[1] for p in pairs]).astype(np.int64, copy=False)
    s_c = np.concatenate([p[2] for p in pairs])

    img = np.array([slot[k] for k, *_ in requests], np.int64)
    thr = np.array([float(t) for _, t, _, _ in requests])
    nq = n_img[img]
    keep = np.concatenate([np.ones(n, bool) if r[2] is None else np.asarray(r[2], bool)
                           for r, n in zip(requests, nq.tolist())])
    ann0 = np.cumsum(nq) - nq                                   # request's first position in `keep`
    req_of, src = ranges(img_ann0[img], nq)                     # position in the chunk's annotations
    kept_before = np.concatenate([[0], np.cumsum(keep)])        # kept annotations before a position
    gid = kept_before[1:] - 1                                   # global number of a kept annotation
    rater_k, cat_k = rater_c[src[keep]], cat_c[src[keep]]
    req_k = req_of[keep]

    # the image's sorted pairs, once per request, filtered like ImageProblem._match_sorted
    pair_req, idx = ranges(img_pair0[img], p_img[img])
    pi, pj = ann0[pair_req] + i_c[idx], ann0[pair_req] + j_c[idx]
    ok = (s_c[idx] >= thr[pair_req]) & keep[pi] & keep[pj]
    label = union(rater_k, gid[pi[ok]], gid[pj[ok]])

    # rows: the request's rows renumbered 0..R-1 (all the image's rows when rows is None)
    remaps, rq = [], []
    for (_, _, _, rows), n_rows in zip(requests, rows_img[img].tolist()):
        if rows is None:
            remaps.append(np.arange(n_rows))
            rq.append(n_rows)
        else:
            m = np.full(n_rows, -1)
            m[rows] = np.arange(len(rows))
            remaps.append(m)
            rq.append(len(rows))
    rq = np.array(rq, np.int64)
    remap0 = np.cumsum(rows_img[img]) - rows_img[img]
    row_k = np.concatenate(remaps)[remap0[req_k] + rater_k]
    k0, kq, unit_k, uq, c0, value, row, unit = request_cells(label, kept_before, ann0, nq, req_k, row_k, cat_k, rq)
    cq = rq * uq

    res = []
    for q, (a, n, c, m, u) in enumerate(zip(k0.tolist(), kq.tolist(), c0.tolist(), cq.tolist(), uq.tolist())):
        res.append((unit_k[a:a + n], Cells(row[c:c + m], unit[c:c + m], value[c:c + m], u)))
    return res


def request_cells(label: np.ndarray, kept_before: np.ndarray, ann0: np.ndarray, n_ann: np.ndarray,
                  req_k: np.ndarray, row_k: np.ndarray, cat_k: np.ndarray, n_rows: np.ndarray) -> tuple:
    """Units and reliability cells of many requests matched in one union pass.

    The requests' annotations are numbered consecutively (request q's at ``ann0[q] ..
    ann0[q] + n_ann[q] - 1``; ``kept_before[p]``: annotations kept before position p); ``label``
    (the union step's units of the kept annotations, numbered by first annotation) gives each
    request a contiguous label range. ``req_k``, ``row_k``, ``cat_k``: request, row (among the
    request's ``n_rows[q]`` rows) and class of each kept annotation.

    Returns ``(k0, kq, unit_k, uq, c0, value, row, unit)``: each request's first kept annotation
    and count, each kept annotation's unit within its request, each request's unit count, first
    cell, and all cells ``(value, row, unit)``: every (row, unit) of a request, row-major,
    NO_OBJECT where the row drew nothing.
    """
    k0 = kept_before[ann0]
    kq = kept_before[ann0 + n_ann] - k0
    first = np.ones(len(label), bool)
    first[1:] = label[1:] > np.maximum.accumulate(label)[:-1]
    units_before = np.concatenate([[0], np.cumsum(first)])
    u0 = units_before[k0]
    uq = units_before[k0 + kq] - u0
    unit_k = label - u0[req_k]
    cq = n_rows * uq
    c0 = np.cumsum(cq) - cq
    value = np.full(int(cq.sum()), NO_OBJECT, np.int64)
    value[c0[req_k] + row_k * uq[req_k] + unit_k] = cat_k
    cell_req, pos = ranges(np.zeros(len(cq), np.int64), cq)
    row, unit = np.divmod(pos, np.maximum(uq, 1)[cell_req])
    return k0, kq, unit_k, uq, c0, value, row, unit


__all__ = ["Request", "match_requests", "request_cells"]
