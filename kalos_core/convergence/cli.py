"""The ``convergence`` command: ``python -m kalos_core convergence FILE.json --task bbox ...``.

``kalos_core/cli.py`` only registers the sub-command (:func:`add_parser`); the handler lives
here. The JSON written by ``--output`` is ``ConvergenceResult.to_dict()`` (mAP in percent; keys
in docs/convergence.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_common import read_predictions, run_measure
from .engine import compute_convergence
from .types import ConvergenceConfig, ConvergenceResult


def _names(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    if len(names) < 2:
        raise argparse.ArgumentTypeError(f"expected at least two comma-separated raters, got {text!r}")
    return names


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``convergence`` sub-command to an ``add_subparsers()`` object."""
    p = sub.add_parser("convergence", help="label convergence: modified mAP between raters, bootstrap interval, "
                                           "a model placed against it")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox", "segm"], default="bbox")
    p.add_argument("--predictions", type=Path, help="COCO results file (image_id, category_id, bbox/segmentation, score)")
    p.add_argument("--bootstrap", type=int, default=1000, help="image subsets (0 = full set only)")
    p.add_argument("--fraction", type=float, default=0.1, help="share of the images per subset")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--raters", type=_names, default=None, help="comma-separated raters (default: all)")
    alpha = p.add_mutually_exclusive_group()
    alpha.add_argument("--alpha", dest="alpha", action="store_const", const=True, default=None,
                       help="also map alpha through Eq. 1 and refit the line (default: only with > 2 raters)")
    alpha.add_argument("--no-alpha", dest="alpha", action="store_const", const=False)
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    p.add_argument("--include-labels", action="store_true",
                   help="also write, per pair, whether each label is matched at each IoU threshold")
    return p


def _fmt_ci(ci) -> str:
    return f"[{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"


def format_summary(result: ConvergenceResult, seconds: float | None = None) -> str:
    """Plain-text summary (percent)."""
    f = result.full_set
    lines = [f"images {result.n_images}   raters {', '.join(result.raters)}   task {result.config.task}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             f"full set      mAP {100 * f.map:.2f}   AP50 {100 * f.ap50:.2f}   AP75 {100 * f.ap75:.2f}"]
    b = result.bootstrap
    if b:
        m = b.map
        lines.append(f"bootstrap     {m.n_valid} subsets of {100 * result.config.fraction:g} %: mean {100 * m.mean:.2f}"
                     f"  SD {100 * m.std:.2f}  min {100 * m.min:.2f}  max {100 * m.max:.2f}")
        lines.append(f"interval      normal {_fmt_ci(m.ci_normal)}   percentile {_fmt_ci(m.ci_percentile)}")
    if len(result.pairs) > 1:
        lines.append("\npairs")
        lines += [f"  {p.raters[0]} / {p.raters[1]}: mAP {100 * p.full_set.map:.2f} ({p.n_images} images)"
                  for p in result.pairs]
    if result.alpha:
        a = result.alpha
        lines.append(f"\nalpha@[.5:.95] {a.full_set_alpha:.4f}   Eq. 1 interval {_fmt_ci(a.eq1_map.ci_normal)}")
        if a.refit_map:
            lines.append(f"refit mAP = {a.refit['slope']:.3f} alpha + {a.refit['intercept']:.3f}"
                         f" (r {a.refit['r']:.3f})   interval {_fmt_ci(a.refit_map.ci_normal)}")
    if result.model:
        mo = result.model
        lines.append(f"\nmodel         mAP {100 * mo.rater_averaged.map:.2f} (rater-averaged): "
                     f"{mo.placement['ci_normal']} the normal interval")
        lines += [f"  vs {r}: {100 * s.map:.2f} ({mo.per_rater_placement[r]['ci_normal']})"
                  for r, s in mo.per_rater.items()]
    return "\n".join(lines)


def run_convergence(args: argparse.Namespace) -> int:
    def compute(dataset):
        predictions = read_predictions(args.predictions) if args.predictions else None
        config = ConvergenceConfig(task=args.task, bootstrap=args.bootstrap, fraction=args.fraction, seed=args.seed,
                                   raters=args.raters, alpha=args.alpha)
        return compute_convergence(dataset, config, predictions)

    return run_measure(args, compute, format_summary, errors=(ValueError, OSError),
                       output=lambda result, _: result.to_dict(include_labels=args.include_labels))
