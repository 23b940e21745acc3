"""Checks of configuration values, shared by the configs of agreement and calibration.

Each raises ``ValueError`` naming the setting and the value; the CLI turns it
into a one-line ``error:`` (or its own usage error before the config is built).
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def check_fraction(name: str, value: Any, open_low: bool = False, open_high: bool = False) -> float:
    """A real number in ``[0, 1]`` (ends excluded where asked); returns it as float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number in {'(' if open_low else '['}0, 1{')' if open_high else ']'}, "
                         f"got {value!r}")
    v = float(value)
    if v < 0 or v > 1 or (open_low and v == 0) or (open_high and v == 1):
        raise ValueError(f"{name} must lie in {'(' if open_low else '['}0, 1{')' if open_high else ']'}, got {value!r}")
    return v


def check_int(name: str, value: Any, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer (not a bool) ``>= minimum`` (and ``<= maximum`` where given)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {value:,}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_names(name: str, value: Any) -> tuple[str, ...]:
    """A non-empty sequence of non-empty strings (a single string is refused: it is not a list)."""
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a list of names, got {value!r}")
    out = tuple(value)
    if not out or any(not isinstance(v, str) or not v for v in out):
        raise ValueError(f"{name} must be a non-empty list of names, got {value!r}")
    return out
