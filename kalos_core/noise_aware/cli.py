"""The ``noise-aware`` command: ``python -m kalos_core noise-aware --predictions P.json --reference
FILE [--rater r1] --task bbox --output OUT.json``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`); the handler lives here.
The JSON written by ``--output`` is ``NoiseAwareResult.to_dict()`` (AP in percent).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_common import read_predictions, run_measure
from .engine import noise_aware_evaluation
from .types import NoiseAwareConfig, NoiseAwareResult


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``noise-aware`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("noise-aware", help="a model's AP with lower/upper bounds from the raters' corner noise")
    p.add_argument("--predictions", type=Path, required=True, help="COCO results file with scores")
    p.add_argument("--reference", type=Path, required=True, help="multi-rater COCO file (the ground truth)")
    p.add_argument("--rater", default=None, help="reference rater (default: the first rater of the file)")
    p.add_argument("--noise-raters", default=None,
                   help="comma-separated raters to fit the noise against the reference (default: all others)")
    p.add_argument("--share", choices=["split", "reference"], default="split",
                   help="split: both raters noisy (scale / sqrt 2); reference: the reference is noise-free")
    p.add_argument("--task", choices=["bbox"], default="bbox", help="boxes only (the corner-noise model)")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    return p


def format_summary(result: NoiseAwareResult) -> str:
    n = result.noise
    lines = [f"reference {result.reference}   predictions {result.n_predictions}   reference labels {result.n_reference}",
             f"noise fit: {n.n_pairs} pairs, {n.n_inliers} inliers, share {n.share}; per rater (pixels) "
             + "  ".join(f"{c}: sigma {n.sigma[c]:.2f} M {n.M[c]:.1f}" for c in n.sigma),
             "", f"{'':<8}{'IoU':>7}{'AP^l':>8}{'AP':>8}{'AP^u':>8}"]
    for area, block in [("all", result.ap), *result.by_size.items()]:
        for k, v in block.items():
            lines.append(f"{area:<8}{k:>7}" + "".join(f"{100 * v[b]:>8.2f}" for b in ("lower", "ap", "upper")))
    return "\n".join(lines)


def run_noise_aware(args: argparse.Namespace) -> int:
    others = [r.strip() for r in args.noise_raters.split(",")] if args.noise_raters else None

    def compute(dataset):
        return noise_aware_evaluation(dataset, read_predictions(args.predictions), args.rater or dataset.raters[0],
                                      config=NoiseAwareConfig(share=args.share), noise_raters=others)

    return run_measure(args, compute, lambda result, _: format_summary(result), path=args.reference,
                       errors=(ValueError, OSError))
