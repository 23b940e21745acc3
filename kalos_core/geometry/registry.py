"""Registry of distance functions.

A distance is registered once, for one geometry kind, as a pair of plain
functions: ``prepare`` turns an image's annotations into arrays (image-relative
coordinates, so that annotations of *different* images can be compared, as
calibration needs), and ``similarity`` returns the pairwise similarity matrix
``s`` in ``[0, 1]`` between two prepared sets; the distance is ``1 - s``.

Adding a distance is one decorated function::

    @register_distance("box", "my_iou", prepare=prepare_boxes)
    def my_iou(a, b, need=None, floor=0.0): ...
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..data import Annotation, ImageRecord


class Prepared:
    """Vectorised geometry of ``n`` annotations: named arrays of equal length."""

    def __init__(self, n: int, **arrays: np.ndarray) -> None:
        self.n = int(n)
        self.arrays = arrays
        for key, arr in arrays.items():
            if len(arr) != self.n:
                raise ValueError(f"array {key!r} has length {len(arr)}, expected {self.n}")

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def __len__(self) -> int:
        return self.n

    def take(self, index: Sequence[int] | np.ndarray) -> "Prepared":
        """The subset at ``index`` (a new object; arrays are fancy-indexed)."""
        index = np.asarray(index, dtype=np.intp)
        return Prepared(len(index), **{k: take_rows(v, index) for k, v in self.arrays.items()})

    def derived(self, key: str, fn: Callable[["Prepared"], tuple]) -> tuple:
        """``fn(self)``, a tuple of arrays whose row k depends on annotation k alone, computed once
        (a :meth:`take_on_use` subset takes the rows of its base's, computed once for all subsets)."""
        cache = self.__dict__.setdefault("_derived", {})
        if key not in cache:
            cache[key] = fn(self)
            if any(v.ndim == 2 and v.flags.f_contiguous and not v.flags.c_contiguous for v in self.arrays.values()):
                cache[key] = tuple(columnar(v) for v in cache[key])     # as columnar as the arrays it comes from
        return cache[key]

    def paired(self, other: "Prepared", key: str, fn: Callable[[], object]):
        """``fn()``, a result over the pairs ``(self[k], other[k])``: a :meth:`take_on_use` subset keeps it
        (the latest ``other`` per ``key``) for the other distances of the same pairs (calibration computes
        the distances of a block of pairs together; GIoU and IoU share intersections and unions)."""
        return fn()

    def has_paired(self, other: "Prepared", key: str) -> bool:
        return False

    def take_on_use(self, index: np.ndarray) -> "Prepared":
        """:meth:`take`, each array indexed only when it is read (pair lists of millions of rows
        where a distance reads one of the arrays)."""
        return _TakenOnUse(self, np.asarray(index, dtype=np.intp))

    def take_repeated(self, index: np.ndarray, repeat: int) -> "Prepared":
        """:meth:`take_on_use` of ``np.repeat(index, repeat)``: each row gathered once, then repeated."""
        return _Repeated(self, np.asarray(index, dtype=np.intp), repeat)

    def take_group_rows(self, groups: "GroupRows", index: np.ndarray) -> "Prepared":
        """:meth:`take_on_use` of ``groups.cells[index].ravel()``: the rows of whole groups of one size, each
        group's rows copied as one block from a table (``groups.of``) instead of gathered one by one."""
        return _GroupRowsTaken(self, groups, np.asarray(index, dtype=np.intp))


class _TakenOnUse(Prepared):
    def __init__(self, base: Prepared, index: np.ndarray) -> None:
        self.n, self._base, self._index, self._taken = len(index), base, index, {}

    def _gather(self, values: np.ndarray) -> np.ndarray:
        return take_rows(values, self._index)

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._taken:
            self._taken[key] = self._gather(self._base[key])
        return self._taken[key]

    @property
    def arrays(self) -> dict:
        return {k: self[k] for k in self._base.arrays}

    def paired(self, other: Prepared, key: str, fn: Callable[[], object]):
        if not self.has_paired(other, key):
            self._taken[("paired", key)] = (other, fn())    # holding ``other``: its id is not reused meanwhile
        return self._taken[("paired", key)][1]

    def has_paired(self, other: Prepared, key: str) -> bool:
        return self._taken.get(("paired", key), (None,))[0] is other

    def derived(self, key: str, fn: Callable[["Prepared"], tuple]) -> tuple:
        if ("derived", key) not in self._taken:
            self._taken[("derived", key)] = tuple(self._gather(v) for v in self._base.derived(key, fn))
        return self._taken[("derived", key)]


class _Repeated(_TakenOnUse):
    def __init__(self, base: Prepared, index: np.ndarray, repeat: int) -> None:
        super().__init__(base, index)
        self.n, self._repeat = len(index) * repeat, repeat

    def _gather(self, values: np.ndarray) -> np.ndarray:
        if _is_columnar(values):
            return np.repeat(np.take(values.T, self._index, axis=1), self._repeat, axis=1).T
        return np.repeat(np.take(values, self._index, axis=0), self._repeat, axis=0)


class GroupRows:
    """Groups of ``k`` rows each, ``cells`` ``(n_groups, k)`` row indices, and each array's rows laid out as one
    table row per group (made on first use; the arrays must outlive it: it keeps them)."""

    def __init__(self, cells: np.ndarray) -> None:
        self.cells, self._tables = np.asarray(cells, dtype=np.intp), {}

    def of(self, values: np.ndarray) -> np.ndarray:
        """``values``' rows per group: ``(n_groups, k, ...)``, or ``(columns, n_groups, k)`` for a columnar array."""
        if id(values) not in self._tables:
            table = np.take(values.T, self.cells, axis=1) if _is_columnar(values) else np.take(values, self.cells, 0)
            self._tables[id(values)] = (values, table)
        return self._tables[id(values)][1]


class _GroupRowsTaken(_TakenOnUse):
    def __init__(self, base: Prepared, groups: GroupRows, index: np.ndarray) -> None:
        super().__init__(base, index)
        self.n, self._groups = len(index) * groups.cells.shape[1], groups

    def _gather(self, values: np.ndarray) -> np.ndarray:
        table = self._groups.of(values)
        if _is_columnar(values):
            return np.take(table, self._index, axis=1).reshape(len(table), -1).T
        return np.take(table, self._index, axis=0).reshape((-1,) + table.shape[2:])


def take_rows(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` (``np.take`` along the first axis: the same rows, several times faster on 2D arrays);
    a column-major 2D array (:func:`columnar`) gives column-major rows."""
    if _is_columnar(values):
        return np.take(values.T, index, axis=1).T
    return np.take(values, index, axis=0)


def _is_columnar(values: np.ndarray) -> bool:
    return values.ndim == 2 and values.flags.f_contiguous and not values.flags.c_contiguous


def columnar(values: np.ndarray) -> np.ndarray:
    """``values`` with each column contiguous (2D: Fortran order), the same values: formulas over pairs of
    rows that read one column of every pair at a time (``A[..., 2]``) run about twice as fast."""
    return np.asfortranarray(values) if values.ndim == 2 else values


PrepareFn = Callable[["ImageRecord", Sequence["Annotation"]], Prepared]
#: ``similarity(a, b, need=None, floor=0.0) -> (len(a), len(b))`` array.
#: ``need`` (bool matrix) marks the entries the caller uses; others may be 0.
#: Entries whose similarity is provably below ``floor`` may be returned as 0.
SimilarityFn = Callable[..., np.ndarray]


@dataclass(frozen=True)
class DistanceSpec:
    kind: str
    name: str
    prepare: PrepareFn
    similarity: SimilarityFn
    description: str = ""
    #: False when the distance depends on the object's size relative to the image
    #: (e.g. a centroid offset over the image diagonal): the same pixel offset is a
    #: small error on a large object and a miss on a small one
    scale_invariant: bool = True
    #: optional ``pairs(a, b) -> (n,)``: the similarity of ``a[k]`` and ``b[k]`` for equal-length
    #: prepared sets, equal to the matrix entries (lets the map step of a chunk of images
    #: compute only the pairs it needs, :mod:`kalos_core.agreement.chunk_kernel`)
    #: it must be symmetric bit for bit, ``pairs(a, b) == pairs(b, a)`` (calibration's Do computes each pair once)
    pairs: Callable[[Prepared, Prepared], np.ndarray] | None = None
    #: the similarity never exceeds the boxes' IoU, so a pair at similarity >= t > 0 overlaps
    #: along x by at least t times the wider box's width (the map step of a chunk skips the rest)
    at_most_iou: bool = False
    #: the similarity threshold to start from when no calibration says otherwise
    default_threshold: float = 0.5
    #: optional ``(key(a, b) -> (n,), similarity(keys) -> (n,))`` with ``pairs(a, b) == similarity(key(a, b))``
    #: bit for bit, ``key`` symmetric and ``similarity`` non-decreasing: the most similar of many pairs is the
    #: similarity of the largest key (calibration's nearest neighbours apply ``similarity`` once per observation)
    nearest_key: tuple[Callable, Callable] | None = None


DISTANCES: dict[tuple[str, str], DistanceSpec] = {}
#: the distance used when none is named, per geometry kind
DEFAULT_DISTANCE: dict[str, str] = {
    "box": "iou",
    "polygon": "iou",
    "rle": "iou",
    "keypoints": "mpjpe",
    "voxels": "iou",
    "cuboids": "iou3d",
}


def register_distance(kind: str, name: str, *, prepare: PrepareFn, description: str = "",
                      scale_invariant: bool = True, pairs=None, at_most_iou: bool = False,
                      default_threshold: float = 0.5, nearest_key: tuple[Callable, Callable] | None = None):
    """Decorator: register ``similarity`` as distance ``name`` for ``kind``."""

    def deco(fn: SimilarityFn) -> SimilarityFn:
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        DISTANCES[(kind, name)] = DistanceSpec(kind, name, prepare, fn, doc, scale_invariant, pairs, at_most_iou,
                                               default_threshold, nearest_key)
        return fn

    return deco


def default_threshold(kind: str, name: str | None = None) -> float:
    """The standard similarity threshold of a distance (``name=None``: the kind's default
    distance); 0.5 for a name not registered for ``kind``."""
    spec = DISTANCES.get((kind, name or DEFAULT_DISTANCE.get(kind)))
    return spec.default_threshold if spec else 0.5


def get_distance(kind: str, name: str | None = None, **options) -> DistanceSpec:
    """Look up a registered distance; ``name=None`` gives the kind's default.

    ``options`` are keyword parameters of its similarity function (e.g. ``sigmas`` of OKS),
    bound into the returned spec; a name the function does not take is an error.
    """
    name = name or DEFAULT_DISTANCE[kind]
    try:
        spec = DISTANCES[(kind, name)]
    except KeyError:
        known = sorted(n for k, n in DISTANCES if k == kind)
        other = sorted(k for k, n in DISTANCES if n == name)
        why = f" ({name!r} is a distance for {' and '.join(other)} geometry)" if other else ""
        raise ValueError(f"unknown distance {name!r} for {kind} geometry{why}; known: {', '.join(known)}") from None
    if not options:
        return spec
    takes = set(inspect.signature(spec.similarity).parameters) - {"a", "b", "need", "floor"}
    unknown = sorted(set(options) - takes)
    if unknown:
        raise ValueError(f"distance {name!r} takes no option {', '.join(map(repr, unknown))}"
                         + (f" (it takes {', '.join(sorted(takes))})" if takes else ""))
    return replace(spec, similarity=functools.partial(spec.similarity, **options), pairs=None)


def distances_for(kind: str) -> list[str]:
    """Names of the distances registered for a geometry kind."""
    return sorted(n for k, n in DISTANCES if k == kind)


# Box formulas are written once, element by element over broadcastable ``(..., 4)`` arrays of
# ``(x1, y1, x2, y2)``: ``f(A[:, None], B[None, :])`` is the pairwise matrix, ``f(A, B)`` the
# similarity of ``A[k]`` and ``B[k]`` (the same floating-point operations, so equal values).
def paired_overlap_sides(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed width and height of the intersections of broadcast box pairs (<= 0: disjoint)."""
    iw = np.minimum(A[..., 2], B[..., 2]) - np.maximum(A[..., 0], B[..., 0])
    ih = np.minimum(A[..., 3], B[..., 3]) - np.maximum(A[..., 1], B[..., 1])
    return iw, ih


def paired_intersection_union(A: np.ndarray, B: np.ndarray, area_a: np.ndarray | None = None,
                              area_b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Intersection and union areas of broadcast box pairs (``area_a``, ``area_b``: the boxes' :func:`box_areas`,
    if already known)."""
    iw, ih = paired_overlap_sides(A, B)
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area_a = box_areas(A) if area_a is None else area_a
    area_b = box_areas(B) if area_b is None else area_b
    return inter, area_a + area_b - inter


def box_areas(A: np.ndarray) -> np.ndarray:
    """``(x2 - x1) * (y2 - y1)`` of ``(..., 4)`` boxes."""
    return (A[..., 2] - A[..., 0]) * (A[..., 3] - A[..., 1])


def paired_iou(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """IoU of broadcast box pairs (0 where the union is empty)."""
    return iou_of(*paired_intersection_union(A, B))


def iou_of(inter: np.ndarray, union: np.ndarray) -> np.ndarray:
    """``inter / union``, 0 where the union is empty."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def box_overlap_sides(a_xyxy: np.ndarray, b_xyxy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed width and height of every pair's box intersection, ``(na, nb)`` each (<= 0: disjoint)."""
    return paired_overlap_sides(a_xyxy[:, None, :], b_xyxy[None, :, :])


def boxes_overlap(a_xyxy: np.ndarray, b_xyxy: np.ndarray) -> np.ndarray:
    """Boolean ``(na, nb)`` matrix: do the (closed) boxes intersect with positive area?"""
    iw, ih = box_overlap_sides(a_xyxy, b_xyxy)
    return (iw > 0) & (ih > 0)


def box_intersection_union(a_xyxy: np.ndarray, b_xyxy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise intersection and union areas of two sets of ``(x1, y1, x2, y2)`` boxes."""
    return paired_intersection_union(a_xyxy[:, None, :], b_xyxy[None, :, :])


def box_iou_xyxy(a_xyxy: np.ndarray, b_xyxy: np.ndarray) -> np.ndarray:
    """Pairwise IoU of ``(x1, y1, x2, y2)`` boxes (0 where the union is empty)."""
    return paired_iou(a_xyxy[:, None, :], b_xyxy[None, :, :])


def pixel_scale(image: ImageRecord, n: int) -> np.ndarray:
    """``(n, 2)`` array of the image's pixel width and height, one row per annotation.

    Geometry is stored image-relative; a distance defined in pixels (such as
    ``centroid_box``) multiplies back by this, also for cross-image pairs.
    """
    return np.tile(np.array([image.width, image.height], dtype=float), (n, 1))


def box_centre_area_diagonal(xyxy: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel centre ``(n, 2)``, area and diagonal of image-relative boxes with their images' pixel sizes."""
    p = xyxy * np.concatenate([scale, scale], axis=-1)
    w = p[..., 2:] - p[..., :2]
    return (p[..., :2] + p[..., 2:]) / 2.0, w[..., 0] * w[..., 1], np.hypot(w[..., 0], w[..., 1])


def _squared_norm(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """``((ca - cb) ** 2).sum(-1)`` of broadcast 2D points ``(..., 2)``, the same bits (``dx*dx + dy*dy``:
    the sum of two terms is one addition) without numpy's slow reduction over a length-2 axis."""
    dx, dy = ca[..., 0] - cb[..., 0], ca[..., 1] - cb[..., 1]
    return dx * dx + dy * dy


def paired_centroid_box_similarity(ca, area_a, diag_a, cb, area_b, diag_b) -> np.ndarray:
    """``1 - L2(centres) / diagonal of the larger box``, in pixels, clipped to ``[0, 1]``, of broadcast
    pairs of boxes given by :func:`box_centre_area_diagonal` (centres ``(..., 2)``).

    The published implementation's scale-invariant centroid distance: the boxes'
    centres, compared in pixels, over the diagonal of the box with the larger
    area. Equal areas take the longer diagonal (symmetric); a larger box of zero
    area gives similarity 0.
    """
    return centroid_box_similarity_of_key(centroid_box_key(ca, area_a, diag_a, cb, area_b, diag_b))


def centroid_box_key(ca, area_a, diag_a, cb, area_b, diag_b) -> np.ndarray:
    """:func:`paired_centroid_box_similarity` before its clip to ``[0, 1]`` (:attr:`DistanceSpec.nearest_key`:
    the clip is non-decreasing, so the most similar pair's is the clip of the largest key). The larger box's
    diagonal is positive wherever its area is (``w * h > 0`` needs ``w != 0``), so the area alone decides."""
    norm = np.where(area_a > area_b, diag_a, np.where(area_b > area_a, diag_b, np.maximum(diag_a, diag_b)))
    dist = np.sqrt(_squared_norm(ca, cb))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.maximum(area_a, area_b) > 0, 1.0 - dist / norm, 0.0)


def centroid_box_similarity_of_key(key: np.ndarray) -> np.ndarray:
    """:func:`paired_centroid_box_similarity` from :func:`centroid_box_key`."""
    return np.clip(key, 0.0, 1.0)


def centroid_box_similarity(a_xyxy: np.ndarray, a_scale: np.ndarray,
                            b_xyxy: np.ndarray, b_scale: np.ndarray) -> np.ndarray:
    """Pairwise :func:`paired_centroid_box_similarity`, ``(na, nb)``."""
    a = [v[:, None] for v in box_centre_area_diagonal(a_xyxy, a_scale)]
    b = [v[None] for v in box_centre_area_diagonal(b_xyxy, b_scale)]
    return paired_centroid_box_similarity(*a, *b)


def _centre_area_diagonal(p: Prepared) -> tuple:
    return box_centre_area_diagonal(p["xyxy"], p["scale"])


def centroid_box_pairs(a: Prepared, b: Prepared) -> np.ndarray:
    """:func:`paired_centroid_box_similarity` of ``a[k]`` and ``b[k]`` (arrays ``xyxy``, ``scale``)."""
    return centroid_box_similarity_of_key(centroid_box_keys(a, b))


def centroid_box_keys(a: Prepared, b: Prepared) -> np.ndarray:
    """:func:`centroid_box_key` of ``a[k]`` and ``b[k]`` (arrays ``xyxy``, ``scale``)."""
    return centroid_box_key(*a.derived("centre_area_diagonal", _centre_area_diagonal),
                            *b.derived("centre_area_diagonal", _centre_area_diagonal))


#: :attr:`DistanceSpec.nearest_key` of the ``centroid_box`` distances of boxes and polygons
CENTROID_BOX_NEAREST = (centroid_box_keys, centroid_box_similarity_of_key)


def paired_centroid_similarity(CA: np.ndarray, CB: np.ndarray) -> np.ndarray:
    """``1 - L2 / sqrt(2)`` between broadcast image-relative centroids ``(..., 2)`` (the unit square's diagonal)."""
    return centroid_similarity_of_key(centroid_key(CA, CB))


def centroid_key(CA: np.ndarray, CB: np.ndarray) -> np.ndarray:
    """``-L2²`` of broadcast centroids: the larger, the more similar (:attr:`DistanceSpec.nearest_key`)."""
    return -_squared_norm(CA, CB)


def centroid_similarity_of_key(key: np.ndarray) -> np.ndarray:
    """:func:`paired_centroid_similarity` from :func:`centroid_key` (``-(-x)`` is ``x``: the same bits)."""
    d = np.sqrt(-key) / np.sqrt(2.0)
    return np.clip(1.0 - d, 0.0, 1.0)


def centroid_similarity(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """Pairwise :func:`paired_centroid_similarity`, ``(na, nb)``."""
    return paired_centroid_similarity(ca[:, None, :], cb[None, :, :])


def centroid_pairs(a: Prepared, b: Prepared) -> np.ndarray:
    """:func:`paired_centroid_similarity` of ``a[k]`` and ``b[k]`` (array ``centroid``)."""
    return paired_centroid_similarity(a["centroid"], b["centroid"])


def centroid_keys(a: Prepared, b: Prepared) -> np.ndarray:
    """:func:`centroid_key` of ``a[k]`` and ``b[k]`` (array ``centroid``)."""
    return centroid_key(a["centroid"], b["centroid"])


#: :attr:`DistanceSpec.nearest_key` of the centroid distances of polygons and masks
CENTROID_NEAREST = (centroid_keys, centroid_similarity_of_key)
