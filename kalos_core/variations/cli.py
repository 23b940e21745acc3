"""The ``variations`` command: ``python -m kalos_core variations FILE.json --task bbox ...``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`). The JSON written
by ``--output`` is ``VariationResult.to_dict()``: ``{"counts": {threshold: {type: n}},
"by_rater": {threshold: {rater: {type: n}}}, "by_class": {threshold: {class: {type: n}}},
"boundary_iou": ..., "config": ...}`` (docs/variations.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_common import run_measure
from .engine import compute_variations
from .types import DEFAULT_THRESHOLDS, TYPES, VariationConfig, VariationResult


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected thresholds in (0, 1], got {text!r}")
    return values


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``variations`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("variations", help="variation types (agreed, merged, wrong class, missed, ...) per threshold")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox", "segm"], default="bbox")
    p.add_argument("--thresholds", type=_floats, default=DEFAULT_THRESHOLDS,
                   help="comma-separated IoU thresholds (default 0.5:0.95 in steps of 0.05)")
    p.add_argument("--threshold", type=float, default=None,
                   help="threshold of the per-label types (default: the lowest of --thresholds)")
    p.add_argument("--distance", default=None, help="distance name (default: iou)")
    p.add_argument("--reference", default=None,
                   help="two raters: whose unmatched labels count as missed (default: first in sorted order)")
    p.add_argument("--no-merge", action="store_true", help="skip the merged / merged + wrong class steps")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--include-labels", action="store_true", help="also write every label's type, partner and IoU")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    return p


def format_summary(result: VariationResult, seconds: float | None = None) -> str:
    """Plain-text table: one row per threshold, one column per type (counts)."""
    lines = [f"images {result.n_images}   annotations {result.n_annotations}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""), "",
             f"{'IoU':>6}" + "".join(f"{name:>20}" for name in TYPES)]
    for t, counts in result.counts.items():
        lines.append(f"{t:>6}" + "".join(f"{counts[name]:>20}" for name in TYPES))
    return "\n".join(lines)


def run_variations(args: argparse.Namespace) -> int:
    threshold = min(args.thresholds) if args.threshold is None else args.threshold
    config = VariationConfig(thresholds=tuple(args.thresholds), threshold=threshold, distance=args.distance,
                             reference=args.reference, merge=not args.no_merge)
    return run_measure(args, lambda dataset: compute_variations(dataset, config), format_summary,
                       output=lambda result, _: result.to_dict(include_labels=args.include_labels))
