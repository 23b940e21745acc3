"""The agreement measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core agreement FILE.json --task bbox ...``: the JSON written by ``--output`` is
``AgreementResult.to_dict()``, a contract other tools script against (docs/cli.md).
A model's COCO results file (``--predictions``, repeatable) joins as one more rater.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

from ..cli_common import fraction, read_predictions
from ..io.coco import TASK_GEOMETRY_KINDS
from ..measure import CliOption, Measure, MeasureData
from ..measure_cli import load_or_report, load_workers
from .config import DIAGNOSTICS, AgreementConfig
from .diagnostics import REGISTRY
from ..executor_options import EXECUTOR_OPTIONS, executor_args
from .model_rater import add_model_rater
from .pipeline import agreement_steps
from .result import AgreementResult


def steps(data: MeasureData, config: AgreementConfig):
    """Agreement on ``data.dataset`` as progress steps; ``data.options`` may give ``workers`` and
    ``executor`` (where the chunks of images run; the result does not depend on them)."""
    return agreement_steps(data.dataset, config, **executor_args(data.options))


def summary(result: AgreementResult, seconds: float | None = None) -> str:
    """A plain-text summary table of an agreement run."""
    ci = result.mean_alpha_ci
    lines = [
        f"images {result.n_images}   annotations {result.n_annotations}   units {result.n_units}"
        + (f"   skipped {result.n_skipped}" if result.n_skipped else "")
        + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
        f"mean alpha    {result.mean_alpha:.4f}" + (f"   95% CI [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")
        + f"   ({result.interpretation})",
        f"global alpha  {result.global_alpha:.4f}",
    ]
    for d in REGISTRY.values():
        if d.summary:
            lines += d.summary(result)
    verdicts = (result.model_comparison or {}).get("per_image", {})
    if verdicts:
        lines += ["\nmodels as raters"] + [f"  {v['verdict']}" for v in verdicts.values()]
    return "\n".join(lines)


def read(args: argparse.Namespace) -> MeasureData | None:
    """The labels file, each ``--predictions`` file as one more (model) rater, and the executor options."""
    dataset = load_or_report(args.file, args.task, skip_invalid=args.skip_invalid, workers=load_workers(args))
    if dataset is None:
        return None
    if len(args.model_name) > len(args.predictions):
        raise ValueError("--model-name given more often than --predictions")
    for k, path in enumerate(args.predictions):
        name = args.model_name[k] if k < len(args.model_name) else path.stem
        dataset = add_model_rater(dataset, read_predictions(path), name=name, score_threshold=args.score_threshold)
    gc.freeze()   # the data set lives to the end: later collections need not walk its objects again
    return MeasureData(dataset, options={"workers": args.workers, "executor": args.executor})


def no_diagnostics(values: dict, args: argparse.Namespace) -> dict:
    """``--no-diagnostics`` switches every diagnostic off."""
    return {**values, **{name: False for name in DIAGNOSTICS}} if args.no_diagnostics else values


def _option(*flags, **kwargs) -> CliOption:
    return CliOption(flags, kwargs)


MEASURE = Measure(
    name="agreement", help="compute agreement on a multi-rater COCO file", config=AgreementConfig, steps=steps,
    result=AgreementResult, method="kalos_agreement", conventions=("alpha_per_image", "alpha_global", "pairwise_per_image", "pairwise_global"), tasks=tuple(TASK_GEOMETRY_KINDS), summary=summary,
    read=read, from_args=no_diagnostics,
    cli_options=(
        _option("file", type=Path),
        _option("--task", choices=list(TASK_GEOMETRY_KINDS), default="bbox",
                help="cuboids: 3D boxes, each annotation's \"cuboid\" = {location, dimensions, rotation}"),
        _option("--no-diagnostics", action="store_true", help=f"skip {', '.join(DIAGNOSTICS)}"),
        *EXECUTOR_OPTIONS,
        _option("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on"),
        _option("--predictions", type=Path, action="append", default=[],
                help="a model's COCO results file: the model joins as one more rater, flagged as a model "
                     "(repeat for several models)"),
        _option("--model-name", action="append", default=[],
                help="name of each --predictions model (default: the file's stem)"),
        _option("--score-threshold", type=fraction, default=0.5,
                help="keep the model detections with score >= this (default 0.5; a detection without a score counts as 1, kept)"),
        _option("--include-labels", action="store_true", help="also write the unit and status of every annotation"),
    ),
    output=lambda result, data, args: result.to_dict(include_labels=args.include_labels),
    example_params={"bootstrap": 0, "lsa_thresholds": (0.3, 0.7)})
