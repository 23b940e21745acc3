"""Two agreement runs' per-sample α on the samples both scored: the Overview's *Compare with*
(when one run covers a subset of the other's samples, e.g. a second round on the review queue)
and ``compare_rounds`` read this one comparison."""

from __future__ import annotations

import math

#: a change of α below this counts as none (the same labels give the same α up to rounding)
TOLERANCE = 1e-9


def paired_alpha(dataset, first_field: str, second_field: str) -> dict:
    """Per-sample α of two runs (their ``<run>_alpha`` fields) paired by sample.

    ``scored_first`` / ``scored_second``: how many samples each run scored (α stored, NaN
    included); ``same_samples``: both scored the same samples. ``per_sample``: ``{sample id:
    (α first, α second)}`` where both α are defined; ``samples`` counts them, ``mean_first`` /
    ``mean_second`` are the means over them (``None`` when there are none); ``improved`` /
    ``worsened``: samples whose second α is higher / lower than the first; ``changed`` = both.
    """
    ids, a, b = dataset.values(["id", first_field, second_field])
    scored_a = {i for i, x in zip(ids, a) if x is not None}
    scored_b = {i for i, y in zip(ids, b) if y is not None}
    pairs = {i: (x, y) for i, x, y in zip(ids, a, b)
             if x is not None and y is not None and not (math.isnan(x) or math.isnan(y))}
    improved = sum(y - x > TOLERANCE for x, y in pairs.values())
    worsened = sum(x - y > TOLERANCE for x, y in pairs.values())

    def mean(k: int) -> float | None:
        return sum(p[k] for p in pairs.values()) / len(pairs) if pairs else None

    return {"samples": len(pairs), "mean_first": mean(0), "mean_second": mean(1), "improved": improved,
            "worsened": worsened, "changed": improved + worsened, "per_sample": pairs,
            "scored_first": len(scored_a), "scored_second": len(scored_b), "same_samples": scored_a == scored_b}
