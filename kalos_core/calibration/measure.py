"""The calibration measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core calibrate FILE.json --task bbox ...`` writes ``CalibrationResult.to_dict()``
(keys listed in docs/calibration.md): per distance the KS separation, τ* and the similarity
threshold 1 - τ* with their bootstrap intervals, Braylan's σ, the Do / De summaries and
histograms (and size strata), then the recommended distance.
"""

from __future__ import annotations

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..io.coco import TASK_GEOMETRY_KINDS
from ..measure import Measure, MeasureData
from .engine import calibrate_steps
from ..thresholds import threshold_text
from .types import STRATA, CalibrationConfig, CalibrationResult, Recommendation


def steps(data: MeasureData, config: CalibrationConfig):
    """The calibration of ``data.dataset`` as progress steps (:func:`kalos_core.calibration.calibrate_steps`)."""
    return calibrate_steps(data.dataset, config, **executor_args(data.options))


def _ci(ci) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[-, -]"


def summary(result: CalibrationResult, seconds: float | None = None) -> str:
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


def _recommendation_line(title: str, rec: Recommendation) -> str:
    return (f"{title}: {rec.distance}{' (scale-dependent)' if rec.scale_dependent else ''}, tau* {rec.tau_star:.3f}, "
            f"similarity threshold {threshold_text(rec.similarity_threshold)}"
            + (f" (standard {rec.standard_threshold:g})" if rec.standard_threshold is not None else "")
            + (f"; would give mean alpha {rec.mean_alpha:.4f}, global {rec.global_alpha:.4f}"
               if rec.mean_alpha is not None else ""))


MEASURE = Measure(
    name="calibrate", help="calibrate the distance function and the threshold tau* (docs/method.md §5)",
    config=CalibrationConfig, steps=steps, result=CalibrationResult, method="kalos_calibration", conventions=("pooled", "fraction"),
    tasks=tuple(TASK_GEOMETRY_KINDS), summary=summary, cli_options=EXECUTOR_OPTIONS,
    example_params={"bootstrap": 0})
