"""Chunks of a plain list of items on an executor (``--workers`` / ``--executor``): calibrate's images and
distances, Braylan's pairs of annotation sets.

A shim over :func:`kalos_core.agreement.executors.map_chunks`, which maps the images of a data set: the items
stand in as the "images" of a stand-in data set (as convergence's bootstrap subsets do). Where ``map_chunks``
takes any sequence, :func:`map_items` becomes that call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

from ..agreement.executors import get_executor, map_chunks


class _Items(NamedTuple):
    images: Sequence
    kind: str = "items"
    raters: tuple = ()


def _call(fn: Callable, items: Sequence, first: int, _kind: str, config: Any, _n_rows: int) -> Any:
    return fn(items, first, config)


def map_items(fn: Callable[[Sequence, int, Any], Any], items: Sequence, config: Any, chunk_size: int,
              workers: int = 1, executor: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(items done, fn(items[a:b], a, config))`` of consecutive chunks of ``items``, in order (``map_chunks``:
    one worker runs chunks of ``chunk_size`` here, several smaller ones elsewhere). ``fn`` must be a module-level
    function (it travels to the workers) whose result does not depend on the chunks."""
    return map_chunks(partial(_call, fn), _Items(items), config, chunk_size, workers, executor)


def check_executor(executor: str | None) -> None:
    """An unknown executor fails here, before any work."""
    get_executor(executor or "local")
