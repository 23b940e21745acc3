"""The whole-chunk kernel (kalos_core.agreement.chunk_kernel) fills exactly the partial result of the
per-image map step: every field, every matrix's α and sums, in the same order."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, load_coco, make_image
from kalos_core.agreement import chunk_kernel
from kalos_core.agreement import compute_agreement
from kalos_core.columns import AnnotationColumns
from kalos_core.agreement.label_map import LabelMap
from kalos_core.matching import get_solver
from kalos_core.agreement.partial import analyse_chunk, chunk_bounds, enabled_diagnostics, Partial
from tests.core.helpers import columnar, datasets, same
from tests.core.helpers.agreement_reference import reference_agreement


def partials(ds, config, chunk, kernel):
    merged = Partial()
    for start, stop in chunk_bounds(len(ds.images), chunk):
        merged.merge(analyse_chunk(ds.images[start:stop], start, ds.kind, config, len(ds.raters), kernel=kernel))
    return merged


def assert_kernel_equals_per_image(ds, config, chunk=3, listed=None):
    """The kernel on ``ds`` (columns) equals the per-image path on ``listed`` (the same data
    with one Annotation object per box, ordered by annotation_key) or on ``ds``."""
    solver = get_solver(config.solver)
    spec = config.distance_spec(ds.kind)
    assert chunk_kernel.applies(ds.images, spec, solver, enabled_diagnostics(config))
    fast, ref = partials(ds, config, chunk, True), partials(listed or ds, config, chunk, False)
    for name in ("image_ids", "alphas", "counts", "n_units", "single"):
        same(getattr(fast, name), getattr(ref, name), name)
    for what in ("unit", "status"):
        same(dict(LabelMap(fast.labels, what)), dict(LabelMap(ref.labels, what)), what)
    assert list(fast.values) == list(ref.values) and set(fast.sums) == set(ref.sums)
    same(fast.values, ref.values, "values")
    same({k: fast.sums[k] for k in ref.sums}, ref.sums, "sums")


configs = st.builds(
    lambda t, lsa, distance, cost, diag: AgreementConfig(
        threshold=t, lsa_thresholds=lsa, distance=distance, cost=cost, vitality=diag[0], class_difficulty=diag[1],
        collaboration=diag[2], bootstrap=0),
    st.sampled_from([0.0, 0.3, 0.5, 0.75]), st.sampled_from([(), (0.3,), (0.9, 0.1, 0.5)]),
    st.sampled_from(["iou", "giou"]), st.sampled_from(["soft", "neg"]), st.tuples(st.booleans(), st.booleans(),
                                                                                   st.booleans()))


@settings(max_examples=120, deadline=None)
@given(datasets(), configs, st.integers(1, 4))
def test_kernel_equals_per_image_path_on_random_data(ds, config, chunk):
    assert_kernel_equals_per_image(columnar(ds), config, chunk, listed=ds)


def test_kernel_equals_reference_on_a_hand_checked_image():
    """Two raters, one shared box and one box each: 1 agreed unit and 2 unmatched ones.
    Cells (a|b): (1,1), (1,NO), (NO,1) -> α = 1 - 3 * 2 / (2 * 3 ... ) from the reference."""
    anns = [Annotation("a1", "a", 1, (0, 0, 10, 10)), Annotation("b1", "b", 1, (1, 0, 10, 10)),
            Annotation("a2", "a", 1, (50, 50, 10, 10)), Annotation("b2", "b", 1, (0, 60, 5, 5))]
    ds = columnar(MultiRaterDataset([make_image("im", 100, 100, ["a", "b"], anns)], {1: "x"}, "box"))
    result = compute_agreement(ds, AgreementConfig(bootstrap=0))
    assert result.n_units == 3
    assert result.status_of == {"a1": "agreed", "b1": "agreed", "a2": "unmatched", "b2": "unmatched"}
    # coincidences: unit 1 (1,1): o_11 += 2; units 2, 3 (1, NO): o_1N = o_N1 += 2 -> n = 6, n_1 = 4, n_N = 2
    # α = 1 - (n - 1) * D_o / D_e = 1 - 5 * 4 / (2 * 4 * 2) = -0.25
    assert result.per_image_alpha["im"] == pytest.approx(-0.25, abs=1e-15)
    ref = reference_agreement(ds, AgreementConfig(bootstrap=0))
    assert result.per_image_alpha == ref.per_image_alpha


def test_kernel_serves_only_what_it_can():
    ds = columnar(MultiRaterDataset([make_image(0, 10, 10, ["a", "b"], [Annotation(1, "a", 1, (0, 0, 2, 2))])],
                                    {1: "x"}, "box"))
    cfg = AgreementConfig()
    diags = enabled_diagnostics(cfg)
    assert chunk_kernel.applies(ds.images, cfg.distance_spec("box"), get_solver("greedy"), diags)
    assert not chunk_kernel.applies(ds.images, cfg.distance_spec("box"), get_solver("shm"), diags)
    centroid = AgreementConfig(distance="centroid").distance_spec("box")       # an element-wise form: served
    assert chunk_kernel.applies(ds.images, centroid, get_solver("greedy"), diags)
    assert not chunk_kernel.applies(ds.images, replace(centroid, pairs=None), get_solver("greedy"), diags)
    listed = [replace(ds.images[0], annotations=list(ds.images[0].annotations))]
    assert not chunk_kernel.applies(listed, cfg.distance_spec("box"), get_solver("greedy"), diags)


@pytest.mark.realdata
def test_kernel_equals_per_image_path_on_lvis(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    assert all(isinstance(im.annotations, AnnotationColumns) for im in ds.images)
    for config in (AgreementConfig(lsa_thresholds=(0.3, 0.7), bootstrap=0),
                   AgreementConfig(threshold=0.3, distance="giou", cost="neg", bootstrap=0)):
        assert_kernel_equals_per_image(ds, config, chunk=64)


def test_kernel_equals_per_image_path_with_rater_sessions():
    """Intra-rater sessions ("alice (S1)", "alice (S2)"): the kernel asks the diagnostics once per
    distinct (rows, base raters), and still matches every image as the per-image path does."""
    rng = np.random.default_rng(3)
    rows = ["alice (S1)", "alice (S2)", "bob"]
    images = []
    for i in range(5):
        anns = [Annotation(f"{i}-{k}", rows[k % 3], int(rng.integers(1, 3)),
                           tuple(float(v) for v in (*rng.integers(0, 60, 2), *rng.integers(5, 30, 2))))
                for k in range(9)]
        images.append(make_image(i, 100, 100, rows, anns, row_rater={r: r.split(" (")[0] for r in rows}))
    ds = MultiRaterDataset(images, {1: "a", 2: "b"}, "box")
    cfg = AgreementConfig(lsa_thresholds=(0.3,), bootstrap=0)
    assert cfg.intra_rater
    assert_kernel_equals_per_image(columnar(ds), cfg, chunk=2, listed=ds)
    assert compute_agreement(columnar(ds), cfg).intra_rater == compute_agreement(ds, cfg).intra_rater != {}
