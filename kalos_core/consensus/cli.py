"""The ``consensus`` command: ``python -m kalos_core consensus FILE.json --task bbox --output OUT.json``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`). The output is plain
COCO (``ConsensusResult.to_coco``): each annotation with ``score`` = confidence, ``unit``,
``support``, ``raters`` and ``tie``; units below the support level under ``review``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..agreement.pipeline import AgreementConfig
from ..cli_common import run_measure
from .engine import BOX_FUSIONS, ConsensusConfig, ConsensusResult, compute_consensus
from ..matching import COSTS, SOLVERS


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``consensus`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("consensus", help="one consensus label per supported unit, plus a review queue")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox", "segm"], default="bbox")
    p.add_argument("--threshold", type=float, default=0.5, help="similarity threshold of the matching (default 0.5)")
    p.add_argument("--distance", default=None, help="distance name (default: iou)")
    p.add_argument("--solver", choices=sorted(SOLVERS), default="greedy")
    p.add_argument("--cost", choices=sorted(COSTS), default="soft")
    p.add_argument("--support", type=float, default=0.5,
                   help="a unit needs more than this share of the assigned raters (default 0.5: a majority)")
    p.add_argument("--box-fusion", choices=BOX_FUSIONS, default="median")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, help="write the consensus COCO JSON here")
    return p


def format_summary(result: ConsensusResult, seconds: float | None = None) -> str:
    ties = sum(lab.tie for lab in result.labels)
    lines = [f"consensus labels {len(result.labels)}   ties {ties}   review queue {len(result.review)} units"
             + (f"   ({seconds:.2f} s)" if seconds is not None else "")]
    if result.labels:
        conf = sum(lab.confidence for lab in result.labels) / len(result.labels)
        lines.append(f"mean confidence {conf:.4f}")
    return "\n".join(lines)


def run_consensus(args: argparse.Namespace) -> int:
    agreement = AgreementConfig(threshold=args.threshold, distance=args.distance, solver=args.solver, cost=args.cost)
    config = ConsensusConfig(support=args.support, box_fusion=args.box_fusion)
    return run_measure(args, lambda dataset: compute_consensus(dataset, agreement, config), format_summary,
                       output=lambda result, dataset: result.to_coco(dataset))
