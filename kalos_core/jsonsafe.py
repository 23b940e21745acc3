"""One conversion to plain JSON for every result's ``to_dict()`` (and the App's charts).

``json_safe`` turns numpy scalars and arrays into Python numbers and lists, tuples into
lists, dict keys into strings, bytes into text, and NaN / ±inf into ``None`` (JSON has no
such numbers and plotly draws nothing for them). ``digits`` rounds floats (the
calibration contract keeps 6 digits so that same-seed output is byte-identical).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_safe(x: Any, digits: int | None = None) -> Any:
    """A plain-JSON copy of ``x`` (see the module docstring)."""
    if isinstance(x, dict):
        return {str(k): json_safe(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [json_safe(v, digits) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if not math.isfinite(x):
            return None
        return x if digits is None else round(x, digits)
    if isinstance(x, bytes):
        return x.decode("ascii")
    return x
