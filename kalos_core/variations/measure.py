"""The variation-types measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core variations FILE.json --task bbox ...`` writes ``VariationResult.to_dict()``:
``{"counts": {threshold: {type: n}}, "by_rater": {threshold: {rater: {type: n}}}, "by_class":
{threshold: {class: {type: n}}}, "boundary_iou": ..., "config": ...}`` (docs/variations.md).
"""

from __future__ import annotations

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..measure import CliOption, Measure, MeasureData
from .engine import variation_steps
from .types import TYPES, VariationConfig, VariationResult, threshold_key


def steps(data: MeasureData, config: VariationConfig):
    """Variation types of ``data.dataset`` as progress steps (:func:`kalos_core.variations.variation_steps`);
    ``data.options`` may give ``workers`` and ``executor`` (where the chunks of images run)."""
    return variation_steps(data.dataset, config, **executor_args(data.options))


#: the per-pair table is printed up to this many raters (more: each rater's total only)
PAIR_TABLE_RATERS = 8


def summary(result: VariationResult, seconds: float | None = None) -> str:
    """Plain text: counts per threshold and type (per label), then at the run's threshold what each
    rater missed (per pair, summed over its pairs) and who missed whose labels (per pair)."""
    lines = [f"images {result.n_images}   annotations {result.n_annotations}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""), "",
             "labels per type (per label, majority convention)",
             f"{'IoU':>6}" + "".join(f"{name:>20}" for name in TYPES)]
    for t, counts in result.counts.items():
        lines.append(f"{t:>6}" + "".join(f"{counts[name]:>20}" for name in TYPES))
    return "\n".join(lines + pair_lines(result))


def pair_lines(result: VariationResult) -> list[str]:
    """Each rater's missed total and the per-pair table (row missed the column's labels) at the run's threshold."""
    key = threshold_key(result.config["threshold"])
    missed, pairs = result.missed_by(key), result.by_pair.get(key, {})
    if not missed:
        return []
    width = max(12, *map(len, missed))
    lines = ["", f"missed at IoU {key} (per pair): the other raters' labels each rater did not draw",
             *(f"  {r:<{width}}{n:>8}" for r, n in missed.items())]
    raters = list(missed)
    if len(raters) <= PAIR_TABLE_RATERS:
        lines += ["", "  row missed n of the column's labels", f"  {'':<{width}}" + "".join(f"{r[:12]:>13}" for r in raters)]
        for b in raters:
            cells = ["-" if a == b else str(pairs.get(a, {}).get(b, {}).get("missed", 0)) for a in raters]
            lines.append(f"  {b:<{width}}" + "".join(f"{c:>13}" for c in cells))
    return lines


MEASURE = Measure(
    name="variations", help="variation types (agreed, merged, wrong class, missed, ...) per threshold",
    config=VariationConfig, steps=steps, result=VariationResult, method="kalos_variations", conventions=("majority", "per_pair"), summary=summary,
    cli_options=(CliOption(("--include-labels",), dict(action="store_true",
                                                       help="also write every label's type, partner and IoU")),
                 *EXECUTOR_OPTIONS),
    output=lambda result, data, args: result.to_dict(include_labels=args.include_labels))
