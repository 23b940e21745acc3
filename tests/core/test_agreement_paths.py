"""The batched pipeline (kalos_core.agreement) equals the one-α-per-matrix reference path
(tests/core/helpers/agreement_reference.py) on random data and on real files, whatever the chunking."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, load_coco, make_image
from kalos_core.agreement import agreement_steps, compute_agreement
from kalos_core.coincidence import AlphaSums, group_sums
from kalos_core.demo_data import build_demo
from kalos_core.progress import run_steps
from kalos_core.reliability import Cells, alpha
from tests.core.helpers import assert_same
from tests.core.helpers.agreement_reference import reference_agreement

ALL = AgreementConfig(lsa_thresholds=(0.3, 0.7), bootstrap=50)


values = st.one_of(st.just(np.nan), st.integers(-1, 3).map(float))
matrices = st.integers(1, 4).flatmap(
    lambda r: st.lists(st.lists(values, min_size=r, max_size=r), min_size=0, max_size=6))


@settings(max_examples=150, deadline=None)
@given(st.lists(matrices, min_size=1, max_size=5))
def test_batched_alpha_equals_alpha_of_each_matrix(columns_per_group):
    cells = [Cells.from_matrix(np.array(cols, dtype=float).T) if cols else Cells.from_matrix(np.zeros((1, 0)))
             for cols in columns_per_group]
    units, vals, groups, offset = [], [], [], 0
    for g, c in enumerate(cells):
        units.append(c.unit + offset)
        vals.append(c.value)
        groups.append(np.full(c.n_units, g))
        offset += c.n_units
    gs = group_sums(np.concatenate(units), np.concatenate(vals), np.concatenate(groups), len(cells))
    got = gs.alpha()
    for g, c in enumerate(cells):
        assert abs(got[g] - alpha(c)) <= 1e-12
    union = AlphaSums()
    for s in gs.by_key(list(range(len(cells)))).values():
        union.add(s)
    assert abs(union.alpha() - alpha(Cells.concat(cells))) <= 1e-12


box = st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(3, 30), st.integers(3, 30), st.integers(1, 3))


@st.composite
def datasets(draw):
    images = []
    for i in range(draw(st.integers(1, 4))):
        raters = [f"r{k}" for k in draw(st.sets(st.integers(0, 4), min_size=2 if i == 0 else 1, max_size=4))]
        anns = []
        for r in raters:
            for x, y, w, h, c in draw(st.lists(box, max_size=4)):
                anns.append(Annotation(f"{i}-{len(anns)}", r, c, (x, y, w, h)))
        images.append(make_image(i, 100, 100, raters, anns))
    return MultiRaterDataset(images, {1: "a", 2: "b", 3: "c"}, "box")


@settings(max_examples=60, deadline=None)
@given(datasets(), st.integers(1, 3))
def test_fast_path_equals_reference_on_random_data(ds, chunk):
    ref = reference_agreement(ds, ALL).to_dict(include_labels=True)
    fast = run_steps(agreement_steps(ds, ALL, chunk_size=chunk)).to_dict(include_labels=True)
    assert_same(fast, ref)


def test_alpha_at_zero_up_to_summation_noise_reads_the_same_band():
    """Found by hypothesis: the batched sums give α = -8.4e-17 where the reference gives 0.0;
    the interpretation must not flip from "weak" to "systematic disagreement"."""
    spec = [("r2", 1), ("r2", 1), ("r2", 2), ("r2", 3), ("r3", 1), ("r3", 2), ("r3", 2), ("r3", 3)]
    anns = [Annotation(f"0-{k}", r, c, (0, 0, 3, 3)) for k, (r, c) in enumerate(spec)]
    ds = MultiRaterDataset([make_image(0, 100, 100, ("r0", "r1", "r2", "r3"), anns)], {1: "a", 2: "b", 3: "c"}, "box")
    ref = reference_agreement(ds, ALL).to_dict(include_labels=True)
    fast = run_steps(agreement_steps(ds, ALL, chunk_size=1)).to_dict(include_labels=True)
    assert abs(fast["mean_alpha"]) < 1e-12 and ref["interpretation"] == fast["interpretation"] == "weak"
    assert_same(fast, ref)


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("fastdemo"), n_images=30, seed=1, with_images=False)


@pytest.mark.parametrize("task", ["bbox", "segm"])
def test_fast_path_equals_reference_on_demo(demo_file, task):
    ds = load_coco(demo_file, task)
    ref = reference_agreement(ds, ALL).to_dict(include_labels=True)
    for chunk in (1, 7, 1000):
        assert_same(run_steps(agreement_steps(ds, ALL, chunk_size=chunk)).to_dict(include_labels=True), ref)


@pytest.mark.realdata
@pytest.mark.parametrize("task, mean, global_", [("bbox", 0.6889, 0.6483), ("segm", 0.7030, 0.6521)])
def test_fast_path_equals_reference_on_lvis(lvis_subset_path, task, mean, global_):
    ds = load_coco(lvis_subset_path, task)
    cfg = AgreementConfig(lsa_thresholds=(0.3, 0.7), bootstrap=100)
    ref = reference_agreement(ds, cfg).to_dict(include_labels=True)
    fast = compute_agreement(ds, cfg)
    assert round(fast.mean_alpha, 4) == mean and round(fast.global_alpha, 4) == global_
    assert_same(fast.to_dict(include_labels=True), ref)
    assert_same(compute_agreement(ds, cfg, workers=2).to_dict(include_labels=True), ref)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1, 5), min_size=1, max_size=60), st.sampled_from([1, 10**9]), st.integers(1, 50))
def test_counting_shortcuts_equal_np_unique(values, scale, n_keys_factor):
    """group_sums counts instead of sorting when values / keys span a short range; both ways
    give np.unique's answer (values scaled by 1e9 take the sorting way)."""
    from kalos_core.coincidence import _sum_by_key, value_codes

    v = np.array(values, np.int64) * scale
    codes, code = value_codes(v)
    want_codes, want_code = np.unique(v, return_inverse=True)
    assert np.array_equal(codes, want_codes) and np.array_equal(code, want_code.reshape(-1))
    keys = np.abs(np.array(values, np.int64)) * n_keys_factor
    weight = np.arange(len(keys), dtype=float) % 3          # zero weights keep their key
    for n_keys in (int(keys.max()) + 1, 10**7):
        distinct, total = _sum_by_key(keys, weight, n_keys)
        want, inverse = np.unique(keys, return_inverse=True)
        assert np.array_equal(distinct, want)
        assert np.array_equal(total, np.bincount(inverse.reshape(-1), weights=weight))
