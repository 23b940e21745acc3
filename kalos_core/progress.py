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


def steps_of(compute: Callable[[Callable[[float, str], None]], T], poll: float = 0.2) -> Generator[
        tuple[float, str], None, T]:
    """A step generator from a computation that reports through a ``progress(fraction, message)``
    callback: ``compute(progress)`` runs in a thread, its reports are yielded as they come, its
    return value is returned and its exception raised here."""
    import queue
    import threading

    reports: queue.Queue = queue.Queue()
    outcome: dict = {}

    def work() -> None:
        try:
            outcome["value"] = compute(lambda f, m: reports.put((float(f), str(m))))
        except BaseException as e:  # handed to the caller below
            outcome["error"] = e

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    while thread.is_alive() or not reports.empty():
        try:
            yield reports.get(timeout=poll)
        except queue.Empty:
            continue
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def rescale(steps: Generator[tuple[float, str], None, T], start: float, stop: float) -> Generator[
        tuple[float, str], None, T]:
    """``steps`` with fractions mapped from [0, 1] to [start, stop]; returns their value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as done:
            return done.value
        yield start + (stop - start) * fraction, message
