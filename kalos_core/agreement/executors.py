"""Where the map step of an agreement run runs: this process, local processes, or a Dask cluster.

An executor takes the map function (:func:`kalos_core.agreement.partial.analyse_chunk`),
the data set, the config, the chunk bounds and a worker count, and yields the partial result
of every chunk *in chunk order*; :func:`kalos_core.agreement.agreement_steps` merges them. Every executor
gives the same result (``tests/core/test_executors.py``).

``dask`` needs the optional extra (``pip install .[dask]``); it uses the client
already active in the caller's process if there is one, else starts a
``LocalCluster`` of ``workers`` single-threaded processes.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

Bounds = list[tuple[int, int]]
#: ``analyse(images, first, kind, config, n_rows) -> partial``: the map step of one chunk
AnalyseFn = Callable[..., Any]
ExecutorFn = Callable[..., Iterator[Any]]
EXECUTORS: dict[str, ExecutorFn] = {}


def register_executor(name: str):
    def deco(fn: ExecutorFn) -> ExecutorFn:
        EXECUTORS[name] = fn
        return fn
    return deco


def get_executor(name: str) -> ExecutorFn:
    try:
        return EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}") from None


def _chunk(analyse: AnalyseFn, dataset, config, bounds: tuple[int, int], n_rows: int):
    start, stop = bounds
    return analyse(dataset.images[start:stop], start, dataset.kind, config, n_rows)


@register_executor("local")
def run_local(analyse: AnalyseFn, dataset, config, bounds: Bounds, workers: int = 1) -> Iterator[Any]:
    """Every chunk in this process, one after the other."""
    n_rows = len(dataset.raters)   # once: it walks every image
    for b in bounds:
        yield _chunk(analyse, dataset, config, b, n_rows)


_POOL_DATA: tuple | None = None  # (analyse, dataset, config, n_rows), inherited by forked workers


def _forked_chunk(bounds: tuple[int, int]):
    analyse, dataset, config, n_rows = _POOL_DATA
    return _chunk(analyse, dataset, config, bounds, n_rows)


@register_executor("processes")
def run_processes(analyse: AnalyseFn, dataset, config, bounds: Bounds, workers: int = 0) -> Iterator[Any]:
    """Chunks spread over ``workers`` local processes (0 = all cores); forked where the OS can."""
    import multiprocessing as mp  # here: 20-50 ms of import that one-process runs never pay

    global _POOL_DATA
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(bounds) < 2:
        yield from run_local(analyse, dataset, config, bounds)
        return
    if "fork" in mp.get_all_start_methods():
        _POOL_DATA = (analyse, dataset, config, len(dataset.raters))
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                yield from pool.imap(_forked_chunk, bounds)
        finally:
            _POOL_DATA = None
        return
    from concurrent.futures import ProcessPoolExecutor

    n_rows = len(dataset.raters)
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(analyse, dataset.images[a:b], a, dataset.kind, config, n_rows)
                   for a, b in bounds]
        for f in futures:
            yield f.result()


@register_executor("dask")
def run_dask(analyse: AnalyseFn, dataset, config, bounds: Bounds, workers: int = 0,
             address: str | None = None) -> Iterator[Any]:
    """Chunks as Dask tasks: on the active client, on ``address``, or on a new LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster, get_client
    except ImportError:
        raise ValueError("the dask executor needs the optional extra: pip install 'kalos-fiftyone[dask]' "
                         "(or pip install 'dask[distributed]')") from None
    own = None
    try:
        client = Client(address) if address else get_client()
        own = client if address else None
    except ValueError:   # no active client
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = own = Client(cluster)
    n_rows = len(dataset.raters)
    try:
        futures = [client.submit(analyse, dataset.images[a:b], a, dataset.kind, config, n_rows,
                                 pure=False) for a, b in bounds]
        for f in futures:
            yield f.result()
    finally:
        if own is not None:
            cluster = getattr(own, "cluster", None)
            own.close()
            if cluster is not None and not address:
                cluster.close()
