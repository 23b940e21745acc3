"""Distances against hand-computed values (docs/method.md §2)."""

import numpy as np
import pytest

from kalos_core.data import Annotation, make_image
from kalos_core.geometry import DISTANCES, distances_for, get_distance


def sim(kind, name, geoms, width=100, height=100, bboxes=None):
    anns = [Annotation(k, "r", 1, g, (bboxes or [None] * len(geoms))[k]) for k, g in enumerate(geoms)]
    spec = get_distance(kind, name)
    image = make_image(0, width, height, ["r"], anns)
    p = spec.prepare(image, anns)
    return spec.similarity(p, p)


def square(x, y, s):
    return [[x, y, x + s, y, x + s, y + s, x, y + s]]


def test_registry_lists_every_kind():
    assert {"iou", "giou", "centroid", "centroid_box"} <= set(distances_for("box"))
    assert {"iou", "giou", "centroid", "centroid_box", "mask_iou"} <= set(distances_for("polygon"))
    assert {"mpjpe", "oks"} <= set(distances_for("keypoints"))
    assert ("voxels", "iou") in DISTANCES and ("rle", "iou") in DISTANCES
    with pytest.raises(ValueError, match="unknown distance"):
        get_distance("box", "nope")


def test_box_iou_giou_centroid_by_hand():
    boxes = [(0, 0, 10, 10), (5, 0, 10, 10), (20, 0, 10, 10)]
    iou = sim("box", "iou", boxes)
    assert iou[0, 1] == pytest.approx(50 / 150)
    assert iou[0, 2] == 0.0 and iou[0, 0] == 1.0
    giou = sim("box", "giou", boxes)
    # boxes 0 and 2: IoU 0, enclosing 30x10, union 200 -> GIoU = -(300-200)/300
    assert giou[0, 2] == pytest.approx((1 - 1 / 3) / 2)
    assert giou[0, 1] == pytest.approx((1 + 1 / 3) / 2)   # enclosing == union
    cen = sim("box", "centroid", boxes, width=100, height=100)
    assert cen[0, 2] == pytest.approx(1 - 0.2 / np.sqrt(2))


def test_centroid_box_by_hand_larger_box_diagonal_in_pixels():
    # centres (5, 5), (7.5, 10) and (25, 5); the larger box of pair (0, 1) is box 1 (20 x 10 px)
    boxes = [(0, 0, 10, 10), (0, 5, 15, 10), (20, 0, 10, 10)]
    s = sim("box", "centroid_box", boxes, width=200, height=50)
    assert s[0, 1] == pytest.approx(1 - np.hypot(2.5, 5) / np.hypot(15, 10))
    assert s[0, 2] == 0.0                         # 20 px apart, diagonal 14.1 px: clipped to 0
    assert np.allclose(s, s.T) and np.allclose(np.diag(s), 1.0)
    # equal areas, different shapes: the longer diagonal (symmetric either way)
    t = sim("box", "centroid_box", [(0, 0, 4, 4), (0, 0, 2, 8)])
    assert t[0, 1] == t[1, 0] == pytest.approx(1 - np.hypot(1, 2) / np.hypot(2, 8))


def test_centroid_box_is_scale_invariant_and_centroid_is_not():
    small = [(0, 0, 10, 10), (3, 0, 10, 10)]
    big = [(0, 0, 100, 100), (30, 0, 100, 100)]
    assert sim("box", "centroid_box", small)[0, 1] == pytest.approx(sim("box", "centroid_box", big)[0, 1])
    assert sim("box", "centroid", small)[0, 1] != pytest.approx(sim("box", "centroid", big)[0, 1])
    poly = sim("polygon", "centroid_box", [square(0, 0, 10), square(3, 0, 10)])
    assert poly[0, 1] == pytest.approx(sim("box", "centroid_box", small)[0, 1])


def test_cross_image_centroid_box_compares_pixels():
    spec = get_distance("box", "centroid_box")
    a_ann, b_ann = Annotation(0, "r", 1, (0, 0, 10, 10)), Annotation(1, "q", 1, (10, 0, 10, 10))
    a = spec.prepare(make_image(0, 100, 100, ["r"], [a_ann]), [a_ann])
    b = spec.prepare(make_image(1, 400, 100, ["q"], [b_ann]), [b_ann])
    assert spec.similarity(a, b)[0, 0] == pytest.approx(1 - 10 / np.hypot(10, 10))


def test_scale_dependent_distances_are_flagged():
    flagged = {(k, n) for (k, n), spec in DISTANCES.items() if not spec.scale_invariant}
    assert flagged == {("box", "centroid"), ("polygon", "centroid"), ("rle", "centroid"), ("keypoints", "mpjpe")}


def test_box_iou_is_scale_invariant_per_axis():
    a = sim("box", "iou", [(0, 0, 10, 10), (5, 2, 10, 10)], width=100, height=100)
    b = sim("box", "iou", [(0, 0, 20, 10), (10, 2, 20, 10)], width=200, height=100)
    assert a[0, 1] == pytest.approx(b[0, 1])


def test_polygon_iou_matches_box_iou_for_rectangles_and_repairs_bowties():
    s = sim("polygon", "iou", [square(0, 0, 10), square(5, 0, 10), [[0, 0, 10, 10, 10, 0, 0, 10]]])
    assert s[0, 1] == pytest.approx(50 / 150)
    assert s[0, 2] == pytest.approx(0.5)   # the bow-tie keeps both triangles (make_valid), as COCO rasterises it
    multi = sim("polygon", "iou", [square(0, 0, 10) + square(20, 0, 10), square(0, 0, 10)])
    assert multi[0, 1] == pytest.approx(0.5)  # two rings of one annotation are united


def test_polygon_giou_and_mask_iou():
    g = sim("polygon", "giou", [square(0, 0, 10), square(20, 0, 10)])
    # convex hull of the union is 30x10 = 300, union 200 -> GIoU = -1/3
    assert g[0, 1] == pytest.approx((1 - 1 / 3) / 2)
    m = sim("polygon", "mask_iou", [square(0, 0, 10), square(5, 0, 10)])
    assert m[0, 1] == pytest.approx(50 / 150, abs=0.03)  # rasterised


def test_rle_iou_with_pycocotools():
    from pycocotools import mask as mu
    a = np.zeros((20, 20), np.uint8, order="F"); a[:10, :10] = 1
    b = np.zeros((20, 20), np.uint8, order="F"); b[:10, 5:15] = 1
    rles = [mu.encode(a), mu.encode(b)]
    for r in rles:
        r["counts"] = r["counts"].decode()
    s = sim("rle", "iou", rles, width=20, height=20)
    assert s[0, 1] == pytest.approx(50 / 150)
    c = sim("rle", "centroid", rles, width=20, height=20)
    assert c[0, 1] == pytest.approx(1 - (5 / 20) / np.sqrt(2))


def test_keypoint_error_with_visibility_penalty():
    a = [10, 10, 2, 50, 50, 2, 0, 0, 0]
    b = [10, 20, 2, 0, 0, 0, 0, 0, 0]     # joint 2 only seen by a -> cost 1
    s = sim("keypoints", "mpjpe", [a, b], width=100, height=100)
    expected_err = ((0.1 / np.sqrt(2)) + 1.0) / 2
    assert s[0, 1] == pytest.approx(1 - expected_err)
    none = sim("keypoints", "mpjpe", [[0, 0, 0], [0, 0, 0]])
    assert none[0, 1] == 1.0
    oks = sim("keypoints", "oks", [a, a], bboxes=[(0, 0, 50, 50)] * 2)
    assert oks[0, 1] == pytest.approx(1.0)


def test_voxel_iou():
    cube = np.array([[x, y, z] for x in range(2) for y in range(2) for z in range(2)])
    half = cube[cube[:, 0] == 0]
    s = sim("voxels", "iou", [cube, half])
    assert s[0, 1] == pytest.approx(0.5)


def test_cross_image_comparison_uses_relative_coordinates():
    spec = get_distance("box", "iou")
    big = make_image(0, 200, 200, ["r"], [Annotation(0, "r", 1, (0, 0, 20, 20))])
    small = make_image(1, 100, 100, ["r"], [Annotation(1, "r", 1, (0, 0, 10, 10))])
    s = spec.similarity(spec.prepare(big, big.annotations), spec.prepare(small, small.annotations))
    assert s[0, 0] == pytest.approx(1.0)


def test_polygon_giou_hull_shortcut_equals_the_hull_of_the_union():
    """GIoU's enclosing hull comes from the shapes' hull vertices; it must equal hull(A ∪ B)."""
    import shapely
    rng = np.random.default_rng(7)

    def blob():
        c, r = rng.uniform(20, 80, 2), rng.uniform(2, 25)
        t = np.sort(rng.uniform(0, 2 * np.pi, 25))
        rr = r * rng.uniform(0.5, 1.2, 25)   # star-shaped, non-convex
        return list(np.c_[c[0] + rr * np.cos(t), c[1] + rr * np.sin(t)].ravel())

    anns = [Annotation(k, "r", 1, [blob()] + ([blob()] if k % 5 == 0 else [])) for k in range(40)]
    image = make_image(0, 100, 100, ["r"], anns)
    spec = get_distance("polygon", "giou")
    p = spec.prepare(image, anns)
    s = spec.similarity(p, p)
    g = p["geom"]
    i, j = np.nonzero(np.ones(s.shape, bool))
    inter = shapely.area(shapely.intersection(g[i], g[j]))
    union = shapely.area(shapely.union(g[i], g[j]))
    hull = shapely.area(shapely.convex_hull(shapely.union(g[i], g[j])))
    expected = (1 + inter / union - (hull - union) / hull) / 2
    assert np.allclose(s.ravel(), expected, atol=1e-9)
    assert s.min() < 0.3 and np.diag(s).min() > 0.5   # far pairs and identical pairs both present
