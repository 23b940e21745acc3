"""Every executor and every chunking gives the same result, field for field."""

import pytest

from kalos_core import AgreementConfig, load_coco
from kalos_core.agreement import agreement_steps, compute_agreement
from kalos_core.demo_data import build_demo
from kalos_core.agreement.executors import get_executor
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
