"""The variation-types measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core variations FILE.json --task bbox ...`` writes ``VariationResult.to_dict()``:
``{"counts": {threshold: {type: n}}, "by_rater": {threshold: {rater: {type: n}}}, "by_class":
{threshold: {class: {type: n}}}, "boundary_iou": ..., "config": ...}`` (docs/variations.md).
"""

from __future__ import annotations

from ..measure import CliOption, Measure, MeasureData
from .engine import variation_steps
from .types import TYPES, VariationConfig, VariationResult


def steps(data: MeasureData, config: VariationConfig):
    """Variation types of ``data.dataset`` as progress steps (:func:`kalos_core.variations.variation_steps`)."""
    return variation_steps(data.dataset, config)


def summary(result: VariationResult, seconds: float | None = None) -> str:
    """Plain-text table: one row per threshold, one column per type (counts)."""
    lines = [f"images {result.n_images}   annotations {result.n_annotations}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""), "",
             f"{'IoU':>6}" + "".join(f"{name:>20}" for name in TYPES)]
    for t, counts in result.counts.items():
        lines.append(f"{t:>6}" + "".join(f"{counts[name]:>20}" for name in TYPES))
    return "\n".join(lines)


MEASURE = Measure(
    name="variations", help="variation types (agreed, merged, wrong class, missed, ...) per threshold",
    config=VariationConfig, steps=steps, result=VariationResult, method="kalos_variations", summary=summary,
    cli_options=(CliOption(("--include-labels",), dict(action="store_true",
                                                       help="also write every label's type, partner and IoU")),),
    output=lambda result, data, args: result.to_dict(include_labels=args.include_labels))
