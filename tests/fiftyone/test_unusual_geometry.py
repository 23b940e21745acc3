"""Unusual but valid FiftyOne geometry (docs/input.md, "FiftyOne regions"): instance masks of any
dtype, colour, size and position; detections without a mask; polylines that enclose no area."""

import uuid

import numpy as np
import pytest

from tests.fiftyone.helpers import run_agreement

BOX = [0.1, 0.1, 0.2, 0.2]      # 20 x 20 pixels of a 100 x 100 image


def dataset(fo, a, b, field_type="Detections"):
    """One 100 x 100 sample, rater fields raters_a / raters_b holding one label each."""
    ds = fo.Dataset(f"kalos-{uuid.uuid4().hex[:8]}")
    s = fo.Sample(filepath="/nonexistent/m.jpg", metadata=fo.ImageMetadata(width=100, height=100))
    cls = getattr(fo, field_type)
    key = "detections" if field_type == "Detections" else "polylines"
    s["raters_a"], s["raters_b"] = cls(**{key: [a]}), cls(**{key: [b]})
    ds.add_sample(s)
    return ds


def alpha(fo, ds, **params):
    run_agreement(ds, rater_fields=["raters_a", "raters_b"], run_key="m", **params)
    return ds.values("m_alpha")[0]


def half(shape, dtype=bool, channels=0):
    m = np.zeros(shape + ((channels,) if channels else ()), dtype)
    m[:, : shape[1] // 2] = 255 if dtype == np.uint8 else 1
    return m


@pytest.mark.parametrize("other", [
    half((20, 20), np.uint8),               # 0/255 bytes
    half((20, 20), np.float32),             # floats
    half((20, 20), np.uint8, channels=3),   # RGB: any colour channel set
    half((20, 20), np.uint8, channels=1),   # H x W x 1
    half((10, 10)),                          # coarser grid: stretched over the box, as FiftyOne renders it
])
def test_masks_of_any_dtype_colour_or_size_read_as_the_same_region(fo_isolated, other):
    fo = fo_isolated
    same = dataset(fo, fo.Detection(label="x", bounding_box=BOX, mask=half((20, 20))),
                   fo.Detection(label="x", bounding_box=BOX, mask=other))
    assert alpha(fo, same, distance="mask_iou", threshold=0.99) == 1.0
    # the other half of the box: disjoint -> two unmatched units (before: a 10 x 10 mask sat in the corner)
    flipped = other[:, ::-1].copy()
    apart = dataset(fo, fo.Detection(label="x", bounding_box=BOX, mask=half((20, 20))),
                    fo.Detection(label="x", bounding_box=BOX, mask=flipped))
    assert alpha(fo, apart, distance="mask_iou") == pytest.approx(-0.5)


def test_masks_partly_outside_the_image_are_clipped_and_compared(fo_isolated):
    fo = fo_isolated
    box = [-0.1, 0.9, 0.2, 0.2]             # three quarters outside (before: an internal error)
    full = np.ones((20, 20), bool)
    inside = np.zeros((20, 20), bool)
    inside[:10, 10:] = True                 # exactly the quarter inside the image
    ds = dataset(fo, fo.Detection(label="x", bounding_box=box, mask=full),
                 fo.Detection(label="x", bounding_box=box, mask=inside))
    assert alpha(fo, ds, distance="mask_iou", threshold=0.99) == 1.0


@pytest.mark.parametrize("mask, box, fragment", [
    (None, BOX, "has no instance mask"),
    (np.zeros((20, 20), bool), BOX, "no area inside the image"),
    (np.ones((20, 20), bool), [1.2, 0.1, 0.2, 0.2], "no area inside the image"),
    (np.ones((2, 20, 20), bool), BOX, "is not an image"),
])
def test_masks_that_cannot_be_compared_are_refused_naming_the_label(fo_isolated, mask, box, fragment):
    fo = fo_isolated
    good = fo.Detection(label="x", bounding_box=BOX, mask=np.ones((20, 20), bool))
    bad = fo.Detection(label="x", bounding_box=box, mask=mask)
    ds = dataset(fo, good, bad)
    with pytest.raises(Exception, match=f"raters_b, label {bad.id}: .*{fragment}"):
        alpha(fo, ds, distance="mask_iou")
    assert alpha(fo, ds) == 1.0 if box == BOX else True   # the boxes alone are still compared


def test_polylines_short_rings_dropped_and_areas_must_exist(fo_isolated):
    fo = fo_isolated
    sq = [[0.1, 0.1], [0.5, 0.1], [0.5, 0.5], [0.1, 0.5]]
    bow = [[0.1, 0.1], [0.5, 0.5], [0.5, 0.1], [0.1, 0.5]]
    two = [[[0.1, 0.1], [0.3, 0.3], [0.1, 0.5]], [[0.5, 0.1], [0.5, 0.5], [0.3, 0.3]]]
    same = dataset(fo, fo.Polyline(label="x", points=[bow], closed=False, filled=False),
                   fo.Polyline(label="x", points=two, closed=True, filled=True), "Polylines")
    assert alpha(fo, same, threshold=0.99) == 1.0           # a bow-tie is its two triangles
    extra = dataset(fo, fo.Polyline(label="x", points=[sq]),
                    fo.Polyline(label="x", points=[sq, [[0.9, 0.9], [0.95, 0.95]]]), "Polylines")
    assert alpha(fo, extra, threshold=0.99) == 1.0          # a 2-point shape beside a region adds nothing
    line = fo.Polyline(label="x", points=[[[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]]])
    flat = dataset(fo, fo.Polyline(label="x", points=[sq]), line, "Polylines")
    with pytest.raises(Exception, match=f"raters_b, label {line.id}: polyline encloses no area"):
        alpha(fo, flat)
