"""The next-rater ranking, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core next-rater FILE.json --task bbox [--output ranked.csv]`` prints the images
that gain most from one more rater; ``--output`` writes every image's row (CSV for a ``.csv`` path,
else JSON).
"""

from __future__ import annotations

from ..measure import Measure, MeasureData
from .engine import NextRaterConfig, NextRaterResult, next_rater_steps

SHOWN = 10


def steps(data: MeasureData, config: NextRaterConfig):
    """``data.options["units"]`` (annotation id -> unit, an agreement run's): those units, nothing matched."""
    return next_rater_steps(data.dataset, config, data.options.get("units"))


def summary(result: NextRaterResult, seconds: float | None = None) -> str:
    lines = [f"images {len(result.rows)}   ranked by the expected narrowing of the {result.confidence:g} interval "
             "of α from one more rater" + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             f"{'image':<24}{'raters':>7}{'α':>8}{'spread':>8}{'gain':>8}"]
    for r in result.rows[:SHOWN]:
        lines.append(f"{str(r['image']):<24}{r['n_raters']:>7}{r['alpha']:8.3f}{r['spread']:8.3f}{r['gain']:8.3f}")
    return "\n".join(lines)


MEASURE = Measure(
    name="next-rater", help="which images need another rater: images ranked by how much one more rater is "
    "expected to narrow their α's interval (rater bootstrap)", config=NextRaterConfig, steps=steps,
    result=NextRaterResult, method="kalos_next_rater", summary=summary, conventions=("next_rater_gain",),
    output=lambda result, data, args: result.csv_text() if str(args.output).lower().endswith(".csv")
    else result.to_dict())
