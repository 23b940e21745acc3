"""COCO's area ranges, the AP keys and sizes of the noise-aware tables, and the AP read from an
accumulated precision array (shared by :mod:`.box_eval` and its pycocotools reference :mod:`.bounds`)."""

from __future__ import annotations

import numpy as np

from ..coco_eval import ALL_AREAS

#: AP keys: IoU thresholds (index into .50:.05:.95) and the mean over all ten
AP_KEYS = {"50": 0, "75": 5, "95": 9, "50:95": None}
SIZES = ("small", "medium", "large")
#: COCO's area ranges (pixels²): all, small < 32², medium < 96², large
AREA_RANGES = {"all": list(ALL_AREAS), "small": [0.0, 32.0**2], "medium": [32.0**2, 96.0**2],
               "large": [96.0**2, 1e5**2]}
#: the three evaluations: IoU − ε̄, IoU, IoU + ε̄
SHIFTS = {"lower": -1.0, "ap": 0.0, "upper": 1.0}


def ap_table(precision: np.ndarray) -> dict[str, dict[str, float]]:
    """(T, R, K, A) precision -> {area: {"50", "75", "95", "50:95"}} (mean over valid classes)."""
    out = {}
    for a, area in enumerate(AREA_RANGES):
        p = precision[:, :, :, a]
        valid = p[:, 0, :] > -1                                  # (T, K)
        per_t = np.array([p[t][:, valid[t]].mean() if valid[t].any() else np.nan for t in range(p.shape[0])])
        out[area] = {k: float(np.nanmean(per_t) if i is None else per_t[i]) if np.isfinite(per_t).any()
                     else float("nan") for k, i in AP_KEYS.items()}
    return out


def bound_table(tables: dict) -> dict[str, dict[str, dict[str, float]]]:
    """``{bound: {area: {key: AP}}}`` -> ``{area: {key: {bound: AP}}}``."""
    return {area: {k: {b: tables[b][area][k] for b in tables} for k in AP_KEYS} for area in ("all", *SIZES)}
