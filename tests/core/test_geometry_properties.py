"""Property tests over generated unusual geometry (docs/input.md, "Regions"): self-intersecting
rings, keyhole holes, collinear and repeated points, rings outside the image, RLE masks anywhere.
No internal error; identical raters agree (α 1); α does not depend on rater names or image order;
a shape and its repaired form (a bow-tie and its two triangles) give the same numbers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.geometry import get_distance
from kalos_core.io import validate_dataset
from kalos_core.io.validation import InvalidInputError

FAST = settings(max_examples=25, deadline=None, derandomize=True)
W = H = 64
coord = st.integers(-20, W + 20)   # some points outside the image


@st.composite
def ring(draw):
    """A ring of 3-8 points: any order (self-intersections), repeats and collinear runs allowed."""
    pts = draw(st.lists(st.tuples(coord, coord), min_size=3, max_size=8))
    if draw(st.booleans()):                       # a collinear point inserted between two vertices
        (x0, y0), (x1, y1) = pts[0], pts[1]
        pts.insert(1, ((x0 + x1) / 2, (y0 + y1) / 2))
    return [float(c) for p in pts for c in p]


@st.composite
def region(draw):
    """One annotation: 1-3 rings, sometimes a keyhole (outer ring bridged to a hole)."""
    if draw(st.booleans()):
        x, y, s = draw(st.integers(0, 30)), draw(st.integers(0, 30)), draw(st.integers(12, 30))
        h = s // 3
        return [[x, y, x + s, y, x + s, y + s, x, y + s, x, y, x + h, y + h, x + h, y + 2 * h,
                 x + 2 * h, y + 2 * h, x + 2 * h, y + h, x + h, y + h]]
    return draw(st.lists(ring(), min_size=1, max_size=3))


def data(images, names=("a", "b")):
    """Images of ``[geometry per annotation]``; every rater draws the same annotations."""
    ims = []
    for i, geoms in enumerate(images):
        anns = [Annotation(f"{i}-{r}-{k}", r, 1 + k % 2, g) for r in names for k, g in enumerate(geoms)]
        ims.append(make_image(f"im{i}", W, H, list(names), anns))
    return ims


def measure(images, kind, distance, names=("a", "b")):
    """Mean α, or None when validation refuses every region (a defined refusal, not an internal error)."""
    try:
        ds = validate_dataset(MultiRaterDataset(data(images, names), {1: "x", 2: "y"}, kind), skip_invalid=True)
    except InvalidInputError:
        return None
    return compute_agreement(ds, AgreementConfig(distance=distance, bootstrap=0, threshold=0.5)).mean_alpha


@pytest.mark.parametrize("distance", ["iou", "giou", "mask_iou", "centroid"])
@FAST
@given(images=st.lists(st.lists(region(), min_size=1, max_size=3), min_size=1, max_size=3))
def test_identical_raters_agree_and_names_and_order_do_not_matter(distance, images):
    a = measure(images, "polygon", distance)
    assert a is None or a == pytest.approx(1.0)
    assert measure(images[::-1], "polygon", distance, names=("zed", "amy")) == a


@FAST
@given(images=st.lists(st.lists(region(), min_size=1, max_size=3), min_size=1, max_size=2),
       other=st.lists(region(), min_size=1, max_size=3))
def test_alpha_is_invariant_to_renaming_and_image_order_when_raters_differ(images, other):
    def ds(names, order):
        ims = data(images, names[:1]) + data([other], names[1:])
        ims = [make_image(i, W, H, list(names), [a for im in ims for a in im.annotations if a.id.startswith(f"{i}-")])
               for i in (f"im{k}" for k in range(len(images)))]
        return MultiRaterDataset(ims[::order], {1: "x", 2: "y"}, "polygon")
    try:
        a = compute_agreement(validate_dataset(ds(("a", "b"), 1), skip_invalid=True), AgreementConfig(bootstrap=0))
    except InvalidInputError:
        return
    b = compute_agreement(validate_dataset(ds(("q", "p"), -1), skip_invalid=True), AgreementConfig(bootstrap=0))
    assert a.mean_alpha == pytest.approx(b.mean_alpha)
    assert a.global_alpha == pytest.approx(b.global_alpha)


@st.composite
def bowtie(draw):
    """A bow-tie and the same shape written as its two triangles (crossing at the centre)."""
    x, y = draw(st.integers(0, 30)), draw(st.integers(0, 30))   # inside: tiny visible parts rasterise coarsely
    w, h = 2 * draw(st.integers(8, 15)), 2 * draw(st.integers(8, 15))
    cx, cy = x + w / 2, y + h / 2
    tie = [[x, y, x + w, y + h, x + w, y, x, y + h]]
    two = [[x, y, cx, cy, x, y + h], [x + w, y, x + w, y + h, cx, cy]]
    return [float(c) for c in tie[0]], [[float(c) for c in r] for r in two]


@pytest.mark.parametrize("distance", ["iou", "giou", "mask_iou", "centroid"])
@FAST
@given(shape=bowtie())
def test_a_bowtie_equals_its_two_rings(distance, shape):
    tie, two = shape
    anns = [Annotation(1, "a", 1, [tie]), Annotation(2, "b", 1, two)]
    ims = [make_image("im", W, H, ["a", "b"], anns)]
    try:
        ds = validate_dataset(MultiRaterDataset(ims, {1: "x"}, "polygon"))
    except InvalidInputError as err:           # wholly outside the image: refused, by the same rule for both
        assert len(err.problems) == 2 and all("no area inside the image" in p.message for p in err.problems)
        return
    spec = get_distance("polygon", distance)
    s = spec.similarity(*[spec.prepare(ds.images[0], ds.images[0].annotations)] * 2)
    tol = 0.08 if distance == "mask_iou" else 1e-9    # rasterised: the pixels at the crossing may differ
    assert s[0, 1] == pytest.approx(s[0, 0], abs=tol) and s[1, 1] == pytest.approx(s[0, 0], abs=tol)
    if distance in ("iou", "mask_iou"):       # (GIoU is below 1 for any non-convex shape, even itself)
        res = compute_agreement(ds, AgreementConfig(distance=distance, bootstrap=0, threshold=0.9))
        assert s[0, 1] == pytest.approx(1.0, abs=tol) and res.mean_alpha == pytest.approx(1.0)


@FAST
@given(top=st.integers(-40, 80), left=st.integers(-40, 80), size=st.integers(1, 40),
       value=st.sampled_from([1, 7, 255]))
def test_rle_masks_anywhere_identical_raters_agree(top, left, size, value):
    from pycocotools import mask as mask_utils

    m = np.zeros((H, W), np.uint8)
    m[max(top, 0): max(top + size, 0), max(left, 0): max(left + size, 0)] = value
    rle = mask_utils.encode(np.asfortranarray((m != 0).astype(np.uint8)))
    rle = {"size": rle["size"], "counts": rle["counts"].decode()}
    try:
        ds = validate_dataset(MultiRaterDataset(data([[rle]]), {1: "x"}, "rle"))
    except InvalidInputError as err:
        assert not m.any() and "mask is empty" in str(err)
        return
    assert m.any()
    assert compute_agreement(ds, AgreementConfig(bootstrap=0, threshold=0.99)).mean_alpha == 1.0
