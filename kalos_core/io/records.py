"""Checks on the engine's records, whichever reader (or adapter) built them.

:func:`validate_dataset` is the one check every data set passes before it is
measured: image ids and sizes, annotation ids, raters, classes and the
geometry of each kind (finite, inside ``MAX_COORDINATE``, a positive area, a
consistent RLE, the same joint count within a keypoint class). The COCO and
YOLO readers call it; the FiftyOne adapter can call it on what it read.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ..data import Annotation, ImageRecord, MultiRaterDataset
from .cuboids import cuboid_problem
from .validation import InputWarnings, InvalidInputError, Problem, fatal
from .values import MAX_MASK_PIXELS, coordinate, coordinates, identifier, integer, side


def validate_dataset(ds: MultiRaterDataset, skip_invalid: bool = False, source: str = "input") -> MultiRaterDataset:
    """Check a data set; return it with bad items dropped (``skip_invalid``) or raise.

    Returns a new :class:`MultiRaterDataset` whose ``skipped`` lists the dropped
    items and whose ``warnings`` counts the coercions (e.g. a class id ``1.0``
    read as ``1``). Raises :class:`InvalidInputError` naming every bad
    image / annotation id unless ``skip_invalid``.
    """
    clean, problems = check_records(ds)
    if problems and not skip_invalid:
        raise InvalidInputError(problems, source)
    return clean


def check_records(ds: MultiRaterDataset) -> tuple[MultiRaterDataset, list[Problem]]:
    """``(data set without the bad items, problems)``; never raises for bad items."""
    problems: list[Problem] = []
    warn = InputWarnings(ds.warnings)
    seen_images: dict[str, Any] = {}
    seen_anns: dict[str, Any] = {}
    images: list[ImageRecord] = []
    for im in ds.images:
        p = _image_problem(im, seen_images)
        if p is None and ds.kind == "rle" and im.width * im.height > MAX_MASK_PIXELS:
            p = Problem(f"{im.width:g} x {im.height:g} pixels is too large a grid for masks "
                        f"(at most {MAX_MASK_PIXELS})", im.id)
        if p is not None:
            n = len(im.annotations)
            problems.append(dataclasses.replace(p, message=p.message + (f" ({n} annotation(s) dropped with it)"
                                                                        if n else "")))
            continue
        kept = []
        for a in im.annotations:
            a, msg = _annotation(a, im, ds, seen_anns, warn)
            if msg is not None:
                problems.append(Problem(msg, im.id, a.id, a.rater))
            else:
                kept.append(a)
        images.append(dataclasses.replace(im, annotations=kept))
    if ds.kind in ("polygon", "rle"):
        images = _drop(images, _zero_area_polygons(images, warn), problems)
    if ds.kind == "keypoints":
        images = _drop(images, _joint_count_outliers(images), problems)
    skipped = list(ds.skipped) + [p.to_dict() for p in problems]
    clean = MultiRaterDataset(images, dict(ds.categories), ds.kind, skipped=skipped, meta=dict(ds.meta),
                              warnings=warn.to_list())
    return clean, problems


def check_measurable(ds: MultiRaterDataset, source: str = "input") -> None:
    """Raise when there is nothing to measure: no image, or no image with two raters."""
    if not ds.images:
        raise fatal("no images: nothing to measure; give the images and each image's raters' labels", source)
    if not any(len(im.raters) >= 2 for im in ds.images):
        raters = ", ".join(ds.raters) or "none"
        raise fatal(f"none of the {len(ds.images)} image(s) has two or more raters (raters: {raters}): nothing to "
                    "measure; raters are compared on the images they share, so list two or more raters in some "
                    "image's rater_list", source)


def _image_problem(im: ImageRecord, seen: dict) -> Problem | None:
    err = identifier(im.id, "image id")
    if err:
        return Problem(err, image_id=repr(im.id))
    key = str(im.id)
    if key in seen:
        first = seen[key]
        how = "" if first == im.id else f" ({first!r} and {im.id!r} are the same id written two ways)"
        return Problem(f"duplicate image id{how}", im.id)
    seen[key] = im.id
    for what, v in (("width", im.width), ("height", im.height)):
        _, err = side(v, what)
        if err:
            return Problem(err, im.id)
    bad = [r for r in im.raters if not isinstance(r, str)]
    if bad:
        return Problem(f"rater names must be strings, got {bad[:3]!r}", im.id)
    return None


def _annotation(a: Annotation, im: ImageRecord, ds: MultiRaterDataset, seen: dict,
                warn: InputWarnings) -> tuple[Annotation, str | None]:
    err = identifier(a.id, "annotation id")
    if err:
        return a, err
    key = str(a.id)
    if key in seen:
        first = seen[key]
        how = "" if first == a.id else f" ({first!r} and {a.id!r} are the same id written two ways)"
        return a, f"duplicate annotation id{how}"
    seen[key] = a.id
    if a.rater not in im.raters:
        return a, f"rater is not in the image's rater_list {list(im.raters)}"
    cat, coerced, err = integer(a.category)
    if err:
        return a, f"category_id: {err}"
    if coerced:
        warn.add("category id written as a non-integer type read as an integer", f"annotation {a.id}")
        a = dataclasses.replace(a, category=cat)
    if ds.categories and cat not in ds.categories:
        return a, f"unknown category_id {a.category!r}"
    if ds.kind in ("polygon", "rle"):
        a = _without_short_rings(a, warn)
    check = _GEOMETRY_CHECKS.get(ds.kind)
    msg = check(a.geometry, im) if check else None
    return a, msg


def _without_short_rings(a: Annotation, warn: InputWarnings) -> Annotation:
    """Rings of fewer than 3 points enclose nothing: dropped (counted) when the annotation has other rings."""
    g = a.geometry
    if not isinstance(g, list) or len(g) < 2:
        return a
    keep = [r for r in g if not (isinstance(r, (list, tuple)) and len(r) < 6 and len(r) % 2 == 0)]
    if not keep or len(keep) == len(g):
        return a
    warn.add("polygon rings of fewer than 3 points left out (they enclose no area; the annotation keeps its "
             "other rings)", f"annotation {a.id}")
    return dataclasses.replace(a, geometry=keep)


def box_problem(box: Any, im: ImageRecord | None = None) -> str | None:
    """Why ``[x, y, w, h]`` is not a usable box (None if it is)."""
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        return f"bbox must be [x, y, w, h], got {box!r}"[:160]
    vals, _, err = coordinates(box)
    if err:
        return f"bbox has a non-finite value: {list(box)!r}" if "non-finite" in err else f"bbox: {err}"
    x, y, w, h = vals
    if w <= 0 or h <= 0:
        return f"bbox has non-positive size: {list(box)!r}"
    if im is not None and (w / im.width) * (h / im.height) <= 0:
        return f"bbox is too small to have an area: {list(box)!r}"
    return None


def polygon_problem(rings: Any, im: ImageRecord | None = None) -> str | None:
    """Why a list of flat rings is not a usable polygon (area is checked per image)."""
    if not isinstance(rings, list) or not rings:
        return "segmentation is missing or empty"
    for ring in rings:
        if not isinstance(ring, (list, tuple)) or len(ring) % 2 or len(ring) < 6:
            n = len(ring) // 2 if isinstance(ring, (list, tuple)) else "?"
            return f"polygon ring with fewer than 3 points ({n} given) or an odd number of coordinates"
        _, _, err = coordinates(ring)
        if err:
            return f"polygon: {err}"
    return None


def rle_problem(rle: Any, im: ImageRecord | None = None) -> str | None:
    """Why a COCO RLE dict is not a consistent mask (None if it is)."""
    if not isinstance(rle, dict) or "counts" not in rle or "size" not in rle:
        return "RLE segmentation needs 'counts' and 'size'"
    size = rle["size"]
    dims = [integer(v) for v in size] if isinstance(size, (list, tuple)) and len(size) == 2 else None
    if dims is None or any(err or v <= 0 for v, _, err in dims):
        return f"RLE size must be [height, width] of positive integers, got {size!r}"[:160]
    h, w = dims[0][0], dims[1][0]
    if h * w > MAX_MASK_PIXELS:
        return f"RLE size {h} x {w} exceeds {MAX_MASK_PIXELS} pixels"
    counts = rle["counts"]
    if isinstance(counts, (bytes, str)):
        counts = rle_string_counts(counts)
        if counts is None:
            return "RLE counts string is malformed"
    elif isinstance(counts, list):
        ints = [integer(v) for v in counts]
        if any(err or coerced or v < 0 for v, coerced, err in ints):
            return "RLE counts must be non-negative integers"
        counts = [v for v, _, _ in ints]
    else:
        return f"RLE counts must be a string or a list, got {type(counts).__name__}"
    if any(c < 0 for c in counts):
        return "RLE counts string decodes to negative run lengths"
    total = sum(counts)
    if total != h * w:
        return f"RLE counts cover {total} pixels, its size {h} x {w} has {h * w}"
    if not any(counts[1::2]):
        return "mask is empty (no pixel set): it has no area to compare"
    return None


def rle_string_counts(s: str | bytes) -> list[int] | None:
    """Run lengths of a compressed COCO RLE string (None if it is malformed)."""
    if isinstance(s, bytes):
        try:
            s = s.decode("ascii")
        except UnicodeDecodeError:
            return None
    counts: list[int] = []
    p = 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            if p >= len(s):
                return None
            c = ord(s[p]) - 48
            if not 0 <= c < 64:
                return None
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def keypoints_problem(kp: Any, im: ImageRecord | None = None) -> str | None:
    """Why a flat ``[x, y, v, ...]`` list is not a usable keypoint set."""
    if not isinstance(kp, (list, tuple)) or not kp or len(kp) % 3:
        return "keypoints must be a flat [x, y, v, ...] list"
    vals, _, err = coordinates(kp)
    if err:
        return f"keypoints: {err}"
    if any(v not in (0.0, 1.0, 2.0) for v in vals[2::3]):
        return "keypoint visibility flags must be 0, 1 or 2"
    return None


def mask_problem(geometry: Any, im: ImageRecord | None = None) -> str | None:
    """A mask data set holds RLE dicts, and polygons that are rasterised."""
    return polygon_problem(geometry, im) if isinstance(geometry, list) else rle_problem(geometry, im)


_GEOMETRY_CHECKS = {"box": box_problem, "polygon": polygon_problem, "rle": mask_problem,
                    "keypoints": keypoints_problem, "cuboids": cuboid_problem}


def _drop(images: list[ImageRecord], bad: dict[Any, str], problems: list[Problem]) -> list[ImageRecord]:
    """Remove the annotations whose ``id`` is in ``bad`` (id -> message), recording problems."""
    if not bad:
        return images
    out = []
    for im in images:
        keep = []
        for a in im.annotations:
            if a.id in bad:
                problems.append(Problem(bad[a.id], im.id, a.id, a.rater))
            else:
                keep.append(a)
        out.append(dataclasses.replace(im, annotations=keep) if len(keep) != len(im.annotations) else im)
    return out


def _zero_area_polygons(images: list[ImageRecord], warn: InputWarnings) -> dict[Any, str]:
    """Polygons with no area inside the image (refused); rings without area beside others (counted)."""
    import shapely

    from ..geometry.polygons import ring_polygons

    bad = {}
    for im in images:
        polys = [a for a in im.annotations if isinstance(a.geometry, list)]
        if not polys:
            continue
        rings, owner = ring_polygons(im, polys)
        empty = ~(shapely.area(rings) > 0)
        some = np.bincount(owner[~empty], minlength=len(polys)) > 0
        for a in (polys[k] for k in np.flatnonzero(~some)):
            bad[a.id] = ("polygon has no area inside the image (its points are collinear or repeated, or it lies "
                         "outside the image)")
        for k in np.unique(owner[empty]):
            if some[k]:
                warn.add("polygon rings without area inside the image left out (collinear or repeated points, or "
                         "outside the image; the annotation keeps its other rings)", f"annotation {polys[k].id}")
    return bad


def _joint_count_outliers(images: list[ImageRecord]) -> dict[Any, str]:
    """Keypoint sets whose joint count differs from the rest of their class."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for im in images:
        for a in im.annotations:
            counts[a.category][len(a.geometry) // 3] += 1
    usual = {c: cnt.most_common(1)[0][0] for c, cnt in counts.items() if len(cnt) > 1}
    bad = {}
    for im in images:
        for a in im.annotations:
            n = len(a.geometry) // 3
            if a.category in usual and n != usual[a.category]:
                bad[a.id] = (f"has {n} keypoints; the other annotations of category {a.category} have "
                             f"{usual[a.category]} (sets of different skeletons cannot be compared)")
    return bad


__all__ = ["box_problem", "check_measurable", "check_records", "keypoints_problem", "polygon_problem",
           "rle_problem", "rle_string_counts", "validate_dataset", "coordinate"]
