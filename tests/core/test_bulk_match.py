"""The chunk-wide matcher (kalos_core.agreement.bulk_match) equals ImageProblem.match request by request."""

from itertools import combinations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, make_image
from kalos_core.agreement import agreement_steps
from kalos_core.agreement.bulk_match import match_requests
from kalos_core.matching import get_cost, get_solver
from kalos_core.matching.solvers import greedy_on_sorted_pairs
from kalos_core.agreement.problem import prepare_image
from kalos_core.progress import run_steps

from tests.core.helpers import assert_same
from tests.core.helpers.agreement_reference import reference_agreement


def _image(k, rng, n_raters, n_boxes, assigned_classes=False):
    raters = [f"r{r}" for r in range(n_raters)]
    anns = []
    base = rng.uniform(0, 60, (n_boxes, 2))
    for a in range(n_boxes * n_raters):
        r = int(rng.integers(n_raters))
        x, y = base[a % n_boxes] + rng.integers(-3, 4, 2)       # integer jitter: exact IoU ties
        w, h = rng.integers(5, 12, 2)
        anns.append(Annotation(f"{k}-{a}", raters[r], int(rng.integers(1, 4)), (float(x), float(y), float(w), float(h))))
    keep = int(rng.integers(0, len(anns) + 1))
    extra = {"rater_classes": {raters[0]: frozenset({1, 2})}} if assigned_classes else {}
    return make_image(k, 100, 100, raters, anns[:keep], **extra)


def _requests(ips, thresholds, rng):
    out = []
    for k, ip in enumerate(ips):
        out.append((k, thresholds[0], None, None))
        for t in thresholds[1:]:
            out.append((k, t, None, None))
        rater = ip.problem.rater
        for r in range(ip.n_rows):
            out.append((k, thresholds[0], rater != r, np.array([x for x in range(ip.n_rows) if x != r], np.int64)))
        for p, q in combinations(range(ip.n_rows), 2):
            out.append((k, thresholds[-1], (rater == p) | (rater == q), np.array([p, q])))
        if ip.problem.n:
            out.append((k, thresholds[0], rng.random(ip.problem.n) < 0.5, None))
    return out


def _same(got, want):
    (u1, c1), (u2, c2) = got, want
    assert np.array_equal(u1, u2)
    assert c1.n_units == c2.n_units
    for name in ("row", "unit", "value"):
        a, b = getattr(c1, name), getattr(c2, name)
        assert a.dtype == np.int64 or len(a) == 0, name
        assert np.array_equal(a, b), name


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 4), st.sampled_from(["soft", "neg"]),
       st.sampled_from([(0.5,), (0.5, 0.3), (0.4, 0.7, 0.1)]))
def test_bulk_equals_one_by_one(seed, n_images, n_raters, cost_name, thresholds):
    rng = np.random.default_rng(seed)
    spec = AgreementConfig().distance_spec("box")
    cost, solver = get_cost(cost_name), get_solver("greedy")
    floor = min(thresholds)
    ips = [prepare_image(_image(k, rng, n_raters, int(rng.integers(0, 7)), assigned_classes=(k == 2)), spec, floor)
           for k in range(n_images)]
    reqs = _requests(ips, thresholds, rng)
    got = match_requests(ips, reqs, solver, cost)
    assert len(got) == len(reqs)
    for (k, t, keep, rows), g in zip(reqs, got):
        _same(g, ips[k].match(t, solver, cost, keep=keep, rows=rows))


def test_other_solvers_go_one_by_one():
    rng = np.random.default_rng(1)
    spec = AgreementConfig().distance_spec("box")
    ips = [prepare_image(_image(k, rng, 3, 5), spec, 0.5) for k in range(3)]
    reqs = _requests(ips, (0.5,), rng)
    for name in ("shm", "ahc", "mgm"):
        solver, cost = get_solver(name), get_cost("soft")
        for (k, t, keep, rows), g in zip(reqs, match_requests(ips, reqs, solver, cost)):
            _same(g, ips[k].match(t, solver, cost, keep=keep, rows=rows))


def test_greedy_union_known_answer():
    # a-b accepted, then b-c refused (c has b's rater), then c-d accepted: units {0,1}, {2,3}, {4}
    rater = np.array([0, 1, 1, 0, 2])
    units = greedy_on_sorted_pairs(rater, np.array([0, 1, 2]), np.array([1, 2, 3]))
    assert units.tolist() == [0, 0, 1, 1, 2]
    # a later annotation joining an earlier unit takes that unit's label
    units = greedy_on_sorted_pairs(np.array([0, 1, 2, 1]), np.array([0, 2]), np.array([2, 1]))
    assert units.tolist() == [0, 0, 0, 1]


@st.composite
def mixed_datasets(draw):
    """Images with per-rater class assignments, rater sessions and 1-5 rows: every bulk fallback."""
    images = []
    for i in range(draw(st.integers(1, 5))):
        rows = [f"r{k}" for k in draw(st.sets(st.integers(0, 4), min_size=2 if i == 0 else 1, max_size=5))]
        extra = {}
        if draw(st.booleans()):
            extra["rater_classes"] = {rows[0]: frozenset(draw(st.sets(st.integers(1, 3), min_size=1)))}
        if draw(st.booleans()) and len(rows) >= 2:
            extra["row_rater"] = {rows[1]: rows[0]}      # two sessions of one rater
        anns = []
        for r in rows:
            for x, y, w, h, c in draw(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(3, 30),
                                                         st.integers(3, 30), st.integers(1, 3)), max_size=4)):
                anns.append(Annotation(f"{i}-{len(anns)}", r, c, (x, y, w, h)))
        images.append(make_image(i, 100, 100, rows, anns, **extra))
    return MultiRaterDataset(images, {1: "a", 2: "b", 3: "c"}, "box")


@settings(max_examples=40, deadline=None)
@given(mixed_datasets(), st.sampled_from(["greedy", "shm", "ahc", "mgm"]), st.integers(1, 3))
def test_pipeline_equals_reference_with_assignments_sessions_and_solvers(ds, solver, chunk):
    cfg = AgreementConfig(solver=solver, lsa_thresholds=(0.3, 0.7), bootstrap=20)
    ref = reference_agreement(ds, cfg).to_dict(include_labels=True)
    assert_same(run_steps(agreement_steps(ds, cfg, chunk_size=chunk)).to_dict(include_labels=True), ref)


def _plain_greedy_union(rater, i, j):
    """The union step as a plain loop: accept a pair unless its units share a rater; label by first member."""
    unit = list(range(len(rater)))
    for a, b in zip(i.tolist(), j.tolist()):
        ua, ub = unit[a], unit[b]
        members_a = [x for x in range(len(rater)) if unit[x] == ua]
        members_b = [x for x in range(len(rater)) if unit[x] == ub]
        if ua == ub or {rater[x] for x in members_a} & {rater[x] for x in members_b}:
            continue
        for x in members_b:
            unit[x] = ua
    labels: dict = {}
    return np.array([labels.setdefault(u, len(labels)) for u in unit], np.int64)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 25), st.integers(1, 5), st.integers(0, 60))
def test_greedy_union_equals_plain_loop(seed, n, n_raters, m):
    rng = np.random.default_rng(seed)
    rater = rng.integers(0, n_raters, n)
    i, j = (rng.integers(0, max(n, 1), m if n else 0) for _ in range(2))
    assert greedy_on_sorted_pairs(rater, i, j).tolist() == _plain_greedy_union(rater, i, j).tolist()
    big = rater + 70          # rows past the 62-bit masks take the plain Python integers
    assert greedy_on_sorted_pairs(big, i, j).tolist() == _plain_greedy_union(big, i, j).tolist()
