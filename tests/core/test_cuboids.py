"""3D cuboids: the oriented-box IoU against hand-computed volumes, both intersection paths,
properties (range, symmetry, rigid-motion invariance) and a Monte-Carlo estimate."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from kalos_core.data import Annotation, make_image
from kalos_core.geometry import DEFAULT_DISTANCE, distances_for, get_distance
from kalos_core.geometry import cuboids as C

Q = math.pi / 4
UNIT = (0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0)


def cube(x=0.0, y=0.0, z=0.0, side=1.0, rx=0.0, ry=0.0, rz=0.0):
    return (x, y, z, side, side, side, rx, ry, rz)


def sim(geoms, name="iou3d", **kw):
    """The similarity matrix of cuboids through the registry (prepare + similarity)."""
    anns = [Annotation(k, "r", 1, tuple(map(float, g))) for k, g in enumerate(geoms)]
    spec = get_distance("cuboids", name)
    p = spec.prepare(make_image(0, 1, 1, ["r"], anns), anns)
    return spec.similarity(p, p, **kw)


def iou(a, b):
    return sim([a, b])[0, 1]


def prep(*geoms):
    return C.cuboid_columns(np.array(geoms, dtype=float))


def hull_iou(a, b):
    """The IoU by the general path (edge clipping + convex hull), whatever the orientations."""
    A, B = prep(a), prep(b)
    inter = min(C.hull_volumes(A, B)[0], A["volume"][0], B["volume"][0])
    return inter / (A["volume"][0] + B["volume"][0] - inter)


# A unit cube turned by 45 degrees about z against itself: in the xy plane the turned square sticks
# out of the other past each side by a right isosceles triangle of height h = (sqrt(2) - 1) / 2
# (the turned corner is at sqrt(2)/2 from the centre, the side at 1/2) and area h^2. The
# intersection is a regular octagon of area 1 - 4 h^2 = 1 - (sqrt(2) - 1)^2 = 2 (sqrt(2) - 1),
# a prism of height 1: volume 2 (sqrt(2) - 1), union 2 - 2 (sqrt(2) - 1) = 2 (2 - sqrt(2)),
# IoU = (sqrt(2) - 1) / (2 - sqrt(2)) = (sqrt(2) - 1) / (sqrt(2) (sqrt(2) - 1)) = 1 / sqrt(2).
OCTAGON_IOU = 1 / math.sqrt(2)

KNOWN = [
    ("half a side along x", cube(0.5), 1 / 3),            # inter 0.5, union 1.5
    ("half a side along z", cube(z=-0.5), 1 / 3),
    ("half along x and y", cube(0.5, 0.5), 0.25 / 1.75),  # inter 0.25, union 1.75 -> 1/7
    ("identical", UNIT, 1.0),
    ("disjoint", cube(3.0), 0.0),
    ("touching faces", cube(1.0), 0.0),
    ("touching edges", cube(1.0, 1.0), 0.0),
    ("inside a cube of side 2", cube(side=2.0), 1 / 8),
    ("45 degrees about z", cube(rz=Q), OCTAGON_IOU),
    ("45 degrees about x", cube(rx=Q), OCTAGON_IOU),
    ("45 degrees about y", cube(ry=Q), OCTAGON_IOU),
    ("90 degrees about x", cube(rx=2 * Q), 1.0),
    ("90 degrees about y", cube(ry=2 * Q), 1.0),
    ("90 degrees about z", cube(rz=2 * Q), 1.0),
    ("180 degrees about z then 90 about x", cube(rx=2 * Q, rz=4 * Q), 1.0),
]


def test_registered_as_the_default_of_its_kind():
    assert DEFAULT_DISTANCE["cuboids"] == "iou3d"
    assert {"iou3d", "centroid_box"} <= set(distances_for("cuboids"))


@pytest.mark.parametrize("what,other,expected", KNOWN, ids=[k[0] for k in KNOWN])
def test_known_answers(what, other, expected):
    assert iou(UNIT, other) == pytest.approx(expected, abs=1e-10)
    assert iou(other, UNIT) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("what,other,expected", KNOWN, ids=[k[0] for k in KNOWN])
def test_known_answers_by_the_general_path(what, other, expected):
    """The convex-hull path (used when no axis is shared) gives the same values."""
    assert hull_iou(UNIT, other) == pytest.approx(expected, abs=1e-9)
    assert hull_iou(other, UNIT) == pytest.approx(expected, abs=1e-9)


def test_rotation_about_each_axis_gives_the_same_value():
    for angle in (0.1, 0.3, Q, 1.0):
        values = [iou(UNIT, cube(**{axis: angle})) for axis in ("rx", "ry", "rz")]
        assert values == pytest.approx([values[0]] * 3, abs=1e-10)
        assert hull_iou(UNIT, cube(rz=angle)) == pytest.approx(values[0], abs=1e-9)


def test_general_orientation_inside_a_larger_box():
    """No shared axis (hull path): a turned unit cube inside an upright cube of side 3 -> 1/27."""
    inner = cube(0.1, -0.2, 0.05, rx=0.3, ry=0.5, rz=0.7)
    assert iou(inner, cube(side=3.0)) == pytest.approx(1 / 27, abs=1e-12)
    # a box turned the same way is compared in its own frame: offset by half a side there -> 1/3
    rot = C.rotation_matrices(np.array([0.3, 0.5, 0.7]))[0]
    moved = tuple(np.add(inner[:3], rot @ [0.5, 0.0, 0.0])) + inner[3:]
    assert iou(inner, moved) == pytest.approx(1 / 3, abs=1e-12)


def test_rotation_convention_is_threejs_euler_xyz():
    """The App draws ``rotation`` as a three.js Euler of order XYZ: R = Rx @ Ry @ Rz (intrinsic)."""
    angles = np.random.default_rng(0).uniform(-math.pi, math.pi, (20, 3))
    expected = Rotation.from_euler("XYZ", angles).as_matrix()
    assert np.allclose(C.rotation_matrices(angles), expected, atol=1e-14)
    # yaw only keeps the scene's z axis exactly (the prism path then applies without round-off)
    assert np.array_equal(C.rotation_matrices(np.array([[0.0, 0.0, 1.2]]))[0][:, 2], [0.0, 0.0, 1.0])


def test_thin_boxes_whose_bounds_overlap_are_found_disjoint():
    a = (0.0, 0.0, 0.0, 4.0, 0.2, 1.0, 0.0, 0.0, Q)
    b = (0.5, -0.5, 0.0, 4.0, 0.2, 1.0, 0.0, 0.0, Q)       # parallel, 0.71 apart across
    A, B = prep(a), prep(b)
    assert (np.minimum(A["hi"], B["hi"]) > np.maximum(A["lo"], B["lo"])).all()
    assert C._apart(A, B).all() and iou(a, b) == 0.0


def test_far_pairs_and_pairs_below_the_floor_are_never_intersected(monkeypatch):
    seen = []
    real = C.intersection_volumes
    monkeypatch.setattr(C, "intersection_volumes", lambda A, B: seen.append(len(A)) or real(A, B))
    geoms = [cube(10.0 * k) for k in range(50)] + [cube(10.0 * k + 0.1) for k in range(50)]
    s = sim(geoms, need=~np.eye(100, dtype=bool))
    assert seen == [100]           # each cube with its shifted copy, both ways: nothing else
    assert s[0, 50] == pytest.approx(0.9 / 1.1)
    seen.clear()
    small = sim([UNIT, cube(side=3.0)], floor=0.5)         # bound 1/27 < 0.5: skipped
    assert small[0, 1] == 0.0 and seen == [2]              # only the diagonal (identical) pairs


def test_need_restricts_the_pairs():
    need = np.array([[False, True], [False, False]])
    s = sim([UNIT, cube(0.5)], need=need)
    assert s[0, 1] == pytest.approx(1 / 3) and s[1, 0] == 0.0 and s[0, 0] == 0.0


def test_centroid_box_by_hand():
    s = sim([UNIT, cube(0.5), (0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0)], name="centroid_box")
    assert s[0, 1] == pytest.approx(1 - 0.5 / math.sqrt(3))    # over the unit cube's diagonal
    assert s[0, 2] == pytest.approx(1.0) and s[1, 2] == pytest.approx(1 - 0.5 / (2 * math.sqrt(3)))


def test_very_flat_boxes_still_work():
    flat = (0.0, 0.0, 0.0, 1.0, 1.0, 1e-6, 0.0, 0.0, 0.0)
    assert iou(flat, (0.5, 0.0, 0.0, 1.0, 1.0, 1e-6, 0.0, 0.0, 0.0)) == pytest.approx(1 / 3)
    assert iou(flat, (0.0, 0.0, 0.0, 1.0, 1.0, 1e-6, 0.3, 0.2, 0.1)) >= 0.0


angles = st.floats(-math.pi, math.pi, allow_nan=False)
boxes = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3, *[st.floats(0.1, 2.0, allow_nan=False)] * 3,
                  angles, angles, angles)


@settings(max_examples=60, deadline=None)
@given(st.lists(boxes, min_size=2, max_size=6))
def test_similarity_is_in_unit_interval_symmetric_and_one_on_itself(geoms):
    s = sim(geoms)
    assert np.all(s >= 0.0) and np.all(s <= 1.0)
    assert np.allclose(s, s.T, atol=1e-9)
    assert np.all(np.diag(s) == 1.0)   # exactly: identical boxes match at a threshold of 1


def test_identical_rotated_cuboids_agree_at_threshold_one():
    """Two raters drew the same tilted box: IoU exactly 1 (the hull's float error once gave
    0.9999999999999993), so they match at threshold 1 and agree."""
    from kalos_core.agreement import AgreementConfig, compute_agreement
    from kalos_core.data import MultiRaterDataset

    g = (1.0, 2.0, 0.5, 2.0, 1.0, 0.7, 0.3, 0.2, 0.9)
    assert iou(g, g) == 1.0
    anns = [Annotation(f"{r}{k}", r, 1, g if k == 0 else (5.0, 5.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.4, 0.0))
            for r in ("a", "b") for k in range(2)]
    data = MultiRaterDataset([make_image(0, 10, 10, ["a", "b"], anns)], {1: "car"}, "cuboids")
    res = compute_agreement(data, AgreementConfig(threshold=1.0, bootstrap=0))
    assert res.global_alpha == 1.0


def _moved(g, rot, shift):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # gimbal lock: still a valid decomposition
        turned = (rot * Rotation.from_euler("XYZ", g[6:])).as_euler("XYZ")
    return (*(rot.apply(g[:3]) + shift), *g[3:6], *turned)


@settings(max_examples=60, deadline=None)
@given(boxes, boxes, st.tuples(angles, angles, angles), st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 3))
def test_invariant_to_moving_both_boxes_together(a, b, turn, shift):
    rot = Rotation.from_euler("XYZ", turn)
    assert iou(_moved(a, rot, shift), _moved(b, rot, shift)) == pytest.approx(iou(a, b), abs=1e-8)


@settings(max_examples=40, deadline=None)
@given(boxes, boxes)
def test_agrees_with_a_monte_carlo_estimate(a, b):
    A, B = prep(a), prep(b)
    n = 40_000
    local = np.random.default_rng(0).uniform(-1, 1, (n, 3)) * A["half"][0]
    points = A["centre"][0] + local @ A["rot"][0].T
    inside = (np.abs((points - B["centre"][0]) @ B["rot"][0]) <= B["half"][0]).all(axis=1)
    va, vb = A["volume"][0], B["volume"][0]
    exact = iou(a, b) * (va + vb) / (1 + iou(a, b))            # the intersection volume
    p = min(exact / va, 1.0)
    assert inside.mean() * va == pytest.approx(exact, abs=5 * va * math.sqrt(p * (1 - p) / n) + 1e-9)


@settings(max_examples=60, deadline=None)
@given(boxes, boxes)
def test_prism_path_equals_the_general_path_for_upright_boxes(a, b):
    a, b = (*a[:6], 0.0, 0.0, a[8]), (*b[:6], 0.0, 0.0, b[8])
    assert iou(a, b) == pytest.approx(hull_iou(a, b), abs=1e-9)
