"""Small helpers shared by the plugin's operators (no engine logic here)."""

from __future__ import annotations

import re

#: a plain FiftyOne field / attribute name (no dots, no leading underscore or digit)
FIELD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def safe_name(text) -> str:
    """``text`` as a field-name fragment: runs of other characters become ``_`` (``"Dr. Ann" -> "Dr_Ann"``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", str(text)).strip("_")
    return name or "x"


def form_error(prop, message: str):
    """Mark an input property invalid with ``message`` (a form error that blocks execution)."""
    prop.invalid = True
    prop.error_message = message
    return prop


def progress_op(ctx, progress: float, label: str):
    """Report progress from a generator ``execute``.

    Delegated runs store it on the operation now and return None; immediate runs
    return the ``set_progress`` trigger, which the caller must ``yield``::

        op = progress_op(ctx, 0.5, "halfway")
        if op is not None:
            yield op
    """
    if ctx.delegated:
        ctx.set_progress(progress=progress, label=label)
        return None
    return ctx.ops.set_progress(progress=progress, label=label)


def drive(ctx, steps):
    """``yield from`` this in a generator ``execute``: runs a ``(fraction, message)`` step
    generator, reporting each step with :func:`progress_op`; returns the steps' return value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as stop:
            return stop.value
        op = progress_op(ctx, fraction, message)
        if op is not None:
            yield op


def run_steps(steps, progress=None):
    """The same outside the App: ``progress(fraction, message)`` per step (optional); returns the value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(fraction, message)
