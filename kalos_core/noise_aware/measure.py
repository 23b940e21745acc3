"""The noise-aware evaluation measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core noise-aware --predictions P.json --reference FILE [--rater r1]
[--noise-raters r2,r3] --task bbox --output OUT.json`` writes ``NoiseAwareResult.to_dict()``:
AP^l ≤ AP ≤ AP^u in percent per IoU key, overall and per size, the corner-noise fit and the ε̄
grid (docs/convergence.md, "Noise-aware evaluation").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli_common import read_predictions
from ..io.records import check_measurable
from ..measure import CliOption, Measure, MeasureData
from ..measure_cli import load_or_report
from .engine import evaluation_steps
from .types import NoiseAwareConfig, NoiseAwareResult


def steps(data: MeasureData, config: NoiseAwareConfig):
    """Noise-aware AP of ``data.predictions`` against the reference rater as progress steps
    (:func:`kalos_core.noise_aware.evaluation_steps`). ``data.options``: ``reference`` (default:
    the data set's first rater), ``noise_raters`` (default: the others), ``per_detection``."""
    options = data.options
    if not data.dataset.raters:
        check_measurable(data.dataset)   # no images, or nobody listed: refused as agreement refuses it
    return evaluation_steps(data.dataset, data.predictions or [], options.get("reference") or data.dataset.raters[0],
                            config=config, noise_raters=options.get("noise_raters"),
                            per_detection=bool(options.get("per_detection")))


def read(args: argparse.Namespace) -> MeasureData | None:
    """The ``--reference`` labels file, the ``--predictions`` and the raters named by ``--rater``
    and ``--noise-raters``; None (after saying why) when a file cannot be read."""
    dataset = load_or_report(args.reference, args.task, skip_invalid=args.skip_invalid)
    if dataset is None:
        return None
    try:
        predictions = read_predictions(args.predictions)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    others = [r.strip() for r in args.noise_raters.split(",")] if args.noise_raters else None
    return MeasureData(dataset, predictions, {"reference": args.rater, "noise_raters": others})


def summary(result: NoiseAwareResult, seconds: float | None = None) -> str:
    """Plain-text summary: the noise fit, then AP^l / AP / AP^u per size and IoU key (percent)."""
    n = result.noise
    lines = [f"reference {result.reference}   predictions {result.n_predictions}   reference labels {result.n_reference}",
             f"noise fit: {n.n_pairs} pairs, {n.n_inliers} inliers, share {n.share}; per rater (pixels) "
             + "  ".join(f"{c}: sigma {n.sigma[c]:.2f} M {n.M[c]:.1f}" for c in n.sigma),
             "", f"{'':<8}{'IoU':>7}{'AP^l':>8}{'AP':>8}{'AP^u':>8}"]
    for area, block in [("all", result.ap), *result.by_size.items()]:
        for k, v in block.items():
            lines.append(f"{area:<8}{k:>7}" + "".join(_percent(v[b]) for b in ("lower", "ap", "upper")))
    if any("n/a" in line for line in lines[4:]):
        lines.append("n/a: no reference boxes of that size (null in the JSON)")
    return "\n".join(lines)


def _percent(value: float | None) -> str:
    """An AP in percent, 8 wide; "n/a" for a bucket without reference boxes (NaN here, null in the JSON)."""
    return f"{'n/a':>8}" if value is None or value != value else f"{100 * value:>8.2f}"


MEASURE = Measure(
    name="noise-aware", help="a model's AP with lower/upper bounds from the raters' corner noise",
    config=NoiseAwareConfig, steps=steps, result=NoiseAwareResult, method="kalos_noise_aware", conventions=("percent",), tasks=("bbox",),
    summary=summary, read=read,
    cli_options=(
        CliOption(("--predictions",), dict(type=Path, required=True, help="COCO results file with scores")),
        CliOption(("--reference",), dict(type=Path, required=True, help="multi-rater COCO file (the ground truth)")),
        CliOption(("--rater",), dict(default=None, help="reference rater (default: the first rater of the file)")),
        CliOption(("--noise-raters",), dict(default=None, help="comma-separated raters to fit the noise against "
                                                               "the reference (default: all others)")),
        CliOption(("--task",), dict(choices=["bbox"], default="bbox",
                                    help="boxes only (the corner-noise model)")),
        CliOption(("--skip-invalid",), dict(action="store_true",
                                            help="drop invalid annotations, count them, go on"))))
