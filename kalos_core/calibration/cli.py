"""The ``calibrate`` command: ``python -m kalos_core calibrate FILE.json --task bbox ...``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`); the
handler and the summary live here. The JSON written by ``--output`` is
``CalibrationResult.to_dict()`` (keys listed in docs/calibration.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_common import count, run_measure
from .engine import calibrate
from .types import STRATA, CalibrationConfig, CalibrationResult


def _names(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated distance names, e.g. iou,giou,centroid")
    return names


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``calibrate`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("calibrate", help="calibrate the distance function and the threshold tau* (METHOD.md §5)")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox", "segm", "keypoints", "cuboids"], default="bbox")
    p.add_argument("--distances", type=_names, default=None,
                   help="comma-separated distances to compare (default: all of the task's, e.g. iou,giou,centroid)")
    p.add_argument("--seed", type=count, default=0, help="seeds the cross-image draws and the bootstrap")
    p.add_argument("--bootstrap", type=count, default=100, help="bootstrap resamples over images (0 = no intervals)")
    p.add_argument("--stratify", action="store_true", help="also calibrate per size stratum (small/medium/large)")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    return p


def _ci(ci) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[-, -]"


def format_summary(result: CalibrationResult, seconds: float | None = None) -> str:
    """Plain-text table: one row per distance, the recommendation, strata if any."""
    lines = [f"task {result.task}   images {result.n_images}   annotations {result.n_annotations}   "
             f"seed {result.seed}   bootstrap {result.bootstrap}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             "",
             f"{'distance':<12}{'KS':>7}  {'KS CI':<17}{'tau*':>7}  {'tau* CI':<17}{'sim. thr':>9}{'sigma':>8}"
             f"  {'n(Do)':>8}  method"]
    for name, d in result.distances.items():
        lines.append(f"{name:<12}{d.ks:>7.3f}  {_ci(d.ks_ci):<17}{d.tau_star:>7.3f}  {_ci(d.tau_ci):<17}"
                     f"{d.similarity_threshold:>9.3f}{d.sigma:>8.3f}  {d.do.n:>8}  {d.tau_method}")
    for name, d in result.distances.items():
        if d.strata:
            lines.append(f"\n{name} by size (asymmetric: query size only)")
            for s in STRATA:
                c = d.strata[s]
                lines.append(f"  {s:<8} KS {c.ks:.3f} {_ci(c.ks_ci)}   tau* {c.tau_star:.3f} {_ci(c.tau_ci)}"
                             f"   n {c.n_do}")
    rec = result.recommended
    lines += ["", _recommendation_line("recommended", rec), f"  {rec.reason}"]
    if rec.alternative is not None:
        lines.append(_recommendation_line("scale-invariant alternative", rec.alternative))
    return "\n".join(lines)


def _recommendation_line(title: str, rec) -> str:
    return (f"{title}: {rec.distance}{' (scale-dependent)' if rec.scale_dependent else ''}, tau* {rec.tau_star:.3f}, "
            f"similarity threshold {rec.similarity_threshold:.3f}"
            + (f" (standard {rec.standard_threshold:g})" if rec.standard_threshold is not None else "")
            + (f"; would give mean alpha {rec.mean_alpha:.4f}, global {rec.global_alpha:.4f}"
               if rec.mean_alpha is not None else ""))


def run_calibrate(args: argparse.Namespace) -> int:
    config = CalibrationConfig(distances=args.distances, seed=args.seed, bootstrap=args.bootstrap,
                               stratify=args.stratify)
    return run_measure(args, lambda dataset: calibrate(dataset, config), format_summary)
