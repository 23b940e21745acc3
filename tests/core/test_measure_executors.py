"""Variations, consensus, convergence, calibrate and braylan on every executor and chunking: the same
result, byte for byte (the agreement's own executors are tested in test_executors.py); a bad executor
or worker count fails before any work in every measure that takes them."""

import json

import pytest

from kalos_core import load_coco
from kalos_core.agreement import agreement_steps
from kalos_core.calibration import CalibrationConfig, calibrate_steps
from kalos_core.calibration.braylan import BraylanConfig, braylan_steps
from kalos_core.cli import main
from kalos_core.consensus import ConsensusConfig
from kalos_core.consensus.engine import consensus_steps
from kalos_core.convergence import ConvergenceConfig
from kalos_core.convergence.engine import compute_convergence, convergence_steps
from kalos_core.demo_data import build_demo, make_synthetic_boxes
from kalos_core.io.jsonwrite import dumps_indented
from kalos_core.measure import MEASURE_MODULES, MeasureData, get_measure
from kalos_core.progress import run_steps
from kalos_core.variations import VariationConfig
from kalos_core.variations.engine import variation_steps

VAR = VariationConfig(thresholds=(0.3, 0.5, 0.7))


@pytest.fixture(scope="module")
def boxes(tmp_path_factory):
    """Column-held boxes (the kernels' path): 40 images x 3 raters."""
    path = tmp_path_factory.mktemp("mex") / "boxes.json"
    path.write_text(json.dumps(make_synthetic_boxes(n_images=40, n_raters=3, objects_per_image=6, seed=3,
                                                    decimals=None)))
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Objects with polygons (the per-image path): the demo scenes."""
    return load_coco(build_demo(tmp_path_factory.mktemp("mexd"), n_images=12, seed=5, with_images=False), "segm")


def variations_json(ds, **kw) -> str:
    return dumps_indented(run_steps(variation_steps(ds, VAR, **kw)).to_dict(include_labels=True))


def consensus_json(ds, **kw) -> str:
    result = run_steps(consensus_steps(ds, ConsensusConfig(), **kw))
    return dumps_indented(result.to_dict()) + dumps_indented(result.to_coco(ds))


@pytest.mark.parametrize("run", [variations_json, consensus_json])
@pytest.mark.parametrize("source", ["boxes", "demo"])
def test_chunks_and_processes_change_nothing(run, source, request):
    ds = request.getfixturevalue(source)
    ds = load_coco(ds, "bbox") if source == "boxes" else ds
    alone = run(ds)
    assert '"agreed"' in alone or '"support"' in alone          # a result with content, not an empty one
    assert run(ds, workers=2, executor="processes") == alone
    assert run(ds, workers=3, executor="local") == alone
    if run is variations_json:
        assert run(ds, chunk_size=1) == alone and run(ds, chunk_size=7) == alone


def test_dask_two_workers_give_the_local_result(boxes):
    distributed = pytest.importorskip("dask.distributed")
    ds = load_coco(boxes, "bbox")
    expected = variations_json(ds), consensus_json(ds)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        got = variations_json(ds, workers=2, executor="dask"), consensus_json(ds, workers=2, executor="dask")
    assert got == expected


@pytest.mark.parametrize("measure", ["variations", "consensus", "calibrate", "braylan"])
def test_command_line_workers_write_the_same_file(boxes, tmp_path, measure):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main([measure, str(boxes), "--output", str(one)]) == 0
    assert main([measure, str(boxes), "--workers", "2", "--executor", "processes", "--output", str(two)]) == 0
    assert one.read_bytes() == two.read_bytes()


#: the registry's measures with ``--workers`` / ``--executor`` (a new one is covered by declaring them)
EXECUTOR_MEASURES = [n for n in MEASURE_MODULES if any("--executor" in o.flags for o in get_measure(n).cli_options)]
BAD = [({"executor": "threads"}, "unknown executor 'threads'; known: local, processes, dask"),
       ({"workers": -1}, r"workers must be an integer >= 0 \(0 = all cores\), got -1"),
       ({"workers": 1.5}, "workers must be an integer >= 0 .*got 1.5")]


class Untouchable:
    """A data set whose every read is work done before the executor was checked."""

    def __getattr__(self, name):
        raise AssertionError(f"the data set's {name!r} was read before the executor was checked")


def test_the_measures_that_map_chunks_all_declare_the_executor_options():
    assert set(EXECUTOR_MEASURES) == {"agreement", "variations", "consensus", "convergence", "calibrate", "braylan",
                                     "video"}


@pytest.mark.parametrize("options, message", BAD)
@pytest.mark.parametrize("name", EXECUTOR_MEASURES)
def test_a_bad_executor_or_worker_count_fails_before_any_work(name, options, message):
    """Through the registry (the command line, the operators, Recompute): when the steps are made,
    before the data set is read at all."""
    measure = get_measure(name)
    with pytest.raises(ValueError, match=message):
        measure.steps(MeasureData(Untouchable(), options=options), measure.config())


@pytest.mark.parametrize("options, message", BAD)
@pytest.mark.parametrize("steps", [lambda ds, **kw: agreement_steps(ds, **kw),
                                   lambda ds, **kw: variation_steps(ds, VAR, **kw),
                                   lambda ds, **kw: consensus_steps(ds, ConsensusConfig(), **kw),
                                   lambda ds, **kw: convergence_steps(ds, ConvergenceConfig(bootstrap=5), **kw),
                                   lambda ds, **kw: calibrate_steps(ds, CalibrationConfig(bootstrap=5), **kw),
                                   lambda ds, **kw: braylan_steps(ds, BraylanConfig(), **kw)],
                         ids=["agreement", "variations", "consensus", "convergence", "calibrate", "braylan"])
def test_the_engines_refuse_it_before_their_first_step(boxes, steps, options, message):
    """Called directly: the first step already fails (convergence: before its first rater pair)."""
    with pytest.raises(ValueError, match=message):
        next(steps(load_coco(boxes, "bbox"), **options))


def convergence_json(ds, task="bbox", **kw) -> str:
    result = compute_convergence(ds, ConvergenceConfig(task=task, bootstrap=30, alpha=True), **kw)
    result.seconds = {}
    return dumps_indented(result.to_dict())


def test_convergence_bootstrap_chunks_processes_and_dask_change_no_byte(boxes):
    ds = load_coco(boxes, "bbox")
    alone = convergence_json(ds)
    assert '"ci_normal"' in alone and "NaN" not in alone.split('"bootstrap"')[1][:200]
    assert convergence_json(ds, chunk_size=1) == alone and convergence_json(ds, chunk_size=7) == alone
    assert convergence_json(ds, workers=2, executor="processes", chunk_size=7) == alone
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        assert convergence_json(ds, workers=2, executor="dask", chunk_size=7) == alone


def test_convergence_on_polygons_in_two_processes_changes_no_byte(demo):
    """The directions' COCO evaluations (pycocotools' path for polygons) and α in worker processes."""
    alone = convergence_json(demo, "segm")
    assert '"alpha"' in alone and '"ci_normal"' in alone
    assert convergence_json(demo, "segm", workers=2, executor="processes") == alone


def test_convergence_command_line_workers_write_the_same_file(boxes, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["convergence", str(boxes), "--bootstrap", "20", "--output", str(one)]) == 0
    assert main(["convergence", str(boxes), "--bootstrap", "20", "--workers", "2", "--executor", "processes",
                 "--output", str(two)]) == 0
    strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "seconds"}
    assert strip(one) == strip(two) and strip(one)["bootstrap"]


def calibrate_json(ds, **kw) -> str:
    result = run_steps(calibrate_steps(ds, CalibrationConfig(bootstrap=20), **kw))
    return dumps_indented(result.to_dict())


def braylan_json(ds, **kw) -> str:
    return "".join(dumps_indented(run_steps(braylan_steps(ds, BraylanConfig(convention=c), **kw)).to_dict())
                   for c in ("braylan", "midrank"))


@pytest.mark.parametrize("run, source", [(calibrate_json, "boxes"), (calibrate_json, "demo"), (braylan_json, "boxes")])
def test_calibrate_and_braylan_on_processes_and_dask_change_no_byte(run, source, request):
    """Calibrate's distances (chunks of images; the demo's polygons mix the pairwise and per-image paths) and
    bootstraps (one per distance), Braylan's set distances (chunks of pairs)."""
    ds = request.getfixturevalue(source)
    ds = load_coco(ds, "bbox") if source == "boxes" else ds
    alone = run(ds)
    assert '"ks_ci"' in alone or '"auc"' in alone
    assert run(ds, workers=2, executor="processes") == alone
    assert run(ds, workers=3, executor="local") == alone
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        assert run(ds, workers=2, executor="dask") == alone


def test_calibrate_distances_over_spans_of_images_are_the_whole_pass(boxes):
    """Each chunk of images computes the Do / De values of its observations alone (Do's reverse pairs stay on
    their image): spans of 1, 0 and uneven numbers of images concatenate to the one-pass values, bit for bit."""
    import numpy as np

    from kalos_core.calibration.engine import default_distances
    from kalos_core.calibration.sampling import (PreparedCache, build_plan, observation_span, observe_pairs,
                                                 pair_groups)
    from kalos_core.data import in_canonical_order
    from kalos_core.geometry import get_distance

    ds = load_coco(boxes, "bbox")
    plan = build_plan(in_canonical_order(ds), np.random.default_rng(4))
    [group] = pair_groups([get_distance("box", n) for n in default_distances("box")])
    whole = observe_pairs(plan, group, PreparedCache(plan))
    cuts = [0, 1, 7, 7, 20, 40]
    spans = [observation_span(plan, a, b) for a, b in zip(cuts, cuts[1:])]
    assert spans[2][0] == spans[2][1] and spans[0][1] > 0 and spans[-1][1] == plan.n_observations
    parts = [observe_pairs(plan, group, PreparedCache(plan), lo, hi) for lo, hi in spans]
    for spec in group:
        for k in (0, 1):
            joined = np.concatenate([p[spec.name][k] for p in parts])
            assert joined.tobytes() == whole[spec.name][k].tobytes(), (spec.name, k)


def test_a_run_on_dask_starts_one_cluster_for_all_its_map_steps(boxes, monkeypatch):
    """Convergence maps chunks three times (evaluation, bootstrap, α): through ``Measure.run`` with
    ``executor="dask"`` and no active client, one LocalCluster serves them all (it used to be one per
    step), closed at the end, with the local result."""
    distributed = pytest.importorskip("dask.distributed")
    from kalos_core import executors

    started = []
    real = executors._own_cluster
    monkeypatch.setattr(executors, "_own_cluster", lambda *a: started.append(a) or real(*a))
    ds = load_coco(boxes, "bbox")
    measure = get_measure("convergence")
    config = ConvergenceConfig(task="bbox", bootstrap=30, alpha=True)
    alone = measure.run(MeasureData(ds), config)
    got = measure.run(MeasureData(ds, options={"workers": 2, "executor": "dask"}), config)
    alone.seconds = got.seconds = {}
    assert dumps_indented(got.to_dict()) == dumps_indented(alone.to_dict())
    assert len(started) == 1
    with pytest.raises(ValueError):
        distributed.get_client()                      # closed with the run
