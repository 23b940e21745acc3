"""Variations and consensus on every executor and chunking: the same result, byte for byte
(the agreement's own executors are tested in test_executors.py)."""

import json

import pytest

from kalos_core import load_coco
from kalos_core.cli import main
from kalos_core.consensus import ConsensusConfig
from kalos_core.consensus.engine import consensus_steps
from kalos_core.demo_data import build_demo, make_synthetic_boxes
from kalos_core.io.jsonwrite import dumps_indented
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


@pytest.mark.parametrize("measure", ["variations", "consensus"])
def test_command_line_workers_write_the_same_file(boxes, tmp_path, measure):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main([measure, str(boxes), "--output", str(one)]) == 0
    assert main([measure, str(boxes), "--workers", "2", "--executor", "processes", "--output", str(two)]) == 0
    assert one.read_bytes() == two.read_bytes()


def test_an_unknown_executor_is_refused_before_any_work(boxes):
    ds = load_coco(boxes, "bbox")
    with pytest.raises(ValueError, match="unknown executor 'threads'"):
        run_steps(variation_steps(ds, VAR, executor="threads"))
    with pytest.raises(ValueError, match="unknown executor 'threads'"):
        run_steps(consensus_steps(ds, ConsensusConfig(), executor="threads"))


def convergence_json(ds, **kw) -> str:
    from kalos_core.convergence import ConvergenceConfig
    from kalos_core.convergence.engine import compute_convergence

    result = compute_convergence(ds, ConvergenceConfig(bootstrap=30, alpha=True), **kw)
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


def test_convergence_command_line_workers_write_the_same_file(boxes, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["convergence", str(boxes), "--bootstrap", "20", "--output", str(one)]) == 0
    assert main(["convergence", str(boxes), "--bootstrap", "20", "--workers", "2", "--executor", "processes",
                 "--output", str(two)]) == 0
    strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "seconds"}
    assert strip(one) == strip(two) and strip(one)["bootstrap"]
