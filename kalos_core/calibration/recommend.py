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


def recommend(calibrations: dict[str, DistanceCalibration], confidence: float = 0.95,
              scale_invariant: dict[str, bool] | None = None) -> Recommendation:
    """Highest KS wins (ties: the first in the order given).

    ``scale_invariant`` maps a distance name to whether it is scale-invariant
    (missing names count as invariant). When the winner is not, the recommendation
    says so and carries the best scale-invariant distance as ``alternative``.
    """
    invariant = scale_invariant or {}
    ranked = [d for d in calibrations.values() if math.isfinite(d.ks)]
    if not ranked:
        raise ValueError("no distance could be calibrated (no Do / De observations)")
    best = max(ranked, key=lambda d: d.ks)       # max keeps the first of equal values
    others = ", ".join(f"{d.name} {d.ks:.3f}" for d in ranked if d is not best)
    rec = _recommendation(best, confidence, f"{best.name} separates same-image from cross-image distances "
                          f"best (KS {best.ks:.3f}" + (f"; {others}" if others else "") + ")")
    if invariant.get(best.name, True):
        return rec
    rec.scale_dependent = True
    rec.reason += (f". Caution: {best.name} measures offsets relative to the image, not to the object, "
                   "so one threshold is lenient for small objects and strict for large ones")
    fair = [d for d in ranked if invariant.get(d.name, True)]
    if fair:
        alt = max(fair, key=lambda d: d.ks)
        rec.alternative = _recommendation(alt, confidence, f"{alt.name} is the best scale-invariant distance "
                                          f"(KS {alt.ks:.3f})")
        rec.reason += f"; the scale-invariant alternative is {alt.name} at similarity threshold " \
                      f"{alt.similarity_threshold:.3f}"
    return rec


def _recommendation(d: DistanceCalibration, confidence: float, why: str) -> Recommendation:
    std = standard_threshold(d.similarity_threshold, d.similarity_ci)
    ci = d.tau_ci
    reason = (why + f"; tau* = {d.tau_star:.3f}"
              + (f" ({confidence:.0%} CI [{ci[0]:.3f}, {ci[1]:.3f}])" if ci else "")
              + f" by {d.tau_method.replace('_', ' ')}, similarity threshold {d.similarity_threshold:.3f}")
    if std is not None:
        reason += f"; the standard threshold {std:g} lies inside the interval"
    elif ci is not None:
        reason += "; no rounded standard threshold lies inside the interval"
    return Recommendation(d.name, d.tau_star, d.similarity_threshold, std, reason, ks=d.ks)
