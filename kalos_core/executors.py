"""Where the map step of a measure runs: this process, local processes, or a Dask cluster.

:func:`map_chunks` cuts any sequence of items (a data set's images, a bootstrap's subsets, a
measure's rater-pair directions) into chunks and yields ``fn(items[a:b], a, context)`` of every
chunk *in chunk order*; the caller reduces them. :func:`map_images` is its data-set case (agreement,
consensus, variations). Every executor gives the same result (``tests/core/test_executors.py``).

``dask`` needs the optional extra (``pip install .[dask]``); it uses the client
already active in the caller's process if there is one, else starts a
``LocalCluster`` of ``workers`` single-threaded processes. A measure run with
``executor="dask"`` (:meth:`kalos_core.measure.Measure.run`) opens one for the whole
run (:func:`dask_session`), which all its map steps use.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from numbers import Integral
from typing import Any, Callable, Iterator, Sequence

from .registry import Registry

Bounds = list[tuple[int, int]]
#: ``fn(items, first, context) -> partial``: the map step of one chunk (a module-level function: it is pickled)
ChunkFn = Callable[[Sequence, int, Any], Any]
#: ``executor(fn, items, context, bounds, workers) -> partials in chunk order``
ExecutorFn = Callable[..., Iterator[Any]]
EXECUTORS: Registry[ExecutorFn] = Registry("executor")
register_executor = EXECUTORS.register
get_executor = EXECUTORS.get


def resolve_executor(workers: int = 1, executor: str | None = None) -> tuple[ExecutorFn, int]:
    """The executor function and worker count of ``--workers`` / ``--executor`` (default: ``local``
    for one worker, else ``processes``; 0 workers = all cores), or a ValueError naming the bad value."""
    if isinstance(workers, bool) or not isinstance(workers, Integral) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0 = all cores), got {workers!r}")
    run = get_executor(executor or ("local" if workers == 1 else "processes"))
    return run, (os.cpu_count() or 1) if workers == 0 else int(workers)


def chunk_bounds(n_items: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``0..n_items`` in order."""
    size = max(1, int(chunk_size))
    return [(s, min(n_items, s + size)) for s in range(0, n_items, size)]


def map_chunks(fn: ChunkFn, items: Sequence, context: Any, chunk_size: int, workers: int = 1,
               executor: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(items done, fn(items[a:b], a, context))`` of every chunk of ``chunk_size`` items, in order,
    on the executor ``executor`` (default: ``local`` for one worker, else ``processes``) with
    ``workers`` (0 = all cores). ``items`` is any sliceable sequence (a list, a NumPy array's rows);
    ``context`` what every chunk reads (sent once per worker where the executor can). With several
    workers a chunk is at most a quarter of a worker's share, so that every worker gets work; the
    caller's reduce must not depend on the chunks.

    The executor and worker count are checked when this is *called*, not when the first chunk is
    asked for: an unknown executor or a bad count fails before any work."""
    run, workers = resolve_executor(workers, executor)
    total = len(items)
    if executor != "local" and workers > 1:
        chunk_size = max(1, min(chunk_size, -(-total // (4 * workers))))
    bounds = chunk_bounds(total, chunk_size)
    return ((done, part) for (_, done), part in zip(bounds, run(fn, items, context, bounds, workers)))


def _image_chunk(images: Sequence, first: int, job: tuple):
    analyse, kind, config, n_rows = job
    return analyse(images, first, kind, config, n_rows)


def map_images(analyse: Callable[..., Any], dataset, config, chunk_size: int, workers: int = 1,
               executor: str | None = None) -> Iterator[tuple[int, Any]]:
    """:func:`map_chunks` over ``dataset.images``: ``(images done, analyse(images, first, kind, config,
    n_rows))`` per chunk, ``n_rows`` the data set's rater count (counted once: it walks every image)."""
    job = (analyse, dataset.kind, config, len(dataset.raters))
    return map_chunks(_image_chunk, dataset.images, job, chunk_size, workers, executor)


@register_executor("local")
def run_local(fn: ChunkFn, items: Sequence, context, bounds: Bounds, workers: int = 1) -> Iterator[Any]:
    """Every chunk in this process, one after the other."""
    for a, b in bounds:
        yield fn(items[a:b], a, context)


_POOL_DATA: tuple | None = None  # (fn, items, context), inherited by forked workers


def _forked_chunk(bounds: tuple[int, int]):
    fn, items, context = _POOL_DATA
    a, b = bounds
    return fn(items[a:b], a, context)


@register_executor("processes")
def run_processes(fn: ChunkFn, items: Sequence, context, bounds: Bounds, workers: int = 0) -> Iterator[Any]:
    """Chunks spread over ``workers`` local processes (0 = all cores); forked where the OS can."""
    import multiprocessing as mp  # here: 20-50 ms of import that one-process runs never pay

    global _POOL_DATA
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(bounds) < 2:
        yield from run_local(fn, items, context, bounds)
        return
    if "fork" in mp.get_all_start_methods():
        import gc

        _POOL_DATA = (fn, items, context)
        thaw = gc.get_freeze_count() == 0   # a caller's own gc.freeze() (agreement's CLI) stays as it was
        gc.freeze()   # the children's collections need not walk (and so copy) the parent's objects
        try:
            with mp.get_context("fork").Pool(min(workers, len(bounds))) as pool:
                yield from pool.imap(_forked_chunk, bounds)
        finally:
            _POOL_DATA = None
            if thaw:
                gc.unfreeze()
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, items[a:b], a, context) for a, b in bounds]
        for f in futures:
            yield f.result()


def _distributed():
    try:
        import dask.distributed as distributed
    except ImportError:
        raise ValueError("the dask executor needs the optional extra: pip install 'kalos-fiftyone[dask]' "
                         "(or pip install 'dask[distributed]')") from None
    return distributed


def _own_cluster(distributed, workers: int):
    """A LocalCluster of ``workers`` single-threaded processes and its client. While it lives,
    Dask logs nothing below CRITICAL (``silence_logs``: its workers, nannies and scheduler, also in
    this process): closing the cluster makes Dask's workers log a heartbeat "ERROR" with a
    traceback at random after a run that went well (dask/distributed#7105). A task's error, or a
    worker lost, still reaches the caller through the task's future."""
    cluster = distributed.LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                       processes=True, dashboard_address=None, silence_logs=logging.CRITICAL)
    return cluster, distributed.Client(cluster)


@contextmanager
def dask_session(workers: int = 0) -> Iterator[None]:
    """One LocalCluster for a whole run whose map steps go to Dask, unless a client is active
    already: a measure maps chunks several times (convergence: its evaluation, its bootstrap and its
    α), and each step then finds this cluster instead of starting and closing one of its own."""
    distributed = _distributed()
    try:
        distributed.get_client()
        active = True
    except ValueError:    # no active client
        active = False
    if active:
        yield
        return
    cluster, client = _own_cluster(distributed, workers)   # (outside the except: a run's error has no
    try:                                                     # "No clients found" context)
        yield
    finally:
        client.close()
        cluster.close()


@register_executor("dask")
def run_dask(fn: ChunkFn, items: Sequence, context, bounds: Bounds, workers: int = 0,
             address: str | None = None) -> Iterator[Any]:
    """Chunks as Dask tasks: on the active client (:func:`dask_session`'s, or the caller's), on
    ``address``, or on a new LocalCluster; the context is scattered to the workers once."""
    distributed = _distributed()
    own = cluster = None
    try:
        client = distributed.Client(address) if address else distributed.get_client()
        own = client if address else None
    except ValueError:   # no active client
        cluster, client = _own_cluster(distributed, workers)
        own = client
    try:
        [shared] = client.scatter([context], broadcast=True, hash=False)   # one future: the whole context
        futures = [client.submit(fn, items[a:b], a, shared, pure=False) for a, b in bounds]
        for f in futures:
            yield f.result()
    finally:
        if own is not None:
            own.close()
        if cluster is not None:
            cluster.close()
