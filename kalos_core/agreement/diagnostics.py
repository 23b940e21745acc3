"""The diagnostics of an agreement run (docs/method.md §6): one registry, one entry each.

A :class:`Diagnostic` is everything the engine, the CLI and the operators need
to know about one diagnostic: its switch (an ``AgreementConfig`` field of the
same name), what it adds per image (reliability matrices whose α the pipeline
computes in one batch, :mod:`kalos_core.coincidence`), how it reduces those over
the data set into result fields, the result fields it owns (with defaults) and
its CLI text. Adding a diagnostic = one :func:`register_diagnostic` call in
:mod:`kalos_core.agreement.diagnostic_defs`.

Per image, a diagnostic asks for reliability matrices, each under a ``value`` key
(its α is recorded per image) and/or a ``sums`` key (its coincidence sums are added
over images: the α of the union). Most say which as :class:`RowRequest` s (the image
re-matched on some of its rows, at some threshold), which both map steps compute: the
per-image one (:mod:`kalos_core.agreement.partial`) and the whole-chunk kernel
(:mod:`kalos_core.agreement.chunk_kernel`). Matrices over the whole chunk (``emit_chunk``) read
:class:`ChunkCells`. The reduce step receives the α and sums as :class:`Reduction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, NamedTuple

import numpy as np

from ..coincidence import AlphaSums
from .image_values import ImageValues, alphas_of
from ..registry import Registry
from ..reliability import Cells, empty_image_cells

if TYPE_CHECKING:
    from ..matching.costs import CostFn
    from ..matching.solvers import SolverFn
    from .problem import ImageProblem


@dataclass
class ImageContext:
    """One matched image, as a diagnostic sees it."""

    index: int                 #: position of the image in the data set
    ip: ImageProblem
    cells: Cells               #: the image's reliability cells at the run's threshold
    main: Cells                #: the same, or the virtual NO_OBJECT unit when the image has no units
    config: Any                #: the run's AgreementConfig
    solver: SolverFn
    cost: CostFn
    n_dataset_rows: int        #: raters (rows) in the whole data set

    def rematch(self, keep: np.ndarray | None = None, rows: np.ndarray | None = None,
                threshold: float | None = None) -> Cells:
        """Cells of the image re-matched on a subset of annotations / rows (or another threshold).

        Memoised per image: with three raters, the matrix without one rater is the pair of the
        other two (vitality and collaboration ask for the same re-match)."""
        t = float(self.config.threshold if threshold is None else threshold)
        key = rematch_key(t, keep, rows)
        cache = self.__dict__.setdefault("_rematches", {})
        if key not in cache:
            cache[key] = self.ip.match(t, self.solver, self.cost, keep=keep, rows=rows)[1]
        return cache[key]


#: the key of an image's own matrix (value and sums; no diagnostic's name)
ALPHA = ("", "alpha")


def full_key(diagnostic: str, key: Hashable | None) -> Hashable | None:
    """A diagnostic's value or sums key as stored: ``(diagnostic name, key)``; None stays None."""
    return None if key is None else (diagnostic, key)


class RowRequest(NamedTuple):
    """One matrix a diagnostic asks of an image: the image matched at ``threshold`` (None: the
    run's) on the annotations of ``rows`` (sorted row indices, renumbered ``0..len-1``; None:
    all rows), its α recorded under ``value`` and/or its sums added under ``sums`` (None: not).
    ``empty``: when that matching has no units, the matrix is one unit where every row says
    NO_OBJECT (the image agrees there is nothing), else it has no units."""

    threshold: float | None
    rows: tuple[int, ...] | None
    value: Hashable | None
    sums: Hashable | None
    empty: bool = False


def emit_requests(ctx: "ImageContext", requests: list[RowRequest], out: "Emitter") -> None:
    """The matrices of ``requests`` for one matched image (the per-image map step)."""
    rater = ctx.ip.problem.rater
    for t, rows, value, sums, empty in requests:
        if rows is None:
            cells = ctx.rematch(threshold=t)
        else:
            cells = ctx.rematch(keep=np.isin(rater, rows), rows=np.array(rows), threshold=t)
        if empty and not cells.n_units:
            cells = empty_image_cells(ctx.ip.n_rows if rows is None else len(rows))
        out.cells(value, sums, cells)


def plan_requests(requests: list[RowRequest], rater: np.ndarray) -> list[tuple]:
    """``[(threshold, keep, rows)]`` of the re-matches ``requests`` need (:attr:`Diagnostic.plan`)."""
    return [(t, None, None) if rows is None else (t, np.isin(rater, rows), np.array(rows))
            for t, rows, *_ in requests]


@dataclass
class ChunkCells:
    """A chunk's matched images side by side, for the diagnostics that emit for a whole chunk.

    ``main`` and ``cells`` are ``(image, unit, value, row, n_units)``: per cell the image's
    position in the chunk, its unit (numbered across the chunk), value and row (the image's own
    row index); ``main`` holds each image's matrix at the run's threshold (one NO_OBJECT unit
    when it has no units), ``cells`` the same without that virtual unit."""

    index: list[int]                  #: position of each image in the data set
    rows: list[tuple[str, ...]]       #: each image's rows (sorted rater names)
    n_dataset_rows: int
    main: tuple
    cells: tuple


def rematch_key(threshold: float, keep: np.ndarray | None, rows: np.ndarray | None) -> tuple:
    """The memo key of a re-match (:meth:`ImageContext.rematch`)."""
    return (float(threshold), None if keep is None else np.asarray(keep, bool).tobytes(),
            None if rows is None else tuple(np.asarray(rows).tolist()))


class Emitter:
    """Collects the reliability matrices emitted for a chunk of images, as flat cells.

    Each matrix (or block of matrices) is kept as emitted; :meth:`flat` numbers units and
    groups across the chunk in one pass at the end. Every matrix is a *group*: its image and
    the ids (:meth:`key_id`) of its value key and sums key (-1: none), in emission order."""

    def __init__(self) -> None:
        self.units: list[np.ndarray] = []          #: per block: unit of each cell, local to the block
        self.values: list[np.ndarray] = []
        self.block_units: list[int] = []           #: per block: its number of units
        self.block_groups: dict[int, np.ndarray] = {}   #: block -> local group of each unit (absent: all 0)
        self.block_first: list[int] = []           #: per block: its first group
        self.keys: dict[Hashable, int] = {}        #: key (with its diagnostic's name) -> id
        self.group_image: list[int] = []
        self.group_value: list[int] = []           #: value key id of each group, -1: none
        self.group_sums: list[int] = []            #: sums key id of each group, -1: none
        self.image = 0
        self.prefix: str = ""

    @property
    def n_groups(self) -> int:
        return len(self.group_image)

    def key_id(self, key: Hashable | None) -> int:
        """The id of a full key (``(diagnostic, key)``); -1 for None."""
        return -1 if key is None else self.keys.setdefault(key, len(self.keys))

    def _key(self, key: Hashable | None) -> int:
        return self.key_id(full_key(self.prefix, key))

    def cells(self, value_key: Hashable | None, sums_key: Hashable | None, cells: Cells) -> None:
        """One matrix: its α recorded under ``value_key`` and/or its sums added under ``sums_key``."""
        self.block_first.append(self.n_groups)
        self.group_image.append(self.image)
        self.group_value.append(self._key(value_key))
        self.group_sums.append(self._key(sums_key))
        self.units.append(cells.unit)
        self.values.append(cells.value)
        self.block_units.append(cells.n_units)

    def block(self, keys: list[tuple[Hashable | None, Hashable | None]], unit_group: np.ndarray,
              unit: np.ndarray, value: np.ndarray, images: list[int] | None = None) -> None:
        """Several matrices at once: ``unit_group[u]`` indexes ``keys``; units ``0..len(unit_group)-1``.

        ``images[g]``: the image of matrix g (a chunk-wide block, :attr:`Diagnostic.emit_chunk`);
        default: the current image. Matrices that share a sums key may be one matrix: sums add."""
        images = [self.image] * len(keys) if images is None else images
        self.block_ids(np.array(images, np.int64), np.array([self._key(v) for v, _ in keys], np.int64),
                       np.array([self._key(s) for _, s in keys], np.int64), unit_group, unit, value)

    def block_ids(self, images: np.ndarray, value_ids: np.ndarray, sums_ids: np.ndarray, unit_group: np.ndarray,
                  unit: np.ndarray, value: np.ndarray) -> None:
        """:meth:`block` with the matrices' images and key ids (:meth:`key_id`) as arrays."""
        self.block_groups[len(self.block_units)] = np.asarray(unit_group, np.int64)
        self.block_first.append(self.n_groups)
        self.group_image += np.asarray(images, np.int64).tolist()
        self.group_value += np.asarray(value_ids, np.int64).tolist()
        self.group_sums += np.asarray(sums_ids, np.int64).tolist()
        self.units.append(unit)
        self.values.append(value)
        self.block_units.append(len(unit_group))

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(unit, value, unit_group)`` of all cells, units and groups numbered across the chunk."""
        lengths = np.array([len(u) for u in self.units], np.int64)
        n_units = np.array(self.block_units, np.int64)
        start = np.cumsum(n_units) - n_units
        unit = np.concatenate(self.units).astype(np.int64, copy=False) + np.repeat(start, lengths)
        value = np.concatenate(self.values).astype(np.int64, copy=False)
        unit_group = np.repeat(np.array(self.block_first, np.int64), n_units)
        for b, local in self.block_groups.items():
            unit_group[start[b]:start[b] + n_units[b]] += local
        return unit, value, unit_group


@dataclass
class Reduction:
    """What one diagnostic gets back after the batch: per-image α and summed matrices, by key."""

    values: dict[Hashable, ImageValues]               #: value key -> its images' α (reads as [(image index, α)])
    sums: dict[Hashable, AlphaSums]                   #: sums key -> sums over images
    image_alpha: np.ndarray                           #: (n_images,) α of each image
    global_sums: AlphaSums                            #: sums of the global matrix
    global_alpha: float
    mean_alpha: float
    rows: list[str]                                   #: the data set's raters
    names: dict                                       #: category id -> name
    config: Any
    image_ids: list = ()                              #: image index -> image id (as ``per_image_alpha``)


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic, registered once; see the module docstring."""

    name: str                                          #: config switch and main result key
    help: str                                          #: one line for the CLI and the operators
    #: per image: the matrices it needs, as ``requests(rows, base, config) -> [RowRequest]``
    #: (``rows``: the image's sorted rater names; ``base``: each row's rater, ``"alice"`` for the
    #: session row ``"alice (S1)"``); they may depend on nothing else of the image (the whole-chunk
    #: kernel asks once per distinct ``(rows, base)``). Or ``emit(ctx, out)``, per image, which
    #: sends the chunk down the per-image path.
    requests: Callable[[tuple, Any, Any], list[RowRequest]] | None = None
    reduce: Callable[[Reduction], dict[str, Any]] = lambda red: {}   #: over the data set: result fields
    fields: tuple[tuple[str, Callable[[], Any]], ...] = ()  #: result fields it owns, with default factories
    emit: Callable[[ImageContext, Emitter], None] | None = None
    switch: bool = True                                #: a boolean AgreementConfig field named ``name``
    enabled: Callable[[Any], bool] | None = None       #: overrides ``getattr(config, name)``
    rematches_per_rater: bool = False                  #: cost grows with the raters (max_diagnostic_raters)
    summary: Callable[[Any], list[str]] | None = None  #: CLI text lines from a result
    #: with ``emit``: per image, the re-matches it will ask for, ``[(threshold or None, keep, rows)]``
    #: (``requests`` plan themselves); the map step matches them for a whole chunk at once
    plan: Callable[[ImageProblem, Any], list[tuple]] | None = None
    #: once per chunk, after every image's matrices: matrices of all the chunk's images at once
    emit_chunk: Callable[[ChunkCells, Emitter], None] | None = None

    def is_on(self, config) -> bool:
        return bool(self.enabled(config) if self.enabled else getattr(config, self.name))

    def skipped_on(self, n_rows: int, config) -> bool:
        """Skipped on an image of ``n_rows`` rows: it re-matches per rater (or pair) and the image has
        more rows than ``config.max_diagnostic_raters`` (docs/scale.md; the run warns)."""
        limit = getattr(config, "max_diagnostic_raters", None)
        return bool(self.rematches_per_rater and limit and n_rows > limit)

    def row_requests(self, rows: tuple, base: tuple, config) -> list[RowRequest]:
        """:attr:`requests` of an image with ``rows`` (none where :meth:`skipped_on`)."""
        if not self.requests or self.skipped_on(len(rows), config):
            return []
        return self.requests(rows, base, config)

    def image_requests(self, ip: ImageProblem, config) -> list[RowRequest]:
        return self.row_requests(ip.rows, tuple(ip.image.base_rater(r) for r in ip.rows), config)

    def rematch_plan(self, ip: ImageProblem, config) -> list[tuple]:
        if self.requests:
            return plan_requests(self.image_requests(ip, config), ip.problem.rater)
        return self.plan(ip, config) if self.plan else []

    def emit_image(self, ctx: ImageContext, out: Emitter) -> None:
        if self.requests:
            emit_requests(ctx, self.image_requests(ctx.ip, ctx.config), out)
        elif self.emit:
            self.emit(ctx, out)


REGISTRY: Registry[Diagnostic] = Registry("diagnostic")
get_diagnostic = REGISTRY.get


def register_diagnostic(d: Diagnostic) -> Diagnostic:
    return REGISTRY.add(d.name, d)


def enabled_diagnostics(config) -> list:
    """The registered diagnostics ``config`` switches on, in registration order."""
    return [d for d in REGISTRY.values() if d.is_on(config)]


def switches() -> tuple[str, ...]:
    """Names of the diagnostics with an on/off switch, in registration order."""
    return tuple(d.name for d in REGISTRY.values() if d.switch)


def result_fields() -> list[tuple[str, Callable[[], Any]]]:
    return [f for d in REGISTRY.values() for f in d.fields]


def mean_by_key(values: dict[Hashable, ImageValues], key=lambda k: k) -> dict:
    """``{key(k): mean α}``, sorted by key, over the images where a key occurs (the α of the keys
    that ``key`` joins taken in their order: the same sum as over one list of them)."""
    parts: dict = {}
    for k, items in values.items():
        parts.setdefault(key(k), []).append(alphas_of(items))
    joined = {k: np.concatenate(v) for k, v in parts.items()}
    return {k: float(np.mean(v)) for k, v in sorted(joined.items()) if len(v)}


def by_image(values: dict[Hashable, ImageValues], image_ids, key=lambda k: k) -> dict:
    """``{key(k): {image id (str): α}}``: the per-image values :func:`mean_by_key` averages, kept so a
    panel can average them over a subset of the images (an image under two keys that ``key`` joins:
    their mean)."""
    ids = np.array([str(i) for i in image_ids], dtype=object)
    parts: dict = {}
    for k, items in values.items():
        parts.setdefault(key(k), []).append(items)
    out = {}
    for name, group in sorted(parts.items()):
        images = np.concatenate([g.images for g in group])
        alphas = np.concatenate([alphas_of(g) for g in group]).astype(float)
        if len(group) > 1:
            images, at = np.unique(images, return_inverse=True)
            alphas = np.bincount(at, alphas) / np.bincount(at)
        out[name] = dict(zip(ids[images].tolist(), alphas.tolist()))
    return out


def nested(pairs: dict[tuple[str, str], Any], rows: list[str], diagonal: Any = 1.0) -> dict[str, dict[str, Any]]:
    """A symmetric rater x rater table from values of pairs."""
    out: dict[str, dict[str, Any]] = {r: {} for r in rows}
    for (p, q), v in pairs.items():
        out[p][q] = v
        out[q][p] = v
    for r in rows:
        out[r][r] = diagonal
    return {r: dict(sorted(v.items())) for r, v in out.items()}


__all__ = ["ALPHA", "ChunkCells", "Diagnostic", "Emitter", "ImageContext", "RowRequest", "full_key", "rematch_key", "Reduction", "REGISTRY", "register_diagnostic",
           "get_diagnostic", "switches", "result_fields", "mean_by_key", "nested"]
