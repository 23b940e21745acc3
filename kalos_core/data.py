"""The data model: images, assigned raters, sessions and annotations.

Everything that crosses a module boundary is a small dataclass. Geometry is
kept in the form the input gave it (pixel coordinates); the distance
functions in :mod:`kalos_core.geometry` turn it into vectorised arrays.

Conventions (docs/method.md §1)
-------------------------------
* An image's ``raters`` are the *rows* of its reliability matrix: the assigned
  raters, or rater-sessions such as ``"alice (S1)"`` when a rater labelled the
  image more than once. An assigned rater who drew nothing still takes part.
* ``rater_classes`` (optional, open world) restricts a rater to a subset of
  category ids; for other classes the rater's cells are missing data.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

#: Geometry kinds understood by the engine (``classmap``: per-rater class maps, :mod:`kalos_core.masks`;
#: its images carry no annotations).
GEOMETRY_KINDS = ("box", "polygon", "rle", "keypoints", "voxels", "cuboids", "classmap")
#: COCO task name (the CLI's ``--task``) -> the geometry kind it is read as
TASK_KINDS = {"bbox": "box", "segm": "polygon", "keypoints": "keypoints", "cuboids": "cuboids"}
#: geometry kind -> the task it belongs to (RLE masks are segmentations; voxels are their own task)
KIND_TASKS = {"box": "bbox", "polygon": "segm", "rle": "segm", "keypoints": "keypoints", "voxels": "voxels",
              "cuboids": "cuboids", "classmap": "masks"}


def session_row(rater: str, session: Any) -> str:
    """Name of the reliability-matrix row for one session of a rater."""
    return f"{rater} (S{session})"


@dataclass(frozen=True)
class Annotation:
    """One rater's label of one object.

    Attributes
    ----------
    id : annotation id (unique within the data set; int or str).
    rater : the row it belongs to (a rater, or a rater-session row name).
    category : category id (int).
    geometry : kind-specific payload in pixel coordinates:
        ``box`` -> ``(x, y, w, h)``; ``polygon`` -> list of flat rings
        ``[[x1, y1, x2, y2, ...], ...]``; ``rle`` -> COCO RLE dict;
        ``keypoints`` -> flat ``[x1, y1, v1, ...]``; ``voxels`` -> ``(N, 3)``
        integer voxel coordinates; ``cuboids`` -> ``(x, y, z, dx, dy, dz, rx,
        ry, rz)``: FiftyOne's 3D ``location`` (centre), ``dimensions`` and
        ``rotation`` (Euler angles in radians, scene units, see
        :mod:`kalos_core.geometry.cuboids`).
    bbox : ``(x, y, w, h)`` in pixels (for polygons/masks/keypoints too, where
        known); used for size strata and fast pre-filtering.
    score : confidence of a model's prediction (None for human labels); used by
        score-weighted consensus fusion.
    """

    id: Any
    rater: str
    category: int
    geometry: Any
    bbox: tuple | None = None
    score: float | None = None


@dataclass
class ImageRecord:
    """One image (scene, volume, frame) with its assigned raters.

    ``annotations`` is a list of :class:`Annotation`, or (boxes read column-wise) a
    :class:`kalos_core.columns.AnnotationColumns`: a read-only sequence of the same items.
    """

    id: Any
    width: float
    height: float
    raters: tuple[str, ...]
    annotations: list[Annotation] = field(default_factory=list)
    rater_classes: Mapping[str, frozenset] | None = None
    file_name: str | None = None
    #: base rater of each row (``"alice (S1)" -> "alice"``); rows map to themselves by default
    row_rater: Mapping[str, str] | None = None

    def base_rater(self, row: str) -> str:
        if self.row_rater is None:
            return row
        return self.row_rater.get(row, row)


@dataclass
class MultiRaterDataset:
    """A multi-rater data set: images, category names, geometry kind."""

    images: list[ImageRecord]
    categories: dict[int, str]
    kind: str
    #: annotations dropped by ``skip_invalid`` (see :mod:`kalos_core.io`)
    skipped: list[dict] = field(default_factory=list)
    #: keypoint names / sigmas and other per-kind metadata
    meta: dict = field(default_factory=dict)
    #: coercions applied while reading: ``[{"message", "count", "examples"}]`` (docs/input.md)
    warnings: list[dict] = field(default_factory=list)

    @property
    def n_annotations(self) -> int:
        return sum(len(im.annotations) for im in self.images)

    @property
    def raters(self) -> list[str]:
        seen: dict[str, None] = {}
        for im in self.images:
            for r in im.raters:
                seen.setdefault(r, None)
        return sorted(seen)

    def check_raters(self, names, what: str = "raters", at_least: int = 0) -> list[str]:
        """``names`` (a rater or a list of them) as a list; ``ValueError`` naming ``what`` when one is
        no rater of the data set (listing those there are) or when fewer than ``at_least`` remain."""
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in self.raters]
        known = ", ".join(self.raters) or "none"
        if unknown:
            verb = "is not a rater" if len(unknown) == 1 else "are not raters"
            raise ValueError(f"{what}: {', '.join(map(repr, unknown))} {verb} of the data; its raters are: {known}")
        if len(set(names)) < at_least:
            raise ValueError(f"{what}: need at least {at_least} distinct raters, got {len(set(names))} "
                             f"({', '.join(names) or 'none'}); the data's raters are: {known}")
        return names

    def __post_init__(self) -> None:
        if self.kind not in GEOMETRY_KINDS:
            raise ValueError(f"unknown geometry kind {self.kind!r}; expected one of {GEOMETRY_KINDS}")


def make_image(
    image_id: Any,
    width: float,
    height: float,
    raters: Sequence[str],
    annotations: Sequence[Annotation] = (),
    **kwargs: Any,
) -> ImageRecord:
    """Convenience constructor used by tests and notebooks."""
    return ImageRecord(image_id, float(width), float(height), tuple(raters), list(annotations), **kwargs)


def order_key(value: Any) -> tuple:
    """Sort key of an image or annotation id: numbers by value, before anything else by its text."""
    return (0, value, "") if isinstance(value, numbers.Real) else (1, 0, str(value))


def in_canonical_order(dataset: MultiRaterDataset) -> MultiRaterDataset:
    """The same data set with the images sorted by id, each image's rows by name and its annotations
    by (row, id): seeded draws that walk it do not depend on the order of the input file."""
    images = []
    for im in sorted(dataset.images, key=lambda im: order_key(im.id)):
        rows = tuple(sorted(im.raters))
        at = {r: k for k, r in enumerate(rows)}
        anns = _columns_in_order(im.annotations, at)
        if anns is None:
            anns = sorted(im.annotations, key=lambda a: (at.get(a.rater, len(rows)), order_key(a.id)))
        images.append(replace(im, raters=rows, annotations=anns))
    return replace(dataset, images=images, warnings=list(dataset.warnings))


def _columns_in_order(anns, at: dict):
    """Columnar annotations (:class:`kalos_core.columns.AnnotationColumns`) with integer ids sorted by
    (row, id) as :func:`in_canonical_order` sorts them, still as columns; None for anything else."""
    ids = getattr(anns, "ids", None)
    if ids is None or set(map(type, ids)) - {int}:
        return None
    try:
        key = np.array(ids, np.int64)
    except OverflowError:
        return None
    order = np.lexsort((key, row_positions(anns, at)))
    if (order[1:] > order[:-1]).all():      # already in that order (columns are read-only): the same columns
        return anns
    return anns.take(order)


def row_positions(anns: Sequence[Annotation], at: Mapping[str, int]) -> np.ndarray:
    """``at[rater]`` of each annotation (``len(at)`` for a rater not in ``at``); columnar annotations
    (:class:`kalos_core.columns.AnnotationColumns`) are read without making an object each."""
    names = getattr(anns, "names", None)
    if names is not None:
        return np.array([at.get(name, len(at)) for name in names], np.int64)[anns.rater]
    return np.array([at.get(a.rater, len(at)) for a in anns], np.int64)
