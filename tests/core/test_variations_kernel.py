"""The whole-chunk variation kernel (kalos_core.variations.kernel) gives exactly the per-image path's
result: every count, every label's type, partners and IoU, dict keys in the same order."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import Annotation, MultiRaterDataset, load_coco, make_image
from kalos_core.columns import AnnotationColumns
from kalos_core.geometry import get_distance
from kalos_core.progress import run_steps
from kalos_core.variations import VariationConfig, variation_steps
from kalos_core.variations import kernel
from tests.core.helpers import columnar, datasets, same


def both(ds, config, listed=None):
    fast = run_steps(variation_steps(ds, config))
    ref = run_steps(variation_steps(listed or ds, config, kernel=False))
    return fast.to_dict(include_labels=True), ref.to_dict(include_labels=True)


def assert_kernel_equals_per_image(ds, config, listed=None):
    assert kernel.applies(ds.images, get_distance(ds.kind, config.distance))
    fast, ref = both(ds, config, listed)
    same(fast, ref, "result")


configs = st.builds(
    lambda ts, t, distance, merge, reference: VariationConfig(thresholds=ts, threshold=t, distance=distance,
                                                              merge=merge, reference=reference),
    st.sampled_from([(0.5,), (0.3, 0.75), (0.1, 0.5, 0.9), (0.5, 0.55, 0.6, 0.95)]),
    st.sampled_from([None, 0.5, 0.3]), st.sampled_from(["iou", "giou"]), st.booleans(),
    st.sampled_from([None, "r1", "r3"]))


@settings(max_examples=150, deadline=None)
@given(datasets(), configs)
def test_kernel_equals_per_image_path_on_random_data(ds, config):
    if config.reference is not None and config.reference not in {r for im in ds.images for r in im.raters}:
        with pytest.raises(ValueError, match="is not a rater"):   # refused before either path runs
            run_steps(variation_steps(columnar(ds), config))
        return
    assert_kernel_equals_per_image(columnar(ds), config, listed=ds)


def test_kernel_types_a_hand_checked_image():
    """Two raters: a1 = b1; a2 is the box that b drew as two halves b2, b3.
    a1 = b1 (agreed, IoU 1); a2 with the halves b2, b3 of the same class (merged: each half alone
    has IoU 0.5 < 0.6); a3 alone (missed by b, the reference rater being a)."""
    anns = [Annotation("a1", "a", 1, (0, 0, 10, 10)), Annotation("b1", "b", 1, (0, 0, 10, 10)),
            Annotation("a2", "a", 1, (50, 50, 20, 10)), Annotation("b2", "b", 1, (50, 50, 10, 10)),
            Annotation("b3", "b", 1, (60, 50, 10, 10)), Annotation("a3", "a", 2, (0, 80, 5, 5))]
    ds = MultiRaterDataset([make_image("im", 100, 100, ["a", "b"], anns)], {1: "x", 2: "y"}, "box")
    res = run_steps(variation_steps(columnar(ds), VariationConfig(thresholds=(0.6,))))
    assert {k: (v.type, v.partners, v.iou) for k, v in res.labels.items()} == {
        "a1": ("agreed", ("b1",), 1.0), "b1": ("agreed", ("a1",), 1.0),
        "a2": ("merged", ("b2", "b3"), 1.0), "b2": ("merged", ("a2",), 1.0), "b3": ("merged", ("a2",), 1.0),
        "a3": ("missed", (), None)}
    assert res.counts["0.6"] == {"agreed": 2, "merged": 3, "wrong_class": 0, "merged_wrong_class": 0,
                                 "missed": 1, "additional": 0}


def test_kernel_serves_only_columnar_boxes_with_an_elementwise_distance():
    ds = columnar(MultiRaterDataset([make_image(0, 10, 10, ["a", "b"], [Annotation(1, "a", 1, (0, 0, 2, 2))])],
                                    {1: "x"}, "box"))
    assert kernel.applies(ds.images, get_distance("box", "iou"))
    assert not kernel.applies(ds.images, get_distance("box", "centroid"))
    listed = MultiRaterDataset([make_image(0, 10, 10, ["a", "b"], list(ds.images[0].annotations))], {1: "x"}, "box")
    assert not kernel.applies(listed.images, get_distance("box", "iou"))


def test_kernel_equals_per_image_path_on_lvis(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    assert all(isinstance(im.annotations, AnnotationColumns) for im in ds.images)
    for config in (VariationConfig(), VariationConfig(thresholds=(0.3, 0.6), merge=False, distance="giou")):
        assert_kernel_equals_per_image(ds, config)
