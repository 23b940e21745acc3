"""The registered diagnostics (docs/method.md §6). One :func:`register_diagnostic` call each.

Each ``_emit_*`` says which reliability matrices an image contributes; each
``_reduce_*`` turns their α (per image) and summed coincidences (over images)
into the result fields the diagnostic owns.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .image_values import ImageValues
from .diagnostics import (ChunkCells, Diagnostic, Emitter, ImageContext, Reduction, RowRequest, by_image, mean_by_key, nested,
                          register_diagnostic)
from ..params import fraction_key
from ..reliability import NO_OBJECT


# -- annotator vitality: V_r = α_R - α_(R without r), re-matched without r ----------------------------
def _vitality_requests(rows: tuple, base: tuple, config) -> list[RowRequest]:
    """The image without each rater, re-matched (images with 3+ rows)."""
    if len(rows) < 3:
        return []
    return [RowRequest(None, tuple(k for k in range(len(rows)) if k != r), name, None)
            for r, name in enumerate(rows)]


def _emit_vitality_chunk(chunk: ChunkCells, out: Emitter) -> None:
    """Global: the global matrix with and without each rater's row (not re-matched). Per rater,
    the main matrices of the chunk's images that have the rater form one matrix of each kind
    (their sums add; the key is present exactly when an image has the rater)."""
    if chunk.n_dataset_rows < 3:
        return
    img, unit, value, row, n_units = chunk.main
    names = sorted({name for rows in chunk.rows for name in rows})
    code = {name: k for k, name in enumerate(names)}
    row_codes = [np.array([code[name] for name in rows], np.int64) for rows in chunk.rows]
    row_start = np.cumsum([len(r) for r in row_codes]) - np.array([len(r) for r in row_codes])
    cell_name = np.concatenate(row_codes)[row_start[img] + row]
    has = np.zeros((len(row_codes), len(names)), bool)
    for k, rc in enumerate(row_codes):
        has[k, rc] = True
    group = np.zeros(n_units, np.int64)
    for k, name in enumerate(names):
        with_ = has[img, k]
        without = with_ & (cell_name != k)
        first = chunk.index[int(np.argmax(has[:, k]))]
        for kind, keep in (("with", with_), ("without", without)):
            out.block([(None, (kind, name))], group, unit[keep], value[keep], images=[first])


def chunk_cells(ctxs: list[ImageContext], which: str) -> tuple:
    """The chunk's ``ctx.main`` or ``ctx.cells`` side by side (:class:`ChunkCells`)."""
    cells = [getattr(c, which) for c in ctxs]
    n_cells = np.array([len(c.value) for c in cells], np.int64)
    n_units = np.array([c.n_units for c in cells], np.int64)
    img = np.repeat(np.arange(len(cells)), n_cells)
    unit = np.concatenate([c.unit for c in cells]) + np.repeat(np.cumsum(n_units) - n_units, n_cells)
    return (img, unit, np.concatenate([c.value for c in cells]), np.concatenate([c.row for c in cells]),
            int(n_units.sum()))


def _reduce_vitality(red: Reduction) -> dict:
    per_image = {r: ImageValues(v.images, red.image_alpha[v.images] - v.alphas) for r, v in red.values.items()}
    out = {"vitality": mean_by_key(per_image), "vitality_global": {},
           "vitality_images": by_image(per_image, red.image_ids)}
    if len(red.rows) >= 3:
        for r in red.rows:
            without = red.global_sums.copy()
            if ("with", r) in red.sums:
                without.add(red.sums[("with", r)], -1).add(red.sums[("without", r)])
            out["vitality_global"][r] = red.global_alpha - without.alpha()
    return out


def _summary_vitality(result) -> list[str]:
    if not result.vitality:
        return []
    models = set(getattr(result, "models", None) or ())
    return (["\nrater vitality (+ consensus builder, - source of noise)"]
            + [f"  {r + (' (model)' if r in models else ''):<24} {v:+.4f}"
               for r, v in sorted(result.vitality.items(), key=lambda kv: -kv[1])])


# -- class difficulty: α of the units in which any rater used class c ---------------------------------
def _emit_class_difficulty_chunk(chunk: ChunkCells, out: Emitter) -> None:
    """Per image and class c, the units in which any rater used c (each unit's cells in the
    image's cell order); all images of the chunk in one block."""
    img, unit, value, _, n_units = chunk.cells
    used = value != NO_OBJECT
    if not used.any():
        return
    # distinct (image, class, unit), sorted; units are numbered across the chunk in image order
    order = np.lexsort((unit[used], value[used], img[used]))
    pi, pc, pu = img[used][order], value[used][order], unit[used][order]
    new = np.ones(len(pi), bool)
    new[1:] = (pi[1:] != pi[:-1]) | (pc[1:] != pc[:-1]) | (pu[1:] != pu[:-1])
    pi, pc, pu = pi[new], pc[new], pu[new]
    new_group = np.ones(len(pi), bool)
    new_group[1:] = (pi[1:] != pi[:-1]) | (pc[1:] != pc[:-1])
    pair_group = np.cumsum(new_group) - 1
    cell_order = np.argsort(unit, kind="stable")
    start = np.searchsorted(unit[cell_order], np.arange(n_units + 1))
    length = np.diff(start)[pu]
    pair_of_cell = np.repeat(np.arange(len(pu)), length)
    offset = np.arange(len(pair_of_cell)) - np.repeat(np.cumsum(length) - length, length)
    pick = cell_order[start[pu][pair_of_cell] + offset]
    classes, which = np.unique(pc[new_group], return_inverse=True)
    kid = np.array([out.key_id((out.prefix, c)) for c in classes.tolist()], np.int64)[which.reshape(-1)]
    out.block_ids(np.asarray(chunk.index, np.int64)[pi[new_group]], kid, kid, pair_group, pair_of_cell, value[pick])


def _reduce_class_difficulty(red: Reduction) -> dict:
    name = lambda c: red.names.get(c, str(c))
    return {"class_difficulty": mean_by_key(red.values, name),
            "class_difficulty_images": by_image(red.values, red.image_ids, name),
            "class_difficulty_global": {name(c): s.alpha() for c, s in sorted(red.sums.items())}}


def _summary_class_difficulty(result) -> list[str]:
    if not result.class_difficulty:
        return []
    hardest = sorted(result.class_difficulty.items(), key=lambda kv: kv[1])[:10]
    return ["\nhardest classes (alpha)"] + [f"  {c:<24} {v:.4f}" for c, v in hardest]


# -- collaboration: α of every pair of raters, matched on the two alone -------------------------------
def _collaboration_requests(rows: tuple, base: tuple, config) -> list[RowRequest]:
    """Every two rows, matched on the two alone (an image without units there agrees: NO_OBJECT)."""
    return [RowRequest(None, (p, q), (rows[p], rows[q]), (rows[p], rows[q]), True)
            for p, q in combinations(range(len(rows)), 2)]


def _reduce_collaboration(red: Reduction) -> dict:
    shared = nested({p: len(v) for p, v in red.values.items()}, red.rows)
    return {"collaboration": nested(mean_by_key(red.values), red.rows),
            "collaboration_n": {r: {q: n for q, n in row.items() if q != r} for r, row in shared.items()},
            "collaboration_global": nested({p: s.alpha() for p, s in red.sums.items()}, red.rows)}


def _summary_collaboration(result) -> list[str]:
    if not result.collaboration:
        return []
    rows = sorted(result.collaboration)
    models = set(getattr(result, "models", None) or ())
    mark = lambda r, n: (r[:n - 1] + "*") if r in models else r[:n]
    lines = ["\npairwise alpha" + (" (* model)" if models else ""),
             "  " + " " * 16 + "".join(f"{mark(r, 9):>10}" for r in rows)]
    for r in rows:
        lines.append(f"  {mark(r, 16):<16}" + "".join(f"{result.collaboration[r].get(q, float('nan')):>10.3f}"
                                                      for q in rows))
    return lines


# -- localisation sensitivity: the image's α at each threshold ----------------------------------------
def _lsa_requests(rows: tuple, base: tuple, config) -> list[RowRequest]:
    return [RowRequest(t, None, t, None) for t in dict.fromkeys(float(t) for t in config.lsa_thresholds)]


def _reduce_lsa(red: Reduction) -> dict:
    means = mean_by_key(red.values)
    return {"lsa": {fraction_key(t): v for t, v in means.items()},
            "lsa_delta": red.mean_alpha - means[max(means)] if means else None}


def _summary_lsa(result) -> list[str]:
    if not result.lsa:
        return []
    return (["\nlocalisation sensitivity (threshold -> mean alpha)"]
            + [f"  {t:>6} {v:.4f}" for t, v in result.lsa.items()])


# -- intra-rater: α among the sessions of a rater who labelled the image more than once ---------------
def _intra_rater_requests(rows: tuple, base: tuple, config) -> list[RowRequest]:
    groups: dict[str, list[int]] = {}
    for k, rater in enumerate(base):
        groups.setdefault(rater, []).append(k)
    return [RowRequest(None, tuple(ks), rater, None) for rater, ks in groups.items() if len(ks) >= 2]


register_diagnostic(Diagnostic(
    "vitality", "annotator vitality V_r = alpha - alpha without r (needs 3 raters on an image)",
    _vitality_requests, _reduce_vitality, (("vitality", dict), ("vitality_global", dict), ("vitality_images", dict)),
    rematches_per_rater=True, summary=_summary_vitality, emit_chunk=_emit_vitality_chunk))
register_diagnostic(Diagnostic(
    "class_difficulty", "alpha of the units in which any rater used each class",
    None, _reduce_class_difficulty,
    (("class_difficulty", dict), ("class_difficulty_global", dict), ("class_difficulty_images", dict)), summary=_summary_class_difficulty,
    emit_chunk=_emit_class_difficulty_chunk))
register_diagnostic(Diagnostic(
    "collaboration", "pairwise alpha of every two raters, matched on the two alone",
    _collaboration_requests, _reduce_collaboration,
    (("collaboration", dict), ("collaboration_global", dict), ("collaboration_n", dict)),
    rematches_per_rater=True, summary=_summary_collaboration))
register_diagnostic(Diagnostic(
    "lsa", "localisation sensitivity: mean alpha at each of --lsa's thresholds",
    _lsa_requests, _reduce_lsa, (("lsa", dict), ("lsa_delta", lambda: None)),
    switch=False, enabled=lambda config: bool(config.lsa_thresholds), summary=_summary_lsa))
register_diagnostic(Diagnostic(
    "intra_rater", "alpha among the sessions of a rater who labelled an image more than once",
    _intra_rater_requests, lambda red: {"intra_rater": mean_by_key(red.values)}, (("intra_rater", dict),)))
