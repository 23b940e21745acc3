"""Every executor and every chunking gives the same result, field for field."""

import pytest

from kalos_core import AgreementConfig, load_coco
from kalos_core.agreement import agreement_steps, compute_agreement
from kalos_core.demo_data import build_demo
from kalos_core.executors import get_executor, map_chunks
from kalos_core.progress import run_steps

CFG = AgreementConfig(lsa_thresholds=(0.3, 0.7), bootstrap=200)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return load_coco(build_demo(tmp_path_factory.mktemp("exdemo"), n_images=24, seed=4, with_images=False), "bbox")


@pytest.fixture(scope="module")
def in_process(demo):
    return compute_agreement(demo, CFG).to_dict(include_labels=True)


@pytest.mark.parametrize("chunk", [1, 5, 24, 1000])
def test_chunking_changes_nothing(demo, in_process, chunk):
    assert run_steps(agreement_steps(demo, CFG, chunk_size=chunk)).to_dict(include_labels=True) == in_process


def test_local_processes_give_the_in_process_result(demo, in_process):
    got = run_steps(agreement_steps(demo, CFG, workers=2, chunk_size=5, executor="processes"))
    assert got.to_dict(include_labels=True) == in_process


def test_dask_local_cluster_gives_the_in_process_result(demo, in_process):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        got = run_steps(agreement_steps(demo, CFG, chunk_size=5, executor="dask"))
    assert got.to_dict(include_labels=True) == in_process


def test_unknown_executor_is_named():
    with pytest.raises(ValueError, match="threads.*known: local, processes, dask"):
        get_executor("threads")


def _chunk_sum(items, first, scale):
    """A map step over plain numbers: where the chunk starts, and its sum times the context."""
    return first, scale * sum(items)


@pytest.mark.parametrize("executor, workers, size", [("local", 1, 4), ("local", 2, 4), ("processes", 2, 2),
                                                     ("processes", 3, 1)])
def test_map_chunks_maps_any_sequence_in_chunk_order(executor, workers, size):
    """Items that are not a data set's images: (items done, fn(chunk, first, context)) per chunk, in order;
    with several workers (not local) a chunk is at most a quarter of a worker's share (10 items, 2
    workers: 2 items, 3 workers: 1)."""
    got = list(map_chunks(_chunk_sum, list(range(10)), 10, 4, workers, executor))
    starts = range(0, 10, size)
    assert [done for done, _ in got] == [min(10, a + size) for a in starts]
    assert [part for _, part in got] == [(a, 10 * sum(range(a, min(10, a + size)))) for a in starts]
    if size == 4:
        assert got == [(4, (0, 60)), (8, (4, 220)), (10, (8, 170))]


def test_map_chunks_checks_its_executor_when_called_not_when_iterated():
    with pytest.raises(ValueError, match="unknown executor 'threads'"):
        map_chunks(_chunk_sum, [1], 1, 1, 1, "threads")       # no next(): the call itself fails
    with pytest.raises(ValueError, match="workers must be an integer >= 0"):
        map_chunks(_chunk_sum, [1], 1, 1, -2)


def _fails_on(items, first, bad):
    if bad in items:
        raise ValueError(f"item {bad} is bad")
    return sum(items)


def test_a_task_error_on_the_executors_own_dask_cluster_reaches_the_caller():
    """The executor's own LocalCluster logs nothing below CRITICAL (Dask's spurious heartbeat errors
    when it closes); a chunk's error still reaches the caller, with its message."""
    pytest.importorskip("dask.distributed")
    with pytest.raises(ValueError, match="item 7 is bad"):
        list(map_chunks(_fails_on, list(range(10)), 7, 3, 2, "dask"))
    assert list(map_chunks(_fails_on, list(range(10)), 99, 3, 2, "dask")) == \
        [(2, 1), (4, 5), (6, 9), (8, 13), (10, 17)]


def test_a_dask_session_checks_workers_first_and_leaves_a_run_error_alone(monkeypatch):
    """A bad worker count fails before any cluster starts; an error inside the session is the run's
    own (no "No clients found" as its context), and the session's cluster is closed after it."""
    distributed = pytest.importorskip("dask.distributed")
    from kalos_core import executors
    from kalos_core.measure import MeasureData, get_measure

    started = []
    real = executors._own_cluster
    monkeypatch.setattr(executors, "_own_cluster", lambda *a: started.append(a) or real(*a))
    measure = get_measure("agreement")
    with pytest.raises(ValueError, match="workers must be an integer"):
        measure.run(MeasureData(None, options={"executor": "dask", "workers": -1}), measure.make_config())
    assert started == []
    with pytest.raises(KeyError) as caught:
        with executors.dask_session(1):
            raise KeyError("in the run")
    assert caught.value.__context__ is None and len(started) == 1
    with pytest.raises(ValueError):
        distributed.get_client()
