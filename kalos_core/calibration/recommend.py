"""The recommendation: the distance that separates best, its τ*, and a rounded threshold.

KS scores that tie within noise must not decide: the distances whose KS lies within the
noise of the highest (:func:`ks_noise_floor`) are tied, and of those the first scale-invariant
one in the order given (the kind's default first) is recommended. A scale-dependent distance
(the image-diagonal centroid) is recommended only when it separates better beyond noise; it
then carries the best scale-invariant distance as ``alternative``.

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


def ks_noise_floor(d: DistanceCalibration, confidence: float = 0.95) -> float:
    """The lowest KS that ties with ``d``'s within noise: the lower end of its bootstrap interval,
    or without one ``d.ks`` less the two-sample KS critical value at ``confidence``,
    ``c * sqrt((n + m) / (n m))`` with ``c = sqrt(-ln((1 - confidence) / 2) / 2)`` (1.358 at 95 %)."""
    if d.ks_ci is not None and math.isfinite(d.ks_ci[0]):
        return min(d.ks, d.ks_ci[0])
    n, m = d.do.n, d.de.n
    if n <= 0 or m <= 0:
        return d.ks
    c = math.sqrt(-math.log((1.0 - confidence) / 2.0) / 2.0)
    return d.ks - c * math.sqrt((n + m) / (n * m))


def recommend(calibrations: dict[str, DistanceCalibration], confidence: float = 0.95,
              scale_invariant: dict[str, bool] | None = None) -> Recommendation:
    """The first scale-invariant distance (in the order given) among those whose KS ties the highest
    within noise (:func:`ks_noise_floor` of the highest); when none of the tied is scale-invariant,
    the first of them, flagged ``scale_dependent`` with the best scale-invariant distance as
    ``alternative``.

    ``scale_invariant`` maps a distance name to whether it is scale-invariant
    (missing names count as invariant).
    """
    invariant = scale_invariant or {}
    ranked = [d for d in calibrations.values() if math.isfinite(d.ks)]
    if not ranked:
        raise ValueError("no distance could be calibrated (no Do / De observations)")
    top = max(ranked, key=lambda d: d.ks)       # max keeps the first of equal values
    floor = ks_noise_floor(top, confidence)
    tied = [d for d in ranked if d.ks >= floor]
    best = next((d for d in tied if invariant.get(d.name, True)), tied[0])
    ks = lambda ds: ", ".join(f"{d.name} {d.ks:.3f}" for d in ds)    # noqa: E731
    below = [d for d in ranked if d.ks < floor]
    if len(tied) > 1:
        first = "first scale-invariant" if invariant.get(best.name, True) else "first"
        why = (f"{best.name} is the {first} of the distances that separate same-image from cross-image "
               f"distances best within noise (KS {best.ks:.3f}; tied: {ks(d for d in tied if d is not best)}, "
               f"all at or above the noise floor {floor:.3f} of the highest"
               + (f"; below it: {ks(below)}" if below else "") + ")")
    else:
        why = (f"{best.name} separates same-image from cross-image distances best, beyond noise (KS "
               f"{best.ks:.3f}" + (f"; {ks(below)}" if below else "") + ")")
    rec = _recommendation(best, confidence, why)
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
