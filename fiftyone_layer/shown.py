"""Numbers as a person reads them, the one format of every result card and notification."""

from __future__ import annotations

import math
from numbers import Integral, Real


def human(value, digits: int = 3) -> str:
    """A number as a person reads it: ``digits`` decimals below 10 (α 0.512, t 0.965), one
    decimal from 10 (mAP 45.7 %), none from 1000; whole numbers as they are; an em dash when
    missing. Text passes through."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if isinstance(value, Integral):
        return str(int(value))
    v = float(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if v and abs(v) < 10 ** -digits:
        return f"{v:.{digits - 1}g}"
    return f"{v:.{digits}f}"


def interval(ci, digits: int = 3) -> str | None:
    """``"lo – hi"`` of a confidence interval; None when there is none."""
    if not ci or any(v is None for v in ci):
        return None
    return f"{human(ci[0], digits)} – {human(ci[1], digits)}"
