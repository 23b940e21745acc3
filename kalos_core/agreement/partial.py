"""The map step of an agreement run: a chunk of images -> a mergeable :class:`Partial`.

Column-held boxes take the whole-chunk kernel (:mod:`kalos_core.agreement.chunk_kernel`); any other
chunk goes image by image (:func:`_per_image`, the kernel's reference): every image's
matching at the run's threshold and the re-matches the enabled diagnostics ask for
(:class:`~kalos_core.agreement.diagnostics.RowRequest`) run as one bulk pass over the chunk
(:mod:`kalos_core.agreement.bulk_match`), then the matrices are emitted per image and, for
diagnostics with ``emit_chunk``, for the whole chunk. Either way the α of all matrices of
the chunk is one batch (:func:`kalos_core.coincidence.group_sums`).
Partials of consecutive chunks merge (:meth:`Partial.merge`) into exactly what
one chunk holding all images gives, so the chunking changes no number.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bulk_match import match_requests
from .chunk_kernel import analyse as analyse_columns, applies as columns_apply
from ..coincidence import AlphaSums, group_sums
from ..columns import ids_and_raters
from .diagnostic_defs import chunk_cells  # (importing it registers the diagnostics)
from .image_values import ImageValues
from .diagnostics import ALPHA, ChunkCells, Emitter, ImageContext, enabled_diagnostics, rematch_key
from ..executors import chunk_bounds
from ..gcpause import paused_gc
from ..matching.costs import get_cost
from ..matching.solvers import get_solver
from .problem import prepare_image
from .label_map import STATUS, LabelBlock
from ..reliability import empty_image_cells, status_codes



@dataclass
class Partial:
    """What a chunk of images contributes to a run (all fields merge by concatenation or addition)."""

    image_ids: list = field(default_factory=list)
    alphas: list = field(default_factory=list)
    labels: list = field(default_factory=list)          #: LabelBlocks: unit and status of every annotation
    counts: dict = field(default_factory=dict)          #: rater -> {"annotations"|status: count}
    n_units: int = 0
    single: int = 0                                     #: images with fewer than two raters
    values: dict = field(default_factory=dict)          #: (diagnostic, key) -> ImageValues: [(image index, α)]
    sums: dict = field(default_factory=dict)            #: (diagnostic, key) -> AlphaSums

    def merge(self, other: "Partial") -> "Partial":
        """In place: append ``other``, the partial of the images that follow this one's."""
        self.image_ids += other.image_ids
        self.alphas += other.alphas
        self.labels += other.labels
        for r, c in other.counts.items():
            mine = self.counts.setdefault(r, {})
            for k, v in c.items():
                mine[k] = mine.get(k, 0) + v
        self.n_units += other.n_units
        self.single += other.single
        for k, v in other.values.items():
            if k not in self.values:
                self.values[k] = ImageValues()
            self.values[k].extend(v)
        for k, s in other.sums.items():
            if k in self.sums:
                self.sums[k].add(s)
            else:
                self.sums[k] = s.copy()
        return self


def analyse_chunk(images: list, first: int, kind: str, config: Any, n_dataset_rows: int,
                  kernel: bool = True) -> Partial:
    """The partial result of ``images`` (the data set's images ``first, first + 1, ...``).

    Chunks of column-held boxes take the whole-chunk kernel (:mod:`kalos_core.agreement.chunk_kernel`)
    unless ``kernel`` is False; the result is the same either way."""
    with paused_gc():   # a chunk makes no reference cycles; collections would only walk its objects
        spec = config.distance_spec(kind)
        solver, cost = get_solver(config.solver), get_cost(config.cost)
        diagnostics = enabled_diagnostics(config)
        out, emit = Partial(), Emitter()
        if kernel and images and columns_apply(images, spec, solver, diagnostics):
            analyse_columns(images, first, config, spec, cost, diagnostics, n_dataset_rows, out, emit)
        else:
            _per_image(images, first, config, spec, solver, cost, diagnostics, n_dataset_rows, out, emit)
        _batch_alpha(emit, out)
        out.alphas = out.values.pop(ALPHA).alphas.tolist()
        return out


def _per_image(images: list, first: int, config: Any, spec, solver, cost, diagnostics: list, n_dataset_rows: int,
               out: Partial, emit: Emitter) -> None:
    """The map step image by image (the reference for the kernel; any data)."""
    floor = min((config.threshold, *config.lsa_thresholds))
    counts: dict = defaultdict(lambda: defaultdict(int))
    ips = [prepare_image(image, spec, floor) for image in images]
    matched = _match_chunk(ips, config, diagnostics, solver, cost)
    contexts: list[ImageContext] = []
    for k, (image, ip) in enumerate(zip(images, ips)):
        (units, cells), rematches = matched[k]
        main = cells if cells.n_units else empty_image_cells(ip.n_rows)
        out.image_ids.append(image.id)
        out.single += ip.n_rows < 2
        out.n_units += int(units.max()) + 1 if len(units) else 0
        codes = status_codes(units, ip.problem.category)
        ids, raters = ids_and_raters(ip.annotations)
        out.labels.append(LabelBlock.compact(list(ids), [f"{image.id}:"], [len(ids)], units, codes))
        status = [STATUS[c] for c in codes.tolist()]
        for (rater, s), n in Counter(zip(raters, status)).items():   # keys in order of first appearance
            c = counts[rater]
            c["annotations"] += n
            c[s] += n
        emit.image, emit.prefix = first + k, ""
        emit.cells(ALPHA[1], ALPHA[1], main)
        ctx = ImageContext(first + k, ip, cells, main, config, solver, cost, n_dataset_rows)
        ctx._rematches = rematches
        contexts.append(ctx)
        for d in diagnostics:
            emit.prefix = d.name
            d.emit_image(ctx, emit)
    if contexts and any(d.emit_chunk for d in diagnostics):
        chunk = ChunkCells([c.index for c in contexts], [c.ip.rows for c in contexts], n_dataset_rows,
                           chunk_cells(contexts, "main"), chunk_cells(contexts, "cells"))
        for d in diagnostics:
            if d.emit_chunk is not None:
                emit.prefix = d.name
                d.emit_chunk(chunk, emit)
    out.counts = {r: dict(c) for r, c in counts.items()}


def _match_chunk(ips: list, config: Any, diagnostics: list, solver, cost) -> list:
    """Per image: its units and cells at the run's threshold, and the re-matches the diagnostics
    plan (:attr:`Diagnostic.plan`) by :func:`rematch_key`, all matched in one bulk pass."""
    thr = float(config.threshold)
    requests, keys = [], []
    for k, ip in enumerate(ips):
        requests.append((k, thr, None, None))
        keys.append(None)
        seen = set()
        for d in diagnostics:
            for t, keep, rows in d.rematch_plan(ip, config):
                t = thr if t is None else float(t)
                key = rematch_key(t, keep, rows)
                if key not in seen:
                    seen.add(key)
                    requests.append((k, t, keep, rows))
                    keys.append(key)
    out: list = []
    for (k, *_), key, res in zip(requests, keys, match_requests(ips, requests, solver, cost)):
        if key is None:
            out.append((res, {}))
        else:
            out[k][1][key] = res[1]
    return out


def _batch_alpha(emit: Emitter, out: Partial) -> None:
    """α of every emitted matrix in one batch; per-image values and summed sums by key (keys in
    order of their first matrix, each key's values in emission order)."""
    out.values = {ALPHA: ImageValues()}
    if not emit.n_groups:
        return
    gs = group_sums(*emit.flat(), emit.n_groups)
    alphas = gs.alpha()
    keys = list(emit.keys)
    image, vid = np.array(emit.group_image, np.int64), np.array(emit.group_value, np.int64)
    has = np.flatnonzero(vid >= 0)
    order = has[np.argsort(vid[has], kind="stable")]
    bounds = np.flatnonzero(np.diff(vid[order])) + 1
    runs = sorted(np.split(order, bounds), key=lambda r: int(r[0])) if len(order) else []
    for run in runs:
        out.values[keys[int(vid[run[0]])]] = ImageValues(image[run], alphas[run])
    out.sums = gs.by_key_id(np.array(emit.group_sums, np.int64), keys)


__all__ = ["ALPHA", "AlphaSums", "Partial", "analyse_chunk", "chunk_bounds", "enabled_diagnostics"]
