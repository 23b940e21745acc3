"""Polygons (instance segmentation): exact IoU, GIoU and centroid with shapely 2.

Each annotation's rings are built in image-relative coordinates as the regions
COCO's rasteriser fills (:func:`ring_polygons`: self-intersections repaired with
``make_valid``, clipped to the image), and several rings of one annotation are
merged by their union (the convention of the published implementation).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from ..lazy import LazyModule
from .registry import (CENTROID_BOX_NEAREST, CENTROID_NEAREST, Prepared, box_overlap_sides, boxes_overlap,
                       centroid_box_pairs, centroid_box_similarity, centroid_pairs, centroid_similarity, pixel_scale,
                       register_distance)

shapely = LazyModule("shapely")   # imported on first use: box-only runs never pay for it
_AREAL = (3, 6)   # shapely type ids of Polygon and MultiPolygon


def _areal(geom):
    """The polygonal part of a repaired geometry (``make_valid`` keeps collapsed spikes as lines)."""
    if shapely.get_type_id(geom) in _AREAL:
        return geom
    parts = [p for p in shapely.get_parts(shapely.get_parts(geom)) if shapely.get_type_id(p) in _AREAL]
    return shapely.union_all(parts) if parts else shapely.Polygon()


def ring_polygons(image: ImageRecord, anns: Sequence[Annotation]) -> tuple[np.ndarray, np.ndarray]:
    """``(polygons, owner)``: each ring of each annotation as the region COCO's rasteriser fills.

    Image-relative coordinates. A self-intersecting ring (a bow-tie, a loop) is repaired with
    ``make_valid``, whose even-odd regions are the pixels pycocotools fills (``buffer(0)`` would
    keep one lobe of a bow-tie); collapsed parts (lines) are dropped; a ring reaching outside
    the image is clipped to it, as a mask is. Rings of fewer than 3 points enclose nothing and
    are left out (docs/input.md).
    """
    coords, ring_index, owner = [], [], []
    for k, ann in enumerate(anns):
        for flat in ann.geometry:
            if len(flat) >= 6:
                xy = np.asarray(flat, dtype=float).reshape(-1, 2)
                coords.append(xy)
                ring_index.append(np.full(len(xy), len(owner)))
                owner.append(k)
    if not owner:
        return np.empty(0, dtype=object), np.empty(0, dtype=int)
    xy = np.concatenate(coords) / np.array([image.width, image.height])
    polys = shapely.polygons(shapely.linearrings(xy, indices=np.concatenate(ring_index)))
    bad = np.flatnonzero(~shapely.is_valid(polys))
    for i, g in zip(bad, shapely.make_valid(polys[bad])):
        polys[i] = _areal(g)
    b = shapely.bounds(polys)
    out = np.flatnonzero((b[:, 0] < 0) | (b[:, 1] < 0) | (b[:, 2] > 1) | (b[:, 3] > 1))
    if len(out):
        polys[out] = shapely.intersection(polys[out], shapely.box(0.0, 0.0, 1.0, 1.0))
    return polys, np.asarray(owner)


def _build_geometries(image: ImageRecord, anns: Sequence[Annotation]) -> np.ndarray:
    """One geometry per annotation: the union of its rings (an empty polygon when it has none)."""
    polys, owner = ring_polygons(image, anns)
    geoms = np.full(len(anns), shapely.Polygon(), dtype=object)
    counts = np.bincount(owner, minlength=len(anns))
    single = counts == 1
    geoms[owner[single[owner]]] = polys[single[owner]]
    for k in np.flatnonzero(counts > 1):
        geoms[k] = shapely.union_all(polys[owner == k])
    return geoms


def prepare_polygons(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """Shapely geometries with their areas, bounds, centroids and the image's pixel size."""
    geoms = _build_geometries(image, anns)
    if len(anns) == 0:
        empty = np.empty(0)
        return Prepared(0, geom=geoms, area=empty, xyxy=empty.reshape(0, 4), centroid=empty.reshape(0, 2),
                        scale=empty.reshape(0, 2))
    area = shapely.area(geoms)
    xyxy = shapely.bounds(geoms)
    cent = shapely.get_coordinates(shapely.centroid(geoms)).reshape(-1, 2)
    return Prepared(len(anns), geom=geoms, area=area, xyxy=xyxy, centroid=cent, scale=pixel_scale(image, len(anns)))


def _intersection_areas(a: Prepared, b: Prepared, need, floor: float):
    """Intersection areas for the pairs that can reach ``floor`` (others 0)."""
    inter = np.zeros((len(a), len(b)))
    cand = boxes_overlap(a["xyxy"], b["xyxy"])
    if need is not None:
        cand &= need
    if floor > 0:
        # IoU <= area(box intersection) / max(area_a, area_b)
        iw, ih = box_overlap_sides(a["xyxy"], b["xyxy"])
        big = np.maximum(a["area"][:, None], b["area"][None, :])
        with np.errstate(divide="ignore", invalid="ignore"):
            cand &= (iw * ih) >= floor * big * (1 - 1e-9)
    i, j = np.nonzero(cand)
    if len(i):
        inter[i, j] = shapely.area(shapely.intersection(a["geom"][i], b["geom"][j]))
    return inter


def _iou_from_intersection(a: Prepared, b: Prepared, inter: np.ndarray) -> np.ndarray:
    union = a["area"][:, None] + b["area"][None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((union > 0) & (inter > 0), inter / union, 0.0)


@register_distance("polygon", "iou", prepare=prepare_polygons)
def polygon_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Exact polygon intersection over union."""
    return _iou_from_intersection(a, b, _intersection_areas(a, b, need, floor))


def prepare_polygons_with_hulls(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """:func:`prepare_polygons` plus each shape's convex-hull vertices (for GIoU)."""
    p = prepare_polygons(image, anns)
    hulls = np.empty(len(p), dtype=object)
    if len(p):
        xy, owner = shapely.get_coordinates(shapely.convex_hull(p["geom"]), return_index=True)
        for k, h in enumerate(np.split(xy, np.searchsorted(owner, np.arange(1, len(p))))):
            hulls[k] = h
    return Prepared(len(p), hull=hulls, **p.arrays)


def _pair_hull_areas(ha: np.ndarray, hb: np.ndarray) -> np.ndarray:
    """Area of the convex hull of each pair's union, from the shapes' hull vertices.

    hull(A ∪ B) = hull(hull(A) ∪ hull(B)): one vectorised hull of the pair's vertices
    instead of a polygon union per pair (several times faster on detailed outlines).
    """
    ca = np.fromiter((len(h) for h in ha), int, len(ha))
    cb = np.fromiter((len(h) for h in hb), int, len(hb))
    out = np.zeros(len(ha))
    ok = (ca + cb) >= 2  # a linestring needs two points; fewer: the hull has no area
    if not ok.any():
        return out
    pairs = np.flatnonzero(ok)
    pts = np.concatenate([np.concatenate(list(ha[ok])).reshape(-1, 2), np.concatenate(list(hb[ok])).reshape(-1, 2)])
    owner = np.concatenate([np.repeat(np.arange(len(pairs)), ca[ok]), np.repeat(np.arange(len(pairs)), cb[ok])])
    order = np.argsort(owner, kind="stable")
    hulls = shapely.convex_hull(shapely.linestrings(pts[order], indices=owner[order]))
    out[pairs] = shapely.area(hulls)
    return out


@register_distance("polygon", "giou", prepare=prepare_polygons_with_hulls)
def polygon_giou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Polygon GIoU with the convex hull of the union as the enclosing shape, as ``(1 + GIoU) / 2``."""
    inter = _intersection_areas(a, b, need, 0.0)
    iou = _iou_from_intersection(a, b, inter)
    union = a["area"][:, None] + b["area"][None, :] - inter
    mask = np.ones(iou.shape, bool) if need is None else np.asarray(need, bool)
    i, j = np.nonzero(mask)
    giou = np.full(iou.shape, -1.0)
    if len(i):
        hull = _pair_hull_areas(a["hull"][i], b["hull"][j])
        u = union[i, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            giou[i, j] = iou[i, j] - np.where(hull > 0, (hull - u) / hull, 0.0)
    return (1.0 + giou) / 2.0


@register_distance("polygon", "centroid", prepare=prepare_polygons, scale_invariant=False, pairs=centroid_pairs,
                   nearest_key=CENTROID_NEAREST)
def polygon_centroid(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Distance between polygon centroids, normalised by the image diagonal."""
    return centroid_similarity(a["centroid"], b["centroid"])


@register_distance("polygon", "centroid_box", prepare=prepare_polygons, pairs=centroid_box_pairs,
                   nearest_key=CENTROID_BOX_NEAREST)
def polygon_centroid_box(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Distance between the shapes' bounding-box centres in pixels, over the larger box's diagonal."""
    return centroid_box_similarity(a["xyxy"], a["scale"], b["xyxy"], b["scale"])
