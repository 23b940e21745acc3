"""The ``braylan`` command: ``python -m kalos_core braylan FILE.json --task bbox ...``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`); the handler
lives here. The JSON written by ``--output`` is ``BraylanResult.to_dict()``
(keys in docs/calibration.md, "Item-level agreement (Braylan)").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_common import run_measure
from .braylan import BRAYLAN_DISTANCES, BraylanConfig, BraylanResult, braylan_agreement


def _names(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = [n for n in names if n not in BRAYLAN_DISTANCES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected comma-separated names from {','.join(BRAYLAN_DISTANCES)}, "
                                         f"got {text!r}")
    return names


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``braylan`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("braylan", help="Braylan's item-level agreement: alpha, AUC, sigma, KS per distance")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox"], default="bbox", help="boxes only (pixel coordinates)")
    # its own dest: these are set distances, not the registry's (checked by the CLI against the task)
    p.add_argument("--distances", dest="set_distances", type=_names, default=BRAYLAN_DISTANCES,
                   help=f"comma-separated distances (default: {','.join(BRAYLAN_DISTANCES)})")
    p.add_argument("--seed", type=int, default=0, help="seeds the random different-item (De) pairs")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    return p


def format_summary(result: BraylanResult, seconds: float | None = None) -> str:
    """Plain-text table, one row per distance (Table 1's columns, plus the KS D statistic)."""
    lines = [f"items {result.n_items}   raters {result.n_raters}   annotation sets {result.n_annotation_sets}   "
             f"annotations {result.n_annotations}   seed {result.seed}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             "",
             f"{'distance':<10}{'alpha':>8}{'AUC':>8}{'sigma':>8}{'KS D':>8}{'n(Do)':>8}{'n(De)':>8}"]
    for name, d in result.distances.items():
        lines.append(f"{name:<10}{d.alpha:>8.4f}{d.auc:>8.4f}{d.sigma:>8.4f}{d.ks:>8.4f}{d.n_do:>8}{d.n_de:>8}")
    lines.append("\nAUC = P(De > Do), the paper's Table 1 'KS' column; KS D = max(F_Do - F_De)")
    return "\n".join(lines)


def run_braylan(args: argparse.Namespace) -> int:
    config = BraylanConfig(distances=tuple(args.set_distances), seed=args.seed)
    return run_measure(args, lambda dataset: braylan_agreement(dataset, config), format_summary)
