"""The label-convergence measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core convergence FILE.json --task bbox [--predictions P.json] ...`` writes
``ConvergenceResult.to_dict()``: mAP between raters in percent, its bootstrap interval, the rater
pairs, Eq. 1 and a model placed against the interval (keys in docs/convergence.md).
"""

from __future__ import annotations

from pathlib import Path

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..measure import CliOption, Measure, MeasureData
from .engine import convergence_steps
from .types import ConvergenceConfig, ConvergenceResult


def steps(data: MeasureData, config: ConvergenceConfig):
    """Label convergence of ``data.dataset`` (a model's ``data.predictions`` placed against it) as
    progress steps (:func:`kalos_core.convergence.convergence_steps`); ``data.options`` may give
    ``workers`` and ``executor`` (where the bootstrap's chunks of subsets run)."""
    return convergence_steps(data.dataset, config, data.predictions, **executor_args(data.options))


def _fmt_ci(ci) -> str:
    return f"[{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"


def summary(result: ConvergenceResult, seconds: float | None = None) -> str:
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


MEASURE = Measure(
    name="convergence", help="label convergence: modified mAP between raters, bootstrap interval, a model placed "
                             "against it",
    config=ConvergenceConfig, steps=steps, result=ConvergenceResult, method="kalos_convergence", conventions=("percent",),
    tasks=("bbox", "segm"), summary=summary,
    cli_options=(
        CliOption(("--predictions",), dict(type=Path, help="COCO results file (image_id, category_id, "
                                                           "bbox/segmentation, score)")),
        CliOption(("--include-labels",), dict(action="store_true", help="also write, per pair, whether each "
                                                                       "label is matched at each IoU threshold")),
        *EXECUTOR_OPTIONS),
    output=lambda result, data, args: result.to_dict(include_labels=args.include_labels),
    example_params={"bootstrap": 0})
