"""Pausing Python's cyclic garbage collector around bulk object building."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    """No cyclic garbage collection inside (restored after): building the hundreds of
    thousands of containers of a label file (or of a chunk's results) otherwise triggers
    collections that walk all of them again and again (about a tenth of a run on a
    291k-box file)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["paused_gc"]
