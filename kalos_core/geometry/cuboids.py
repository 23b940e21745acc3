"""Oriented 3D boxes (cuboids): exact volume IoU and a centre distance.

An annotation's geometry is ``(x, y, z, dx, dy, dz, rx, ry, rz)``: FiftyOne's 3D
``Detection`` fields ``location`` (the centre), ``dimensions`` (the full side
lengths along the box's own x, y and z axes) and ``rotation`` (radians), read as
the FiftyOne App draws them: a three.js Euler of order ``"XYZ"``, i.e. the
rotation matrix ``Rx(rx) @ Ry(ry) @ Rz(rz)`` (SciPy's
``Rotation.from_euler("XYZ", ...)``); a corner is ``centre + R @ local``.
Coordinates stay in scene units: IoU does not depend on the unit, and the centre
distance is divided by the boxes' own size.

Intersection volumes are exact up to round-off:

* pairs whose axis-aligned bounds do not overlap, or whose bound
  ``min(V(bounds ∩ bounds), V_a, V_b) / max(V_a, V_b)`` is below ``floor``, are
  never intersected;
* two boxes with a common axis direction (yaw-only driving boxes, equal
  rotations, quarter turns) intersect in a prism: the overlap of two rectangles
  times the overlap along that axis, all pairs at once;
* any other pair: a separating-axis test (15 axes, vectorised) drops those that
  are disjoint or only touch; for the rest every edge of each box is clipped to
  the other box (Liang-Barsky, vectorised); the clipped end points are all the
  vertices of the intersection, whose volume is that of their convex hull
  (Qhull, once per pair).

In both, the vertices of the intersection are the end points of the edges of
each shape clipped to the other (in 2D their angular order gives the area).
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from ..data import Annotation, ImageRecord
from .registry import Prepared, register_distance

#: corner k of the unit box: the signs of its local coordinates
SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
#: the 12 edges: corner pairs that differ in one sign
EDGES = np.array([(p, q) for p in range(8) for q in range(p + 1, 8) if bin(p ^ q).count("1") == 1])
#: edges are clipped to the other box grown by this fraction of its half sides plus a few units of
#: round-off of the scene coordinates, so that a corner lying on a face (touching or equal boxes)
#: is not lost to round-off; the volume moves by a few times this, relatively
SLACK = 1e-12
#: two box axes are one direction when ``|cos(angle)| >= 1 - PARALLEL`` (angle below ~5e-7 rad)
PARALLEL = 1e-13


def rotation_matrices(angles: np.ndarray) -> np.ndarray:
    """``(n, 3)`` Euler angles ``(rx, ry, rz)`` -> ``(n, 3, 3)`` matrices ``Rx(rx) @ Ry(ry) @ Rz(rz)``.

    This is three.js's Euler order ``"XYZ"`` (how the FiftyOne App turns a
    detection's ``rotation`` into an orientation). Zero angles give exact zeros
    and ones, so a yaw-only box keeps the world z axis exactly.
    """
    a = np.asarray(angles, float).reshape(-1, 3)
    c, s = np.cos(a), np.sin(a)
    one, zero = np.ones(len(a)), np.zeros(len(a))
    rx = np.stack([one, zero, zero, zero, c[:, 0], -s[:, 0], zero, s[:, 0], c[:, 0]], -1)
    ry = np.stack([c[:, 1], zero, s[:, 1], zero, one, zero, -s[:, 1], zero, c[:, 1]], -1)
    rz = np.stack([c[:, 2], -s[:, 2], zero, s[:, 2], c[:, 2], zero, zero, zero, one], -1)
    return rx.reshape(-1, 3, 3) @ ry.reshape(-1, 3, 3) @ rz.reshape(-1, 3, 3)


def prepare_cuboids(image: ImageRecord, anns: Sequence[Annotation]) -> Prepared:
    """Centres, half sides, rotations, corners, axis-aligned bounds and volumes (scene units)."""
    return cuboid_columns(np.array([a.geometry for a in anns], dtype=float).reshape(-1, 9))


def cuboid_columns(g: np.ndarray) -> Prepared:
    """:func:`prepare_cuboids` of an ``(n, 9)`` array of ``location, dimensions, rotation`` rows."""
    centre, half = g[:, :3], g[:, 3:6] / 2.0
    rot = rotation_matrices(g[:, 6:9])     # columns: the box's axes in the scene
    corners = centre[:, None, :] + np.einsum("nij,nkj->nki", rot, SIGNS[None] * half[:, None, :])
    reach = np.einsum("nij,nj->ni", np.abs(rot), half)
    return Prepared(len(g), centre=centre, half=half, rot=rot, corners=corners, lo=centre - reach,
                    hi=centre + reach, volume=np.prod(g[:, 3:6], axis=1))


def _candidates(a: Prepared, b: Prepared, need, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose bounds overlap with a positive volume and whose IoU bound reaches ``floor``."""
    cand = np.ones((len(a), len(b)), bool) if need is None else np.array(need, dtype=bool)
    box = np.ones(cand.shape)
    for k in range(3):
        side = (np.minimum(a["hi"][:, None, k], b["hi"][None, :, k])
                - np.maximum(a["lo"][:, None, k], b["lo"][None, :, k]))
        cand &= side > 0
        box *= np.clip(side, 0.0, None)
    if floor > 0:
        # IoU = inter / union <= min(V(bounds ∩ bounds), V_a, V_b) / max(V_a, V_b)
        va, vb = a["volume"][:, None], b["volume"][None, :]
        cand &= np.minimum(box, np.minimum(va, vb)) >= floor * np.maximum(va, vb) * (1 - 1e-9)
    return np.nonzero(cand)


def _apart(A: Prepared, B: Prepared) -> np.ndarray:
    """``(P,)``: the boxes ``A[k]`` and ``B[k]`` are disjoint or only touch (a separating axis exists).

    The 15 candidate axes are the 3 + 3 face normals and the 9 cross products of
    edge directions; near-zero cross products (parallel edges) are left out,
    which can only miss a separation (the hull then finds no volume), never
    invent one beyond an overlap of round-off depth.
    """
    ra, rb = A["rot"], B["rot"]
    ua, ub = ra.transpose(0, 2, 1), rb.transpose(0, 2, 1)            # rows: the axes
    cross = np.cross(ua[:, :, None, :], ub[:, None, :, :]).reshape(-1, 9, 3)
    axes = np.concatenate([ua, ub, cross], axis=1)                   # (P, 15, 3)
    reach_a = (np.abs(axes @ ra) * A["half"][:, None, :]).sum(-1)
    reach_b = (np.abs(axes @ rb) * B["half"][:, None, :]).sum(-1)
    dist = np.abs(np.einsum("plm,pm->pl", axes, B["centre"] - A["centre"]))
    usable = np.linalg.norm(axes, axis=2) > 1e-6
    return (usable & (dist >= (reach_a + reach_b) * (1 - 1e-12))).any(axis=1)


def _common_axis(A: Prepared, B: Prepared) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(shared, ia, jb)``: whether A's axis ``ia`` and B's axis ``jb`` are one direction."""
    cos = np.abs(np.einsum("pmi,pmj->pij", A["rot"], B["rot"])).reshape(-1, 9)
    best = cos.argmax(axis=1)
    return cos[np.arange(len(best)), best] >= 1 - PARALLEL, best // 3, best % 3


def _clip(p0: np.ndarray, p1: np.ndarray, half: np.ndarray) -> np.ndarray:
    """End points of the segments ``p0 -> p1`` (``(P, E, d)``) clipped to the boxes ``|x| <= half``
    (``(P, 1, d)``) by Liang-Barsky: ``(P, 2E, d)``, NaN where a segment misses its box."""
    step = p1 - p0
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (-half - p0) / step, (half - p0) / step
    flat, inside = step == 0, np.abs(p0) <= half
    enter = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(ta, tb)).max(-1)
    leave = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(ta, tb)).min(-1)
    t0, t1 = np.maximum(enter, 0.0), np.minimum(leave, 1.0)
    hit = t0 <= t1
    t0, t1 = np.where(hit, t0, 0.0)[..., None], np.where(hit, t1, 0.0)[..., None]
    out = np.concatenate([p0 + t0 * step, p0 + t1 * step], axis=1)
    out[~np.concatenate([hit, hit], axis=1)] = np.nan
    return out


def _scale(A: Prepared, B: Prepared) -> np.ndarray:
    """The largest absolute scene coordinate of each pair (the size of its round-off)."""
    return np.maximum.reduce([np.abs(X[key]).max(axis=1) for X in (A, B) for key in ("lo", "hi")])


def _grown(half: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Half sides grown by :data:`SLACK` and the round-off of coordinates of size ``scale``."""
    return (half * (1 + SLACK) + 8 * np.finfo(float).eps * scale[:, None])[:, None, :]


def _polygon_areas(pts: np.ndarray) -> np.ndarray:
    """Areas of the convex hulls of ``(P, N, 2)`` points (NaN rows ignored), vectorised.

    The points are the vertices of a convex polygon (with repeats): sorted by angle
    around their mean, an interior point, they are its boundary in order.
    """
    valid = ~np.isnan(pts[..., 0])
    n = valid.sum(axis=1)
    mean = np.nansum(pts, axis=1) / np.maximum(n, 1)[:, None]
    rel = pts - mean[:, None, :]
    angle = np.where(valid, np.arctan2(rel[..., 1], rel[..., 0]), np.inf)
    ring = np.take_along_axis(rel, np.argsort(angle, axis=1)[..., None], axis=1)
    ring = np.where(np.isnan(ring), ring[:, :1], ring)        # missing points: repeats of the first
    nxt = np.roll(ring, -1, axis=1)
    area = 0.5 * np.abs((ring[..., 0] * nxt[..., 1] - ring[..., 1] * nxt[..., 0]).sum(axis=1))
    return np.where(n >= 3, area, 0.0)


#: a rectangle's corners, in order around it
SQUARE = np.array([(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)])


def prism_volumes(A: Prepared, B: Prepared, ia: np.ndarray, jb: np.ndarray) -> np.ndarray:
    """Volumes of ``A[k] ∩ B[k]`` when A's axis ``ia[k]`` is parallel to B's axis ``jb[k]``.

    The intersection is a prism: the overlap of the two cross-sections (rectangles
    in the plane of A's two other axes, each one's edges clipped to the other) times
    the overlap along the common axis.
    """
    k = np.arange(len(ia))
    ra, rb, ha, hb = A["rot"], B["rot"], A["half"], B["half"]
    d = B["centre"] - A["centre"]
    along = np.einsum("pm,pm->p", d, ra[k, :, ia])
    length = np.minimum(ha[k, ia], along + hb[k, jb]) - np.maximum(-ha[k, ia], along - hb[k, jb])
    i1, i2, j1, j2 = (ia + 1) % 3, (ia + 2) % 3, (jb + 1) % 3, (jb + 2) % 3
    plane = np.stack([ra[k, :, i1], ra[k, :, i2]], axis=2)              # (P, 3, 2): A's other axes
    centre = np.einsum("pm,pmq->pq", d, plane)                          # B's centre in that plane
    axes_b = np.einsum("pmq,pmr->pqr", np.stack([rb[k, :, j1], rb[k, :, j2]], axis=2), plane)
    half_a, half_b = np.stack([ha[k, i1], ha[k, i2]], -1), np.stack([hb[k, j1], hb[k, j2]], -1)
    scale = _scale(A, B)
    corners_a = SQUARE[None] * half_a[:, None, :]                       # A's frame is the plane's
    b_in_b = SQUARE[None] * half_b[:, None, :]
    corners_b = centre[:, None, :] + b_in_b @ axes_b                     # (rows of axes_b: B's axes)
    a_in_b = (corners_a - centre[:, None, :]) @ axes_b.transpose(0, 2, 1)
    b_clipped = _clip(corners_b, np.roll(corners_b, -1, axis=1), _grown(half_a, scale))
    a_clipped = _clip(a_in_b, np.roll(a_in_b, -1, axis=1), _grown(half_b, scale)) @ axes_b
    area = _polygon_areas(np.concatenate([b_clipped, a_clipped + centre[:, None, :]], axis=1))
    return area * np.clip(length, 0.0, None)


def _clipped_edges(A: Prepared, B: Prepared) -> np.ndarray:
    """``(P, 24, 3)``: the end points of A's edges clipped to box B (NaN where an edge misses B)."""
    rb, cb = B["rot"], B["centre"]
    local = np.einsum("pkm,pmi->pki", A["corners"] - cb[:, None, :], rb)   # in B's frame
    scale = _scale(A, B)
    q = _clip(local[:, EDGES[:, 0]], local[:, EDGES[:, 1]], _grown(B["half"], scale))
    return cb[:, None, :] + np.einsum("pij,pkj->pki", rb, q)


def hull_volumes(A: Prepared, B: Prepared) -> np.ndarray:
    """Volumes of ``A[k] ∩ B[k]`` for any orientations: the hull of the edges clipped both ways.

    A vertex of the intersection lies on three of the twelve face planes: a corner
    of one box inside the other, or where an edge of one box crosses a face of
    the other; both are end points of a clipped edge. A flat intersection (the
    boxes touch) has volume 0.
    """
    from scipy.spatial import ConvexHull, QhullError   # here: half a second of import no other run pays

    pts = np.concatenate([_clipped_edges(A, B), _clipped_edges(B, A)], axis=1)
    out = np.zeros(len(pts))
    for k, p in enumerate(pts):
        p = p[~np.isnan(p[:, 0])]
        if len(p) >= 4:
            try:
                out[k] = ConvexHull(p - p.mean(axis=0)).volume
            except QhullError:   # all points on a plane or a line
                pass
    return out


def intersection_volumes(A: Prepared, B: Prepared) -> np.ndarray:
    """Volumes of ``A[k] ∩ B[k]`` for two equal-length prepared sets of cuboids."""
    out = np.zeros(len(A))
    shared, ia, jb = _common_axis(A, B)
    prism = np.flatnonzero(shared)
    if len(prism):
        out[prism] = prism_volumes(A.take_on_use(prism), B.take_on_use(prism), ia[prism], jb[prism])
    rest = np.flatnonzero(~shared)
    if len(rest):                          # the separating-axis test spares the hull of disjoint pairs
        rest = rest[~_apart(A.take_on_use(rest), B.take_on_use(rest))]
        out[rest] = hull_volumes(A.take_on_use(rest), B.take_on_use(rest))
    smaller = np.minimum(A["volume"], B["volume"])
    # within float error of the smaller box's volume, one box holds the other: its volume exactly (identical
    # boxes then have IoU 1.0, not 0.9999999999999993, and match at a threshold of 1)
    held = np.isclose(out, smaller, rtol=1e-9, atol=0.0)
    out[held] = smaller[held]
    return np.clip(out, 0.0, smaller)


@register_distance("cuboids", "iou3d", prepare=prepare_cuboids)
def cuboid_iou(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Exact volume IoU of oriented 3D boxes."""
    out = np.zeros((len(a), len(b)))
    i, j = _candidates(a, b, need, floor)
    if len(i):
        inter = intersection_volumes(a.take_on_use(i), b.take_on_use(j))
        out[i, j] = inter / (a["volume"][i] + b["volume"][j] - inter)
    return out


@register_distance("cuboids", "centroid_box", prepare=prepare_cuboids)
def cuboid_centroid_box(a: Prepared, b: Prepared, need=None, floor: float = 0.0) -> np.ndarray:
    """Centre L2 distance over the space diagonal of the larger cuboid (scale-invariant)."""
    dist = np.sqrt(((a["centre"][:, None, :] - b["centre"][None, :, :]) ** 2).sum(-1))
    da, db = 2 * np.linalg.norm(a["half"], axis=1)[:, None], 2 * np.linalg.norm(b["half"], axis=1)[None, :]
    va, vb = a["volume"][:, None], b["volume"][None, :]
    norm = np.where(va > vb, da, np.where(vb > va, db, np.maximum(da, db)))
    return np.clip(1.0 - dist / norm, 0.0, 1.0)
