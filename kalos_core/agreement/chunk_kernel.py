"""The map step of a chunk of box images in whole-array operations.

:func:`kalos_core.agreement.partial.analyse_chunk` prepares, matches and emits image by image: a few
dozen numpy calls per image, so at ~58 boxes an image the calls cost more than the work.
When a chunk's images hold their boxes as columns (the columnar COCO reader), the distance
has an element-wise form (:attr:`DistanceSpec.pairs`), the solver a union step on sorted
pairs (greedy) and every enabled diagnostic describes its matrices as
:class:`~kalos_core.agreement.diagnostics.RowRequest` s, this module does the same for the whole chunk:

1. the canonical order of all the chunk's annotations (image, row, class, box, id): one sort;
2. every image's candidate pairs (different rows; for a distance that is 0 without overlap,
   only boxes that overlap along x) and their similarity, element-wise, sorted per image in
   greedy's acceptance order (cost, i, j);
3. every image's requests (its matrix at the run's threshold first, then the diagnostics'),
   numbered as (image, threshold, rows) without repeats, matched by one union pass;
4. the cells of every requested matrix, handed to the batch α of :mod:`kalos_core.agreement.partial`.

It fills the same :class:`~kalos_core.agreement.partial.Partial` and emitter as the per-image path,
matrix by matrix in the same order (tests/core/test_chunk_kernel.py holds the two equal).
The per-image path stays the reference and serves every other chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from ..columns import AnnotationColumns, canonical_order
from ..arrays import ranges
from .bulk_match import request_cells
from .diagnostics import ALPHA, ChunkCells, Emitter, RowRequest, full_key
from ..geometry.boxes import image_sides, prepare_box_columns, prepare_boxes
from .label_map import STATUS, LabelBlock
from ..reliability import NO_OBJECT, status_codes



def applies(images: list, spec, solver, diagnostics: list) -> bool:
    """Can this chunk take the kernel? (Otherwise the per-image path runs; same results.)"""
    if spec.pairs is None or spec.prepare is not prepare_boxes or not hasattr(solver, "on_sorted_pairs"):
        return False
    if any(d.requests is None and d.emit is not None for d in diagnostics):
        return False
    return all(isinstance(im.annotations, AnnotationColumns) and not im.rater_classes for im in images)


@dataclass
class _Chunk:
    """The chunk's annotations in canonical order."""

    img: np.ndarray        #: (N,) position of the annotation's image in the chunk
    row: np.ndarray        #: (N,) its row among the image's sorted raters
    cat: np.ndarray
    xywh: np.ndarray
    ids: list              #: as read; annotation k's id is ``ids[order[k]]``
    order: np.ndarray
    start: np.ndarray      #: (K + 1,) first annotation of each image
    rows: list             #: per image, its sorted rater names


def gather(images: list) -> _Chunk:
    rows = [tuple(sorted(im.raters)) for im in images]
    cols = [im.annotations for im in images]
    n = np.array([len(c) for c in cols], np.int64)
    lookup, known = [], {}
    for c, r in zip(cols, rows):             # column code -> row, once per distinct (names, rows)
        key = (tuple(c.names), r)
        codes = known.get(key)
        if codes is None:
            pos = {name: k for k, name in enumerate(r)}
            codes = known[key] = [pos[name] for name in c.names]
        lookup.append(codes)
    n_codes = np.array([len(x) for x in lookup], np.int64)
    img = np.repeat(np.arange(len(images)), n)
    if not len(img):
        e = np.zeros(0, np.int64)
        return _Chunk(e, e, e, np.zeros((0, 4)), [], e, np.zeros(len(images) + 1, np.int64), rows)
    table = np.fromiter(chain.from_iterable(lookup), np.int64, int(n_codes.sum()))
    row = table[np.repeat(np.cumsum(n_codes) - n_codes, n) + np.concatenate([c.rater for c in cols])]
    cat = np.concatenate([c.category for c in cols]).astype(np.int64, copy=False)
    xywh = np.concatenate([c.boxes for c in cols]).astype(float, copy=False)
    ids = list(chain.from_iterable(c.ids for c in cols))
    order = canonical_order(row, cat, xywh, ids, img)
    return _Chunk(img, row[order], cat[order], xywh[order], ids, order, np.concatenate([[0], np.cumsum(n)]), rows)


def candidate_pairs(ch: _Chunk, images: list, spec, cost, floor: float):
    """``(i, j, similarity)`` of every image's candidate pairs (i < j, different rows, similarity
    >= floor), grouped by image and within an image in greedy's acceptance order (cost, i, j)."""
    prep = prepare_box_columns(ch.xywh, image_sides(images)[ch.img])
    if spec.at_most_iou and floor > 0:
        i, j = overlapping_along_x(ch, prep["xyxy"], floor)
    else:
        i, j = _all_pairs(ch)
    ok = ch.row[i] != ch.row[j]
    i, j = i[ok], j[ok]
    s = spec.pairs(prep.take_on_use(i), prep.take_on_use(j))
    ok = s >= floor
    i, j, s = i[ok], j[ok], s[ok]
    i, j, s = _by_pair(i, j, s, len(ch.img))                 # (i, j) order, so that a stable sort
    order = np.lexsort((cost(s, ch.cat[i] == ch.cat[j]), ch.img[i]))   # by (image, cost) ends (cost, i, j)
    return i[order], j[order], s[order]


def _by_pair(i: np.ndarray, j: np.ndarray, s: np.ndarray, n: int):
    order = np.argsort(i * n + j)                             # distinct keys: any sort is the same
    return i[order], j[order], s[order]


def _all_pairs(ch: _Chunk) -> tuple[np.ndarray, np.ndarray]:
    """Every ``i < j`` of one image."""
    n_after = ch.start[ch.img + 1] - np.arange(len(ch.img)) - 1
    i, j = ranges(np.arange(len(ch.img)) + 1, n_after)
    return i, j


def overlapping_along_x(ch: _Chunk, xyxy: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of one image that can reach IoU ``floor``: IoU >= t needs an x-overlap of at least
    t times the wider box's width, so with boxes sorted by left edge, box p pairs with the boxes
    that start by ``right_p - t * width_p`` (a hair later, 1e-9 of the width, for round-off).

    All images at once: image k's edges are shifted to ``[k C, k C + C / 2]`` (C a power of two at
    least twice the edges' span), so one sorted array and one search serve every image; rounding
    is monotone, so the search finds every box p's partners (and at most a few more that tie
    after rounding; the similarity filter drops those), never a box of another image."""
    x1, x2 = xyxy[:, 0], xyxy[:, 2]
    reach = x2 - floor * (1 - 1e-9) * (x2 - x1)
    lo = min(float(x1.min()), float(reach.min())) if len(x1) else 0.0
    span = max(float(x1.max()), float(reach.max())) - lo if len(x1) else 0.0
    c = 2.0 ** (int(np.ceil(np.log2(span))) + 1 if span > 0 else 0)
    base = ch.img * c - lo
    key = base + x1
    xo = np.argsort(key, kind="stable")
    end = np.searchsorted(key[xo], (base + reach)[xo], side="right")
    p, q = ranges(np.arange(len(xo)) + 1, np.maximum(end - np.arange(len(xo)) - 1, 0))
    p, q = xo[p], xo[q]
    return np.minimum(p, q), np.maximum(p, q)


@dataclass
class _Template:
    """The requests of every image with the same rows: unique (threshold, rows) and what each
    emitted matrix reads."""

    thr: np.ndarray        #: (Q,) per unique request
    rank: np.ndarray       #: (Q, R) a row's index among the request's rows, -1 if not one of them
    n_rows: np.ndarray     #: (Q,)
    emit_req: np.ndarray   #: (E,) request of each emitted matrix
    empty: np.ndarray      #: (E,) an empty matching counts as one NO_OBJECT unit
    keys: list             #: (E,) (value key, sums key)
    key_ids: np.ndarray | None = None   #: (E, 2) their ids in the chunk's emitter


def _template(rows: tuple, base: tuple, config, diagnostics: list, thr: float) -> _Template:
    reqs = [RowRequest(None, None, ALPHA, ALPHA, True)]
    for d in diagnostics:
        reqs += [r._replace(value=full_key(d.name, r.value), sums=full_key(d.name, r.sums))
                 for r in d.row_requests(rows, base, config)]
    index: dict = {}
    n = len(rows)
    ranks, thrs, emit_req = [], [], []
    for r in reqs:
        members = tuple(range(n)) if r.rows is None else tuple(r.rows)
        key = (thr if r.threshold is None else float(r.threshold), members)
        if key not in index:
            index[key] = len(index)
            thrs.append(key[0])
            rank = [-1] * n
            for k, m in enumerate(members):
                rank[m] = k
            ranks.append(rank)
        emit_req.append(index[key])
    rank = np.array(ranks, np.int64).reshape(len(ranks), n)
    return _Template(np.array(thrs), rank, (rank >= 0).sum(1), np.array(emit_req, np.int64),
                     np.array([r.empty for r in reqs]), [(r.value, r.sums) for r in reqs])


def _templates(images: list, ch: _Chunk, config, diagnostics: list) -> tuple[list[_Template], np.ndarray]:
    """One template per distinct rows and base raters (all a diagnostic's requests may depend on),
    and each image's template."""
    cache: dict = {}
    out: list[_Template] = []
    tid = np.empty(len(images), np.int64)
    thr = float(config.threshold)
    for k, (im, rows) in enumerate(zip(images, ch.rows)):
        key = (rows, tuple(im.base_rater(r) for r in rows))
        if key not in cache:
            cache[key] = len(out)
            out.append(_template(*key, config, diagnostics, thr))
        tid[k] = cache[key]
    return out, tid


def _template_field(templates: list[_Template], tid: np.ndarray, field: str) -> tuple[np.ndarray, np.ndarray]:
    """A template field for every image, concatenated in image order, and each image's count."""
    count = np.array([len(getattr(t, field)) for t in templates], np.int64)
    flat = np.concatenate([getattr(t, field) for t in templates])
    start = np.cumsum(count) - count
    _, pos = ranges(start[tid], count[tid])
    return flat[pos], count[tid]


def analyse(images: list, first: int, config: Any, spec, cost, diagnostics: list, n_dataset_rows: int,
            out, emit: Emitter) -> None:
    """Fill ``out`` (a :class:`~kalos_core.agreement.partial.Partial`) and ``emit`` for ``images``, the
    data set's images ``first, first + 1, ...`` - as the per-image path does."""
    from ..matching.solvers import get_solver

    union = get_solver(config.solver).on_sorted_pairs
    floor = min((float(config.threshold), *map(float, config.lsa_thresholds)))
    ch = gather(images)
    pi, pj, ps = candidate_pairs(ch, images, spec, cost, floor)
    templates, tid = _templates(images, ch, config, diagnostics)
    K, n = len(images), np.diff(ch.start)

    # requests: every image's templates side by side
    req_thr, nq_img = _template_field(templates, tid, "thr")
    req_img = np.repeat(np.arange(K), nq_img)
    req0 = np.cumsum(nq_img) - nq_img                           # each image's first request: its own matrix
    width = max([t.rank.shape[1] for t in templates] + [1])
    padded = np.concatenate([np.pad(t.rank, ((0, 0), (0, width - t.rank.shape[1])), constant_values=-1)
                             for t in templates]) if templates else np.zeros((0, width), np.int64)
    t_first = np.cumsum([len(t.thr) for t in templates]) - np.array([len(t.thr) for t in templates])
    rank = padded[ranges(t_first[tid], nq_img)[1]] if K else np.zeros((0, width), np.int64)
    req_rows = (rank >= 0).sum(1)

    # the requests' annotations, numbered consecutively over the kept ones
    na = n[req_img]
    req_of, src = ranges(ch.start[req_img], na)
    keep = rank[req_of, ch.row[src]] >= 0
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    gid = kept_before[1:] - 1
    ann0 = np.cumsum(na) - na

    # the requests' pairs: their image's candidates at the request's threshold, both ends kept
    pstart = np.searchsorted(ch.img[pi], np.arange(K + 1))
    pair_req, idx = ranges(pstart[req_img], pstart[req_img + 1] - pstart[req_img])
    shift = ann0[pair_req] - ch.start[req_img][pair_req]
    a, b = pi[idx] + shift, pj[idx] + shift
    ok = (ps[idx] >= req_thr[pair_req]) & keep[a] & keep[b]
    label = union(ch.row[src][keep], gid[a[ok]], gid[b[ok]])

    # units (contiguous label ranges per request) and every request's cells, row-major
    req_k = req_of[keep]
    _, _, unit_k, uq, c0, value, c_row, c_unit = request_cells(
        label, kept_before, ann0, na, req_k, rank[req_k, ch.row[src[keep]]], ch.cat[src[keep]], req_rows)

    is_main = np.zeros(len(req_img), bool)
    is_main[req0] = True
    main_k = is_main[req_k]                                     # an image's own matrix: all its annotations
    _per_annotation(images, ch, out, label[main_k], unit_k[main_k], uq[req0])
    main, cells = _emit_matrices(first, templates, tid, req0, req_rows, uq, (c0, value, c_row, c_unit), emit)
    if any(d.emit_chunk for d in diagnostics):
        chunk = ChunkCells([first + k for k in range(K)], ch.rows, n_dataset_rows, main, cells)
        for d in diagnostics:
            if d.emit_chunk is not None:
                emit.prefix = d.name
                d.emit_chunk(chunk, emit)


def _at(arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``arr[idx]`` that also answers (zeros) when ``arr`` is empty."""
    return arr[idx] if len(arr) else np.zeros(len(idx), arr.dtype)


def _emit_matrices(first: int, templates: list, tid: np.ndarray, req0: np.ndarray, req_rows: np.ndarray,
                   uq: np.ndarray, cells: tuple, emit: Emitter) -> tuple[tuple, tuple]:
    """Emit every image's matrices (its own first, then the diagnostics'), in the per-image path's
    order; return the images' own matrices with and without the virtual unit (:class:`ChunkCells`)."""
    c0, value, c_row, c_unit = cells
    e_local, ne = _template_field(templates, tid, "emit_req")
    e_img = np.repeat(np.arange(len(tid)), ne)
    eq = req0[e_img] + e_local
    flag, _ = _template_field(templates, tid, "empty")
    virtual = flag & (uq[eq] == 0) & (req_rows[eq] > 0)        # one unit, every row NO_OBJECT
    eu = np.where(virtual, 1, uq[eq])
    e_of, off = ranges(np.zeros(len(eq), np.int64), req_rows[eq] * eu)
    v = virtual[e_of]
    src = np.where(v, 0, c0[eq][e_of] + off)
    val = np.where(v, NO_OBJECT, _at(value, src))
    unit = np.where(v, 0, _at(c_unit, src))
    row = np.where(v, off, _at(c_row, src))
    for t in templates:
        t.key_ids = np.array([[emit.key_id(v), emit.key_id(s)] for v, s in t.keys], np.int64).reshape(-1, 2)
    ids, _ = _template_field(templates, tid, "key_ids")
    emit.block_ids(first + e_img, ids[:, 0], ids[:, 1], np.repeat(np.arange(len(eq)), eu),
                   unit + (np.cumsum(eu) - eu)[e_of], val)

    e_first = np.cumsum(ne) - ne
    own = np.zeros(len(eq), bool)
    own[e_first] = True
    mc = own[e_of]
    img = e_img[e_of[mc]]
    n_main, n_raw = eu[e_first], uq[req0]
    main = (img, unit[mc] + (np.cumsum(n_main) - n_main)[img], val[mc], row[mc], int(n_main.sum()))
    raw = ~v[mc]
    raw_img = img[raw]
    cells = (raw_img, unit[mc][raw] + (np.cumsum(n_raw) - n_raw)[raw_img], val[mc][raw], row[mc][raw],
             int(n_raw.sum()))
    return main, cells


def _per_annotation(images: list, ch: _Chunk, out, label: np.ndarray, unit: np.ndarray, n_units: np.ndarray) -> None:
    """Unit, status and per-rater counts of every annotation (the images' own matrices)."""
    out.image_ids += [im.id for im in images]
    out.single += int(sum(len(r) < 2 for r in ch.rows))
    out.n_units += int(n_units.sum())
    if not len(label):
        return
    code = status_codes(label, ch.cat)
    prefixes = [f"{im.id}:" for im in images]
    out.labels.append(LabelBlock.compact(ch.ids, prefixes, np.diff(ch.start).tolist(), unit, code, ch.order))
    # per rater: annotations and statuses, keys in order of first appearance (as the per-image path)
    names = sorted({r for rows in ch.rows for r in rows})
    code_of = {r: k for k, r in enumerate(names)}
    table = [[code_of[r] for r in rows] for rows in ch.rows]
    n_rows = np.array([len(t) for t in table], np.int64)
    flat = np.fromiter(chain.from_iterable(table), np.int64, int(n_rows.sum()))
    rater = flat[(np.cumsum(n_rows) - n_rows)[ch.img] + ch.row]
    combo, at, count = np.unique(rater * 3 + code, return_index=True, return_counts=True)
    for c, k in zip(combo[np.argsort(at)].tolist(), count[np.argsort(at)].tolist()):
        mine = out.counts.setdefault(names[c // 3], {"annotations": 0})
        mine["annotations"] += k
        status = STATUS[c % 3]
        mine[status] = mine.get(status, 0) + k
