"""Reading single values of a label file: numbers, integers, ids (the rules of docs/input.md).

Each reader returns ``(value, error)``: ``error`` is None or a short sentence
naming what is wrong; a number written as a string (``"12.5"``) is read, and
the caller counts it as a coercion (``value`` is then a :class:`Coerced`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

#: largest absolute pixel coordinate or image side accepted (beyond it areas overflow)
MAX_COORDINATE = 1e7
#: smallest image side accepted (relative-coordinate readers use 1.0; below this coordinates overflow)
MIN_SIDE = 1e-6
#: largest pixel grid a mask may be rasterised on (height x width)
MAX_MASK_PIXELS = 2**30


class Coerced(float):
    """A float that was written as a string in the input."""


def number(v: Any) -> tuple[float | None, str | None]:
    """A finite real number (``bool`` is not one); numeric strings become :class:`Coerced`."""
    if isinstance(v, bool) or v is None:
        return None, f"expected a number, got {v!r}"
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:
            return None, f"number too large: {v}"
    elif isinstance(v, str):
        try:
            f = Coerced(v.strip())
        except (ValueError, OverflowError):
            return None, f"expected a number, got the string {v!r}"
    else:
        try:
            f = float(v)  # numpy scalars
        except (TypeError, ValueError):
            return None, f"expected a number, got {type(v).__name__} {v!r}"[:120]
    if not math.isfinite(f):
        return None, f"non-finite number {v!r}"
    return f, None


def coordinate(v: Any) -> tuple[float | None, str | None]:
    """A number with ``|v| <= MAX_COORDINATE``."""
    f, err = number(v)
    if err is None and abs(f) > MAX_COORDINATE:
        return None, f"coordinate {v!r} is beyond +-{MAX_COORDINATE:g} pixels"
    return f, err


def coordinates(values: Any) -> tuple[list[float] | None, bool, str | None]:
    """A flat list of coordinates: ``(floats, any_written_as_string, error)``."""
    if not isinstance(values, (list, tuple)):
        return None, False, f"expected a list of numbers, got {type(values).__name__}"
    if plain_in_range(values):
        return [float(v) for v in values], False, None
    out, coerced = [], False
    for v in values:
        f, err = coordinate(v)
        if err:
            return None, False, err
        coerced |= isinstance(f, Coerced)
        out.append(f)
    return out, coerced, None


_PLAIN = {float, int}


def plain_in_range(values) -> bool:
    """Fast path: only Python floats/ints (no bool, no string), all finite and within range."""
    if not values or not set(map(type, values)) <= _PLAIN:
        return False
    try:
        total = sum(values)
        return math.isfinite(total) and max(map(abs, values)) <= MAX_COORDINATE
    except OverflowError:   # an int too large for a float
        return False


def integer(v: Any) -> tuple[int | None, bool, str | None]:
    """An integral number: ``(int, coerced, error)``; ``"3"`` and ``3.0`` are coerced, ``1.9`` is an error."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v), False, None
    f, err = number(v)
    if err:
        return None, False, err
    if f != int(f):
        return None, False, f"expected an integer, got {v!r}"
    return int(f), True, None


def side(v: Any, what: str) -> tuple[float | None, str | None]:
    """An image side: a number in ``(0, MAX_COORDINATE]``."""
    f, err = number(v)
    if err:
        return None, f"{what} {err}"
    if f <= 0:
        return None, f"{what} must be positive, got {v!r}"
    if f < MIN_SIDE:
        return None, f"{what} {v!r} is below {MIN_SIDE:g}"
    if f > MAX_COORDINATE:
        return None, f"{what} {v!r} is beyond {MAX_COORDINATE:g} pixels"
    return f, None


def identifier(v: Any, what: str) -> str | None:
    """Error for an id that is not an integer or a string (None if fine)."""
    if v is None:
        return f"{what} is missing"
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        return f"{what} must be an integer or a string, got {type(v).__name__} {v!r}"[:160]
    return None
