"""The recommendation: the distance with the highest KS, its τ*, and a rounded threshold.

The paper rounds the calibrated threshold "to align with standard IoU
benchmarks" when the rounded value stays within the confidence bounds
(Sec. 11). Here the similarity threshold ``1 - τ*`` is rounded to the nearest
multiple of 0.1, else of 0.05 (the COCO IoU grid); the first that lies inside
the bootstrap interval of the similarity threshold is the ``standard_threshold``.
Without an interval (no bootstrap) there is no standard threshold.
"""

from __future__ import annotations

import math

from .types import DistanceCalibration, Recommendation

STANDARD_STEPS = (0.1, 0.05)


def standard_threshold(similarity: float, interval: tuple[float, float] | None) -> float | None:
    """The coarsest rounded similarity threshold inside ``interval``, or None."""
    if interval is None or not math.isfinite(similarity):
        return None
    lo, hi = interval
    for step in STANDARD_STEPS:
        value = round(round(similarity / step) * step, 4)
        if lo - 1e-12 <= value <= hi + 1e-12:
            return value
    return None


def recommend(calibrations: dict[str, DistanceCalibration], confidence: float = 0.95) -> Recommendation:
    """Highest KS wins (ties: the first in the order given)."""
    ranked = [d for d in calibrations.values() if math.isfinite(d.ks)]
    if not ranked:
        raise ValueError("no distance could be calibrated (no Do / De observations)")
    best = max(ranked, key=lambda d: d.ks)       # max keeps the first of equal values
    others = ", ".join(f"{d.name} {d.ks:.3f}" for d in ranked if d is not best)
    std = standard_threshold(best.similarity_threshold, best.similarity_ci)
    ci = best.tau_ci
    reason = (f"{best.name} separates same-image from cross-image distances best (KS {best.ks:.3f}"
              + (f"; {others}" if others else "") + f"); tau* = {best.tau_star:.3f}"
              + (f" ({confidence:.0%} CI [{ci[0]:.3f}, {ci[1]:.3f}])" if ci else "")
              + f" by {best.tau_method.replace('_', ' ')}, similarity threshold {best.similarity_threshold:.3f}")
    if std is not None:
        reason += f"; the standard threshold {std:g} lies inside the interval"
    elif ci is not None:
        reason += "; no rounded standard threshold lies inside the interval"
    return Recommendation(best.name, best.tau_star, best.similarity_threshold, std, reason)
