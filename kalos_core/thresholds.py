"""How a similarity threshold is shown, and the value a calibrated one is used at.

One rule everywhere (forms, panel headers, cards, the CLI and the demo's text): a threshold is
shown rounded to :data:`SHOWN_DIGITS` decimals, trailing zeros dropped (0.5973602 -> "0.597",
0.6 -> "0.6"). A calibration stores its threshold at full precision; what a form proposes and
what the demo runs at is that threshold rounded the same way (:func:`proposed`), so the value a
user reads is the value a run uses.
"""

from __future__ import annotations

import math

SHOWN_DIGITS = 3


def proposed(t: float) -> float:
    """The threshold a run uses when it takes a calibrated ``t``: ``t`` rounded to the shown digits."""
    return round(float(t), SHOWN_DIGITS)


def threshold_text(t) -> str:
    """A threshold as every text shows it ("0.597", "0.6"); an em dash when missing."""
    if t is None or not math.isfinite(float(t)):
        return "—"
    text = f"{proposed(t):.{SHOWN_DIGITS}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
