"""Progress-step generators: long computations yield ``(fraction, message)`` steps and return
their result, so the FiftyOne operators can report progress and plain callers can ignore it."""

from __future__ import annotations

import time
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


class TextBar:
    """``progress(fraction, message)`` drawn as a text bar on ``stream`` (the command line's, on stderr).

    ``live`` (default: ``stream`` is a terminal): one bar redrawn in place, at most every
    ``every`` seconds and at 100 %; otherwise (a log file, ``--progress`` into a pipe) one line
    per tenth of the run, so a log shows how far a long run got. :meth:`close` ends the line.
    """

    def __init__(self, stream, live: bool | None = None, width: int = 30, every: float = 0.2):
        self.stream, self.width, self.every = stream, width, every
        self.live = stream.isatty() if live is None else live
        self.start = time.perf_counter()
        self.shown, self.tenth, self.drawn = float("-inf"), -1, False   # the first call always draws

    def text(self, fraction: float, message: str) -> str:
        """The bar at ``fraction`` (already within 0..1)."""
        full = round(fraction * self.width)
        return (f"[{'#' * full}{'.' * (self.width - full)}] {100 * fraction:3.0f}%  "
                f"{time.perf_counter() - self.start:6.1f} s  {message}")

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        now = time.perf_counter()
        if self.live:
            if now - self.shown < self.every and fraction < 1.0:
                return
            self.shown, self.drawn = now, True
            self.stream.write("\r\033[K" + self.text(fraction, message))
        else:
            tenth = int(fraction * 10)
            if tenth <= self.tenth:
                return
            self.tenth = tenth
            self.stream.write(self.text(fraction, message) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.live and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
