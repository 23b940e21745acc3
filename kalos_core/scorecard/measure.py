"""The scorecard measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core scorecard FILE.json [--reference RATER] [--iou 0.5] --output cards.json``
writes ``ScorecardResult.to_dict()`` (rows: one per rater x class, and each rater's confusion
matrix); ``--output cards.csv`` writes the rows as CSV.
"""

from __future__ import annotations

from ..measure import Measure, MeasureData
from .engine import ScorecardConfig, ScorecardResult, scorecard_steps


def steps(data: MeasureData, config: ScorecardConfig):
    return scorecard_steps(data.dataset, config)


def summary(result: ScorecardResult, seconds: float | None = None) -> str:
    """Plain text: the reference, then one line per rater (P, R, F1 at the IoU and over COCO's thresholds,
    localisation error, misses, extras, size tendency)."""
    fmt = lambda v: "   —  " if v is None else f"{v:6.3f}"
    pct = lambda v: "    —" if v is None else f"{100 * v:+5.1f}%"
    lines = [f"images {result.n_images}   raters {len(result.raters)}   reference: {result.reference}   "
             f"IoU {result.iou:g}" + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             f"{'rater':<20}{'P':>7}{'R':>7}{'F1':>7}{'F1 coco':>8}{'loc err':>8}{'misses':>7}{'extras':>7}{'size':>8}"]
    for r in (row for row in result.rows if row["class"] == "(all)"):
        lines.append(f"{r['rater']:<20}{fmt(r['precision'])} {fmt(r['recall'])} {fmt(r['f1'])} "
                     f"{fmt(r['f1_coco'])}  {fmt(r['loc_error'])}{r['fn']:>7}{r['fp']:>7} {pct(r['size_bias'])}")
    return "\n".join(lines)


def output(result: ScorecardResult, data: MeasureData, args) -> dict | str:
    """``--output``: CSV for a ``.csv`` path, else the JSON."""
    return result.csv_text() if str(args.output).lower().endswith(".csv") else result.to_dict()


MEASURE = Measure(
    name="scorecard", help="rater scorecards: each rater's precision, recall, F1, localisation error, class "
    "confusion and misses / extras by size against a reference (an expert, or the other raters' majority)",
    config=ScorecardConfig, steps=steps, result=ScorecardResult, method="kalos_scorecard", tasks=("bbox",),
    conventions=("scorecard_reference",),
    summary=summary, output=output)
