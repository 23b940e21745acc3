"""Every registered distance, cost and solver obeys the contract of its registry.

These loop over the registries, so a newly registered entry is checked without
editing this file (a new geometry kind needs one generator in GEOMETRY).
"""

import numpy as np
import pytest

from kalos_core.data import Annotation, make_image
from kalos_core.geometry import DISTANCES
from kalos_core.matching import COSTS, SOLVERS, MatchProblem

W, H = 120, 90


def _box(rng):
    x, y = rng.uniform(0, 80), rng.uniform(0, 60)
    return (x, y, rng.uniform(4, 40), rng.uniform(4, 30))


def _polygon(rng):
    x, y, w, h = _box(rng)
    return [[x, y, x + w, y, x + w * rng.uniform(0.6, 1), y + h, x, y + h * rng.uniform(0.6, 1)]]


def _keypoints(rng):
    pts = []
    for _ in range(17):
        v = 2.0 if rng.random() > 0.2 else 0.0
        pts += [rng.uniform(0, W) if v else 0.0, rng.uniform(0, H) if v else 0.0, v]
    pts[2] = 2.0        # at least one visible joint
    return pts


def _voxels(rng):
    c = rng.integers(0, 20, 3)
    return (c + rng.integers(0, 4, (rng.integers(3, 12), 3))).tolist()


def _cuboids(rng):
    c, d = rng.uniform(0, 6, 3), rng.uniform(1, 4, 3)
    return (*c, *d, *rng.uniform(-0.4, 0.4, 2), rng.uniform(-3, 3))


#: geometry kind -> (random geometry, optional bbox)
GEOMETRY = {"box": _box, "polygon": _polygon, "rle": _polygon, "keypoints": _keypoints, "voxels": _voxels,
            "cuboids": _cuboids}


def _annotations(kind, n=7, seed=0):
    rng = np.random.default_rng(seed)
    anns = []
    for k in range(n):
        geom = GEOMETRY[kind](rng)
        bbox = _box(rng) if kind == "keypoints" else None
        anns.append(Annotation(k, f"r{k % 3}", 1 + k % 2, geom, bbox))
    return anns


def test_every_kind_has_a_geometry_generator():
    assert {kind for kind, _ in DISTANCES} <= set(GEOMETRY)


@pytest.mark.parametrize("kind,name", sorted(DISTANCES))
def test_distance_is_a_symmetric_similarity_in_the_unit_interval_and_one_on_itself(kind, name):
    spec = DISTANCES[(kind, name)]
    anns = _annotations(kind)
    image = make_image(0, W, H, ["r0", "r1", "r2"], anns)
    p = spec.prepare(image, anns)
    s = np.asarray(spec.similarity(p, p), float)
    assert s.shape == (len(anns), len(anns))
    assert np.all(np.isfinite(s)) and s.min() >= 0.0 and s.max() <= 1.0 + 1e-12
    assert np.allclose(s, s.T, atol=1e-9)
    assert np.allclose(np.diag(s), 1.0)
    # a subset prepared on its own gives the same entries (no hidden dependence on the batch)
    q = spec.prepare(image, anns[:3])
    assert np.allclose(spec.similarity(q, p), s[:3], atol=1e-9)


@pytest.mark.parametrize("name", sorted(COSTS))
def test_cost_decreases_with_similarity(name):
    cost = COSTS[name]
    sim = np.array([0.2, 0.5, 0.9])
    for same in (np.ones(3, bool), np.zeros(3, bool)):
        assert np.all(np.diff(cost(sim, same)) < 0)


def _random_problem(seed, n=14, raters=4):
    rng = np.random.default_rng(seed)
    sim = rng.uniform(0, 1, (n, n))
    sim = (sim + sim.T) / 2
    np.fill_diagonal(sim, 1.0)
    return MatchProblem(sim, rng.integers(0, raters, n), rng.integers(0, 3, n))


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("cost", sorted(COSTS))
@pytest.mark.parametrize("seed", range(5))
def test_solver_units_hold_one_annotation_per_rater_and_only_candidate_pairs(solver, cost, seed):
    problem, threshold = _random_problem(seed), 0.5
    units = np.asarray(SOLVERS[solver](problem, threshold, COSTS[cost]))
    assert units.shape == (problem.n,)
    for u in np.unique(units):
        members = np.flatnonzero(units == u)
        raters = problem.rater[members]
        assert len(set(raters)) == len(raters), f"unit {u} holds two annotations of one rater"
        # every pair in a unit is a candidate (AHC, complete linkage) or linked through candidates
        if len(members) == 2:
            assert problem.sim[members[0], members[1]] >= threshold
    # units are numbered 0..U-1 in order of first appearance
    seen = list(dict.fromkeys(units.tolist()))
    assert seen == list(range(len(seen)))
