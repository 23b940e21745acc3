"""Progress-step generators: long computations yield ``(fraction, message)`` steps and return
their result, so the FiftyOne operators can report progress and plain callers can ignore it."""

from __future__ import annotations

from typing import Callable, Generator, TypeVar

T = TypeVar("T")


def run_steps(steps: Generator[tuple[float, str], None, T],
              progress: Callable[[float, str], None] | None = None) -> T:
    """Run a step generator: ``progress(fraction, message)`` per step (optional); returns its value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(fraction, message)


def rescale(steps: Generator[tuple[float, str], None, T], start: float, stop: float) -> Generator[
        tuple[float, str], None, T]:
    """``steps`` with fractions mapped from [0, 1] to [start, stop]; returns their value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as done:
            return done.value
        yield start + (stop - start) * fraction, message
