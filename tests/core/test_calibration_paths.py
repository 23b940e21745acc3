"""The fast paths of calibration and Braylan (issue 23) give the very values of the plain ones:
element-wise Do / De nearest distances against whole similarity matrices, the KS statistic on
run-merged CDF steps against every support point, columnar canonical order against the sort."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import Annotation, load_coco, make_image

from kalos_core.calibration import sampling, separation
from kalos_core.calibration.braylan import (_mean_square, annotation_sets, braylan_agreement, set_distances,
                                           set_distances_by_name)
from kalos_core.calibration.engine import default_distances
from kalos_core.calibration.sampling import PreparedCache, build_plan, observe, observe_many, observe_per_image
from kalos_core.calibration.separation import KSData, braylan_sigma
from kalos_core.data import MultiRaterDataset, in_canonical_order
from kalos_core.geometry import Prepared, get_distance
from kalos_core.geometry.registry import _squared_norm, columnar, take_rows


def both_paths(data, seed=0):
    """``{distance: ((do, de) element-wise, (do, de) per image)}`` for every distance with a ``pairs`` form."""
    plan = build_plan(in_canonical_order(data), np.random.default_rng(seed))
    cache = PreparedCache(plan)
    specs = [get_distance(data.kind, name) for name in default_distances(data.kind)]
    together = observe_many(plan, specs, PreparedCache(plan))    # the distances of a kind in one pass (GIoU's IoU)
    out = {}
    for spec in specs:
        if spec.pairs is not None:
            out[spec.name] = observe(plan, spec, cache), observe_per_image(plan, spec, *cache.get(spec))
            assert all(np.array_equal(x, y) for x, y in zip(together[spec.name], out[spec.name][0])), spec.name
    return out


def assert_same(paths, names):
    assert sorted(paths) == sorted(names)
    for name, ((do, de), (do0, de0)) in paths.items():
        assert np.array_equal(do, do0) and np.array_equal(de, de0), name     # bit for bit, not approx


@pytest.mark.realdata
@pytest.mark.parametrize("task, names", [("bbox", ["iou", "giou", "centroid", "centroid_box"]),
                                         ("segm", ["centroid", "centroid_box"])])
def test_elementwise_samples_equal_the_per_image_path_on_lvis(lvis_subset_path, task, names, monkeypatch):
    data = load_coco(lvis_subset_path, task)
    monkeypatch.setattr(sampling, "PAIR_BLOCK", 5000)                   # many blocks
    paths = both_paths(data)
    assert_same(paths, names)
    do, de = paths[names[0]][0]
    assert len(do) == 3521 and (do < 1).mean() > 0.5 and (de == 1).any()


box_xywh = st.tuples(st.sampled_from([0.0, 1.0, 10.0, 33.3, 50.0]), st.sampled_from([0.0, 5.0, 12.5, 50.0]),
                     st.sampled_from([0.0, 1.0, 7.5, 20.0, 60.0]), st.sampled_from([0.0, 3.0, 20.0, 40.0]))


@st.composite
def box_datasets(draw):
    images, aid = [], 0
    for i in range(draw(st.integers(2, 6))):
        raters = ["a", "b", "c"][: draw(st.integers(1, 3))]
        anns = []
        for r in raters:
            for xywh in draw(st.lists(box_xywh, max_size=4)):        # repeated boxes, zero sizes, empty rows
                anns.append(Annotation(aid, r, 1, xywh))
                aid += 1
        size = draw(st.sampled_from([(100, 100), (640, 480), (60, 90)]))
        images.append(make_image(i, *size, raters, anns))
    return MultiRaterDataset(images, {1: "x"}, "box")


@settings(max_examples=60, deadline=None)
@given(data=box_datasets(), block=st.integers(1, 40))
def test_elementwise_samples_equal_the_per_image_path_on_generated_boxes(data, block):
    if sum(len(im.raters) > 1 and len(im.annotations) > 0 for im in data.images) == 0:
        return
    old = sampling.PAIR_BLOCK
    sampling.PAIR_BLOCK = block
    try:
        paths = both_paths(data)
    except ValueError:                                                # no Do pairs or one image: both refuse
        return
    finally:
        sampling.PAIR_BLOCK = old
    assert_same(paths, ["iou", "giou", "centroid", "centroid_box"])


@pytest.mark.parametrize("name", ["centroid", "centroid_box", "iou", "giou"])
def test_pair_forms_equal_the_matrix_entries(name):
    rng = np.random.default_rng(3)
    spec = get_distance("box", name)
    a = spec.prepare(make_image(1, 640, 480, ["a"]), [Annotation(k, "a", 1, tuple(rng.uniform(0, 200, 4)))
                                                      for k in range(7)])
    b = spec.prepare(make_image(2, 100, 300, ["b"]), [Annotation(9, "b", 1, (5.0, 5.0, 0.0, 0.0))] * 2 +
                     [Annotation(k, "b", 1, tuple(rng.uniform(0, 90, 4))) for k in range(5)])
    matrix = spec.similarity(a, b)
    i, j = np.divmod(np.arange(matrix.size), matrix.shape[1])
    assert np.array_equal(spec.pairs(a.take(i), b.take(j)), matrix.ravel())


@pytest.mark.parametrize("name", ["centroid", "centroid_box", "iou", "giou"])
def test_pair_forms_are_symmetric_bit_for_bit(name):
    """Do computes each unordered pair once (sampling.nearest_do): s(a, b) must equal s(b, a) exactly."""
    rng = np.random.default_rng(5)
    spec = get_distance("box", name)
    xywh = rng.uniform(0, 100, (400, 4))
    xywh[::2] = np.round(xywh[::2])                                   # ties: equal areas, equal sides
    xywh[::7, 2:] = xywh[::7, 2:][:, ::-1]
    a = spec.prepare(make_image(1, 640, 480, ["a"]), [Annotation(k, "a", 1, tuple(v)) for k, v in enumerate(xywh)])
    b = spec.prepare(make_image(2, 333, 97, ["b"]), [Annotation(k, "b", 1, tuple(v)) for k, v in enumerate(xywh[::-1])])
    ab, ba = spec.pairs(a, b), spec.pairs(b, a)
    assert np.array_equal(ab, ba) and len(np.unique(ab)) > 30
    if spec.nearest_key is not None:   # the nearest is the largest key, its similarity applied once
        key, similarity = spec.nearest_key
        assert np.array_equal(key(a, b), key(b, a)) and np.array_equal(similarity(key(a, b)), ab)
        order = np.argsort(key(a, b), kind="stable")
        assert np.all(np.diff(similarity(key(a, b))[order]) >= 0)                  # non-decreasing in the key
    assert (spec.nearest_key is not None) == (name != "iou")


def test_centroid_box_equals_its_definition_on_degenerate_boxes():
    """centroid_box tests only the larger area (> 0) before dividing by that box's diagonal: the same bits as the
    published condition (diagonal > 0 and larger area > 0) on zero-width, zero-height, equal-area, inverted and
    NaN boxes, and the clip of its key is its similarity."""
    from kalos_core.geometry.registry import box_centre_area_diagonal, centroid_box_key

    rng = np.random.default_rng(11)
    xyxy = rng.uniform(0, 1, (300, 4))
    xyxy[::3, 2] = xyxy[::3, 0]                                        # zero width
    xyxy[1::5, 3] = xyxy[1::5, 1]                                      # zero height
    xyxy[2::7, 2:] = xyxy[2::7, :2] - 0.1                              # inverted: negative sides, positive area
    xyxy[::11] = np.round(xyxy[::11], 1)                               # equal areas
    xyxy[5::37, 1] = np.nan
    ca, area_a, diag_a = box_centre_area_diagonal(xyxy[:, None], np.array([640.0, 480.0]))
    cb, area_b, diag_b = box_centre_area_diagonal(xyxy[None], np.array([640.0, 480.0]))
    norm = np.where(area_a > area_b, diag_a, np.where(area_b > area_a, diag_b, np.maximum(diag_a, diag_b)))
    dist = np.sqrt(((ca - cb) ** 2).sum(-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        published = np.where((norm > 0) & (np.maximum(area_a, area_b) > 0), 1.0 - dist / norm, 0.0)
        key = centroid_box_key(ca, area_a, diag_a, cb, area_b, diag_b)
    assert (area_a == 0).any() and np.isnan(area_a).any() and (published < 0).any() and (published > 0.5).any()
    assert np.array_equal(_bits(key), _bits(published))
    assert np.array_equal(_bits(np.clip(key, 0.0, 1.0)), _bits(np.clip(published, 0.0, 1.0)))


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, float).view(np.int64)


@pytest.mark.parametrize("name", ["centroid", "centroid_box", "iou", "giou"])
def test_columnar_pairs_equal_row_major_bit_for_bit(name):
    """Calibration keeps box arrays column-major (arrays.columnar; the pair formulas read a coordinate
    at a time): the gathered rows and every similarity must be the very same bits."""
    rng = np.random.default_rng(8)
    spec = get_distance("box", name)
    xywh = np.round(rng.uniform(0, 100, (300, 4)), 1)
    xywh[::9, 2:] = 0.0                                               # empty boxes: the 0 branches
    rows = spec.prepare(make_image(1, 640, 480, ["a"]), [Annotation(k, "a", 1, tuple(v)) for k, v in enumerate(xywh)])
    cols = Prepared(len(rows), **{k: columnar(v) for k, v in rows.arrays.items()})
    assert cols["xyxy"].flags.f_contiguous and not cols["xyxy"].flags.c_contiguous
    q, p = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    assert take_rows(cols["xyxy"], q).flags.f_contiguous
    assert np.array_equal(_bits(take_rows(cols["xyxy"], q)), _bits(rows["xyxy"][q]))
    want = spec.pairs(rows.take_on_use(q), rows.take_on_use(p))
    assert np.array_equal(_bits(spec.pairs(cols.take_on_use(q), cols.take_on_use(p))), _bits(want))
    assert np.array_equal(_bits(sampling.pair_similarity(spec, cols, q, p)), _bits(want))
    assert len(np.unique(want)) > 100


def test_squared_norm_and_braylan_mean_square_are_numpys_reductions_bit_for_bit():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(1000, 2)) * 10.0 ** rng.integers(-8, 8, (1000, 1)), rng.normal(size=(1000, 2))
    assert np.array_equal(_bits(_squared_norm(a, b)), _bits(((a - b) ** 2).sum(-1)))
    assert np.array_equal(_bits(_squared_norm(a[:, None], b[None])), _bits(((a[:, None] - b[None]) ** 2).sum(-1)))
    assert np.array_equal(_bits(_mean_square(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])), _bits(((a - b) ** 2).mean(axis=1)))


def test_do_once_per_pair_with_sessions_and_uneven_rows_equals_the_per_image_path():
    rng = np.random.default_rng(11)
    images, aid = [], 0
    for i in range(40):
        rows = ["a (S1)", "a (S2)", "b", "c"][: 2 + i % 3]
        anns = []
        for r in rows:
            for _ in range(rng.integers(0, 6)):
                anns.append(Annotation(aid, r, 1, tuple(np.round(rng.uniform(0, 60, 4), 1))))
                aid += 1
        images.append(make_image(i, 100, 80, rows, anns, row_rater={"a (S1)": "a", "a (S2)": "a"}))
    data = MultiRaterDataset(images, {1: "x"}, "box")
    plan = build_plan(in_canonical_order(data), np.random.default_rng(0))
    for name in ("iou", "centroid_box"):
        spec = get_distance("box", name)
        cache = PreparedCache(plan)
        do = sampling.nearest_do(plan, [spec], cache.get(spec)[1], cache)[0]
        do0, _ = observe_per_image(plan, spec, *cache.get(spec))
        assert np.array_equal(do, do0) and (do < 1).sum() > 50 and (do == 1).any(), name


def ks_every_point(do, de, groups, multiplicity):
    """``max(0, max(F_Do - F_De))`` evaluated at every distinct value (the definition)."""
    m = np.asarray(multiplicity, float)
    support = np.unique(np.concatenate([do, de]))
    w_do = np.bincount(np.searchsorted(support, do), m[groups], len(support))   # do[k], de[k]: image groups[k]
    w_de = np.bincount(np.searchsorted(support, de), m[groups], len(support))
    if w_do.sum() == 0 or w_de.sum() == 0:
        return float("nan")
    return float(max(0.0, np.max(np.cumsum(w_do) / w_do.sum() - np.cumsum(w_de) / w_de.sum())))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), k=st.integers(1, 120), digits=st.integers(0, 2))
def test_ks_on_merged_steps_equals_ks_at_every_value(seed, n, k, digits):
    rng = np.random.default_rng(seed)
    do, de = np.round(rng.beta(2, 5, k), digits), np.round(rng.beta(5, 2, k), digits)   # ties within and across
    groups = rng.integers(0, n, k)
    ks = KSData(do, de, groups, n)
    ms = np.array([np.ones(n, int)] + [rng.integers(0, 3, n) for _ in range(4)])
    for m, batched in zip(ms, ks.statistics(ms)):          # all resamples at once: the same values
        got, want = ks.statistic(m), ks_every_point(do, de, groups, m)
        assert got == want or (np.isnan(got) and np.isnan(want))
        assert batched == want or (np.isnan(batched) and np.isnan(want))
    assert ks.statistic() == ks_every_point(do, de, groups, np.ones(n))
    for p in (0.05, 0.3):                                  # σ counted on the support = σ searched
        assert ks.sigma(p) == braylan_sigma(do, de, p)


def max_difference_every_step(mass_do, mass_de):
    """The KS bootstrap before the spans (stop 33): every step's CDFs, ``cumsum / total``, and their largest
    difference."""
    with np.errstate(invalid="ignore"):
        f_do, f_de = (np.cumsum(m, axis=0, dtype=np.int64) for m in (mass_do, mass_de))
        return np.max(f_do / f_do[-1] - f_de / f_de[-1], axis=0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.integers(1, 3000), span=st.sampled_from([1, 2, 3, 7, 32, 5000]))
def test_ks_spans_give_the_every_step_maximum_bit_for_bit(seed, steps, span):
    rng = np.random.default_rng(seed)
    # Do mass early, De mass late (a peak to find), ties of whole numbers, resamples without any mass
    ramp = np.linspace(3, 0, steps)[:, None]
    mass_do = rng.poisson(ramp * rng.uniform(0.2, 2, 9), (steps, 9)).astype(np.int32)
    mass_de = rng.poisson(ramp[::-1] * rng.uniform(0.2, 2, 9), (steps, 9)).astype(np.int32)
    mass_do[:, 0], mass_de[:, 1] = 0, 0
    old, separation.SPAN = separation.SPAN, span
    try:
        got = separation._max_difference(mass_do, mass_de)
    finally:
        separation.SPAN = old
    want = max_difference_every_step(mass_do, mass_de)
    assert np.array_equal(_bits(got), _bits(want)) and np.isnan(got[:2]).all()      # NaN bits equal too


def test_ks_support_treats_signed_zeros_and_nans_as_np_unique_does():
    do, de = np.array([0.0, np.nan, 0.5, -0.0]), np.array([-0.0, np.nan, 0.2, np.nan])
    ks = KSData(do, de)
    assert ks.n_points == len(np.unique(np.concatenate([do, de])))      # 0.0 == -0.0, the NaNs one point
    assert ks.sigma(0.5) == braylan_sigma(do, de, 0.5) == 0.5            # P(De < d): 0, 2/4, 2/4, 0
    assert np.isnan(KSData(do, de, np.array([0, 0, 1, 1]), 2).statistics(np.array([[0, 0]]))[0])   # no mass


def test_plan_of_annotations_in_row_order_equals_the_plan_of_any_other_order():
    """build_plan skips its sort where an image's annotations are by row already: the plan is the one of the
    same annotations in another order (rows in the given order), and a rater not assigned is left out."""
    rng = np.random.default_rng(12)
    images = [make_image(i, 300, 200, ["a", "b", "c"],
                         sorted([Annotation(10 * i + k, "abcz"[k % 4], 1, tuple(rng.uniform(0, 80, 4)))
                                 for k in range(int(rng.integers(0, 9)))], key=lambda a: a.rater))
              for i in range(15)]
    mixed = [make_image(im.id, 300, 200, ["a", "b", "c"], sorted(im.annotations, key=lambda a: a.rater, reverse=True))
             for im in images]                                  # rows last to first, each in its order
    sorted_plan = build_plan(MultiRaterDataset(images, {1: "x"}, "box"), np.random.default_rng(0))
    mixed_plan = build_plan(MultiRaterDataset(mixed, {1: "x"}, "box"), np.random.default_rng(0))
    assert any(a.rater == "z" for im in images for a in im.annotations)
    assert all("z" not in [a.rater for a in anns] for anns in sorted_plan.order)
    for field in ("obs_query", "do_group", "de_group", "group_start", "group_end"):
        assert np.array_equal(getattr(sorted_plan, field), getattr(mixed_plan, field)), field
    for x, y in zip(sorted_plan.order, mixed_plan.order):
        assert sorted(a.id for a in x) == sorted(a.id for a in y) and [a.rater for a in x] == [a.rater for a in y]


def test_canonical_order_keeps_columns_already_in_order_and_sorts_the_others():
    from kalos_core.columns import AnnotationColumns
    boxes = np.arange(20.0).reshape(5, 4)
    ordered = AnnotationColumns([3, 7, 1, 2, 9], ("b", "a"), np.array([1, 1, 0, 0, 0]), np.ones(5, int), boxes)
    shuffled = ordered.take(np.array([4, 0, 2, 3, 1]))
    odd = AnnotationColumns([3, 7, 1, 2.0, 9], ("b", "a"), np.array([1, 1, 0, 0, 0]), np.ones(5, int), boxes)
    from kalos_core.data import ImageRecord
    data = MultiRaterDataset([ImageRecord(i, 10.0, 10.0, ("b", "a"), anns) for i, anns in
                              enumerate((ordered, shuffled, odd))], {1: "x"}, "box")
    got = [im.annotations for im in in_canonical_order(data).images]
    assert got[0] is ordered and got[1] is not shuffled
    want = sorted(ordered, key=lambda a: ("ab".index(a.rater), a.id))
    assert [list(g) for g in got] == [want, want, sorted(odd, key=lambda a: ("ab".index(a.rater), a.id))]


@pytest.mark.realdata
def test_columnar_canonical_order_and_braylan_sets_equal_the_per_annotation_reader(lvis_subset_path):
    cols, objs = load_coco(lvis_subset_path, "bbox"), load_coco(lvis_subset_path, "bbox", columnar=False)
    a, b = in_canonical_order(cols), in_canonical_order(objs)
    assert [im.id for im in a.images] == [im.id for im in b.images]
    assert all(list(x.annotations) == list(y.annotations) for x, y in zip(a.images, b.images))
    sa, sb = annotation_sets(cols), annotation_sets(objs)
    for field in ("corners", "start", "count", "item", "do_a", "do_b"):
        assert np.array_equal(getattr(sa, field), getattr(sb, field)), field
    assert braylan_agreement(cols).to_dict() == braylan_agreement(objs).to_dict()


def test_braylan_blocks_do_not_change_a_value(monkeypatch):
    rng = np.random.default_rng(9)
    images = [make_image(i, 300, 200, ["a", "b", "c"],
                         [Annotation(10 * i + k, "abc"[k % 3], 1, tuple(rng.uniform(0, 80, 4)))
                          for k in range(int(rng.integers(0, 9)))]) for i in range(15)]
    sets = annotation_sets(MultiRaterDataset(images, {1: "x"}, "box"))
    whole = {name: set_distances(sets, sets.do_a, sets.do_b, name, True) for name in ("iou", "giou", "l2")}
    monkeypatch.setattr(sampling, "PAIR_BLOCK", 7)
    for name, want in whole.items():
        assert np.array_equal(set_distances(sets, sets.do_a, sets.do_b, name, True), want), name
    floors = {"giou": True, "count": False, "iou": False, "l2": True}
    together = set_distances_by_name(sets, sets.do_a, sets.do_b, floors)     # one gather for all names
    assert sorted(together) == sorted(floors)
    for name, floor in floors.items():
        assert np.array_equal(together[name], set_distances(sets, sets.do_a, sets.do_b, name, floor)), name


@pytest.mark.parametrize("k", [1, 2, 5, 24, 25, 40])
def test_run_max_equals_reduceat_bit_for_bit(k):
    rng = np.random.default_rng(k)
    s = np.round(rng.uniform(-1, 1, 60 * k), 1)          # ties
    s[::7] = -np.inf
    s[5] = np.nan                                         # NaN propagates as in reduceat
    want = np.maximum.reduceat(s, np.arange(0, len(s), k))
    assert np.array_equal(_bits(sampling._run_max(s, k)), _bits(want)) and np.isnan(want[5 // k])


@pytest.mark.parametrize("order", ["C", "F"])
def test_repeated_and_group_rows_gather_what_take_on_use_gathers(order):
    rng = np.random.default_rng(3)
    base = Prepared(30, xyxy=np.asarray(rng.uniform(0, 1, (30, 4)), order=order), area=rng.uniform(0, 1, 30))
    cells = np.array([[3, 4, 5], [10, 11, 12], [20, 21, 22], [27, 28, 29]])
    rows = sampling.GroupRows(cells)
    query, at = np.array([7, 0, 29]), np.array([2, 0, 2])
    a, b = base.take_repeated(query, 3), base.take_group_rows(rows, at)
    a0, b0 = base.take_on_use(np.repeat(query, 3)), base.take_on_use(cells[at].ravel())
    for key in ("xyxy", "area"):
        assert np.array_equal(a[key], a0[key]) and np.array_equal(b[key], b0[key]), key
        assert a[key].flags.f_contiguous == a0[key].flags.f_contiguous == b[key].flags.f_contiguous
    assert len(a) == len(b) == 9
    assert np.array_equal(b.derived("c", lambda p: (p["area"] * 2,))[0], b0.derived("c", lambda p: (p["area"] * 2,))[0])


def test_grid_counts_of_all_resamples_at_once_are_each_resamples_counts_bit_for_bit():
    from kalos_core.calibration.bootstrap import image_resamples
    from kalos_core.calibration.density import Grid, LinearBins
    rng = np.random.default_rng(4)
    groups = np.sort(rng.integers(0, 300, 20_000))                 # many values of a group on one grid point
    values = np.concatenate([rng.beta(2, 9, 15_000), rng.uniform(0, 1, 5_000)])
    bins = LinearBins(values, Grid(0.0, 1.0, 256), groups, 300)
    moments = np.stack([np.bincount(groups, values**p, 300) for p in (0, 1, 2)])   # Scott's rule's sums
    assert np.array_equal(_bits(bins._moments), _bits(moments))
    resamples = image_resamples(300, 40, rng)
    together = bins.counts_of(resamples)
    assert together.shape == (40, 256) and together.flags.c_contiguous
    for m, row in zip(resamples, together):
        assert np.array_equal(_bits(row), _bits(bins.counts(m)))
    assert np.array_equal(_bits(bins.estimate(resamples[3], together[3])[0]), _bits(bins.estimate(resamples[3])[0]))


def test_boxes_prepared_at_once_equal_each_image_prepared():
    from kalos_core.geometry.boxes import prepare_boxes
    rng = np.random.default_rng(6)
    images = [make_image(i, 300 + 7 * i, 200, ["a", "b"],
                         [Annotation(10 * i + k, "ab"[k % 2], 1, tuple(rng.uniform(0, 80, 4)))
                          for k in range(int(rng.integers(0, 5)))]) for i in range(12)]
    plan = build_plan(in_canonical_order(MultiRaterDataset(images, {1: "x"}, "box")), np.random.default_rng(0))
    per_image, everything = sampling._boxes_at_once(plan)
    want = [prepare_boxes(im, anns) for im, anns in zip(plan.dataset.images, plan.order)]
    assert any(len(p) == 0 for p in want) and len(everything) == sum(len(p) for p in want)
    for key in ("xyxy", "scale"):
        assert np.array_equal(_bits(everything[key]), _bits(np.concatenate([p[key] for p in want])))
        assert all(np.array_equal(_bits(got[key]), _bits(p[key])) for got, p in zip(per_image, want))


def test_grid_counts_fall_back_to_one_product_per_resample_where_the_batched_sums_differ(monkeypatch):
    from kalos_core.calibration.density import Grid, LinearBins
    rng = np.random.default_rng(5)
    bins = LinearBins(rng.uniform(0, 1, 500), Grid(0.0, 1.0, 64), np.sort(rng.integers(0, 20, 500)), 20)
    resamples = rng.integers(0, 3, (6, 20))
    plain = LinearBins.counts
    monkeypatch.setattr(LinearBins, "counts", lambda self, m=None: plain(self, m) + 0.5)   # "another rounding"
    assert np.array_equal(bins.counts_of(resamples), np.stack([bins.counts(m) for m in resamples]))
