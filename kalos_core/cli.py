"""Command line: ``python -m kalos_core agreement FILE.json --task bbox ...``.

The JSON written by ``agreement --output`` is a contract other tools script
against; see README.md ("Command line") for its keys.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import time
from pathlib import Path

from .agreement import DIAGNOSTICS, AgreementConfig, AgreementResult, compute_agreement
from .agreement import MAX_DIAGNOSTIC_RATERS
from .cli_common import (count, fraction, fractions, load_or_report, output_problem, positive, positive_floats,
                         print_warnings, read_predictions, run_guarded, write_result)
from .agreement.model_rater import add_model_rater
from .agreement.diagnostics import REGISTRY, get_diagnostic
from .agreement.executors import EXECUTORS
from .geometry import distances_for
from . import measure_cli
from .io import load_coco
from .io.coco import TASK_GEOMETRY_KINDS
from .matching import COSTS, SOLVERS
from .measure import MEASURE_MODULES, get_measure

#: the other sub-commands' modules, imported only when the command line may need them (several
#: import scipy.stats / scipy.optimize: half a second that an ``agreement`` run need not pay)
COMMAND_MODULES = ("calibration.cli", "calibration.braylan_cli", "consensus.cli", "convergence.cli",
                   "noise_aware.cli")
#: the commands this module defines itself
OWN_COMMANDS = ("agreement", "demo")


def _module(name: str):
    return importlib.import_module(f"{__package__}.{name}")


def _add_agreement_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=fraction, default=0.5, help="similarity threshold in [0, 1] (inclusive), default 0.5")
    p.add_argument("--distance", default=None, help="distance name (default: iou, or mpjpe for keypoints)")
    p.add_argument("--solver", choices=sorted(SOLVERS), default="greedy")
    p.add_argument("--cost", choices=sorted(COSTS), default="soft")
    p.add_argument("--lsa", type=fractions, default=(), help="thresholds for localisation sensitivity, e.g. 0.1,0.3,0.5")
    p.add_argument("--bootstrap", type=count, default=1000, help="resamples for the CI of the mean alpha (0 = none)")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--no-diagnostics", action="store_true", help=f"skip {', '.join(DIAGNOSTICS)}")
    for name in DIAGNOSTICS:
        p.add_argument(f"--no-{name.replace('_', '-')}", dest=f"no_{name}", action="store_true",
                       help=f"skip {get_diagnostic(name).help}")
    p.add_argument("--max-diagnostic-raters", type=count, default=MAX_DIAGNOSTIC_RATERS,
                   help=f"refuse vitality/collaboration on an image with more raters (default "
                        f"{MAX_DIAGNOSTIC_RATERS}; 0 = no limit; their cost grows with the cube of the rater count)")
    p.add_argument("--keypoint-sigmas", type=positive_floats, default=None,
                   help="OKS per-joint sigmas, comma-separated (default: COCO's 17 person sigmas, else 0.05)")
    p.add_argument("--workers", type=count, default=1, help="processes (0 = all cores); results do not depend on it")
    p.add_argument("--executor", choices=sorted(EXECUTORS), default=None,
                   help="where the chunks of images run: local (this process; default for 1 worker), processes "
                        "(default for more), dask (pip install .[dask]; a LocalCluster of --workers processes)")


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse option values that depend on each other (argparse's usage error, exit 2)."""
    option = "--distance" if getattr(args, "distance", None) else "--distances"
    names = [args.distance] if option == "--distance" else list(getattr(args, "distances", None) or ())
    task = getattr(args, "task", None)
    for name in names:
        known = sorted({d for kind in TASK_GEOMETRY_KINDS.get(task, ()) for d in distances_for(kind)})
        if task and name not in known:
            other = sorted({t for t, kinds in TASK_GEOMETRY_KINDS.items() for k in kinds if name in distances_for(k)})
            why = f" ({name!r} is a distance for --task {' / '.join(other)})" if other else ""
            parser.error(f"argument {option}: unknown distance {name!r} for --task {task}{why}; "
                         f"known: {', '.join(known)}")
    inputs = [getattr(args, k, None) for k in ("file", "reference", "profile", "similarity")]
    preds = getattr(args, "predictions", None)
    inputs += preds if isinstance(preds, list) else [preds]
    problem = output_problem(getattr(args, "output", None), inputs)
    if problem:
        parser.error(problem)


def build_parser(full: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``full=False``: only ``agreement`` and ``demo`` (what
    :func:`main` builds when the first argument names one of them)."""
    parser = argparse.ArgumentParser(prog="python -m kalos_core", description="KaLOS inter-rater agreement")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("agreement", help="compute agreement on a multi-rater COCO file")
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=["bbox", "segm", "keypoints"], default="bbox")
    _add_agreement_options(p)
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--predictions", type=Path, action="append", default=[],
                   help="a model's COCO results file: the model joins as one more rater, flagged as a model "
                        "(repeat for several models)")
    p.add_argument("--model-name", action="append", default=[],
                   help="name of each --predictions model (default: the file's stem)")
    p.add_argument("--score-threshold", type=fraction, default=0.5,
                   help="keep the model detections with score >= this (default 0.5)")
    p.add_argument("--output", type=Path, help="write the result JSON here")
    p.add_argument("--include-labels", action="store_true", help="also write the unit and status of every annotation")
    d = sub.add_parser("demo", help="build the embedded demo data set and compute agreement on it")
    d.add_argument("--folder", type=Path, default=Path("data/demo"))
    d.add_argument("--images", type=positive, default=40)
    d.add_argument("--seed", type=count, default=0)
    d.add_argument("--task", choices=["bbox", "segm"], default="bbox")
    for name in MEASURE_MODULES if full else ():
        measure_cli.add_parser(sub, get_measure(name))
    if full:
        for name in COMMAND_MODULES:
            _module(name).add_parser(sub)
    return parser


def config_from_args(args: argparse.Namespace) -> AgreementConfig:
    on = {name: not (args.no_diagnostics or getattr(args, f"no_{name}", False)) for name in DIAGNOSTICS}
    return AgreementConfig(
        threshold=args.threshold, distance=args.distance, solver=args.solver, cost=args.cost,
        lsa_thresholds=tuple(args.lsa), bootstrap=args.bootstrap, seed=args.seed,
        max_diagnostic_raters=args.max_diagnostic_raters or None, keypoint_sigmas=args.keypoint_sigmas, **on,
    )


def format_summary(result: AgreementResult, seconds: float | None = None) -> str:
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


def run_agreement(args: argparse.Namespace) -> int:
    dataset = load_or_report(args.file, args.task, skip_invalid=args.skip_invalid)
    if dataset is None:
        return 2
    if len(args.model_name) > len(args.predictions):
        raise ValueError("--model-name given more often than --predictions")
    for k, path in enumerate(args.predictions):
        name = args.model_name[k] if k < len(args.model_name) else path.stem
        dataset = add_model_rater(dataset, read_predictions(path), name=name, score_threshold=args.score_threshold)
    gc.freeze()   # the data set lives to the end: later collections need not walk its objects again
    start = time.perf_counter()
    result = compute_agreement(dataset, config_from_args(args), workers=args.workers,
                               executor=getattr(args, "executor", None))
    seconds = time.perf_counter() - start
    print(format_summary(result, seconds))
    print_warnings([w for w in result.warnings if w not in dataset.warnings])
    if args.output:
        write_result(args.output, result.to_dict(include_labels=args.include_labels))
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from .demo_data import build_demo

    path = build_demo(args.folder, n_images=args.images, seed=args.seed)
    print(f"demo data set: {path} ({args.images} procedurally drawn scenes, seed {args.seed})")
    dataset = load_coco(path, args.task)
    start = time.perf_counter()
    result = compute_agreement(dataset, AgreementConfig(lsa_thresholds=(0.3, 0.5, 0.7, 0.9), seed=args.seed))
    print(format_summary(result, time.perf_counter() - start))
    out = args.folder / f"agreement_{args.task}.json"
    out.write_text(json.dumps(result.to_dict(), indent=1))
    print(f"\nwrote {out}")
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in OWN_COMMANDS:
        return {"agreement": run_agreement, "demo": run_demo}[args.command](args)
    if args.command in MEASURE_MODULES:
        return measure_cli.run_command(get_measure(args.command), args)
    handlers = {
        "calibrate": _module("calibration.cli").run_calibrate, "braylan": _module("calibration.braylan_cli").run_braylan,
        "convergence": _module("convergence.cli").run_convergence,
        "noise-aware": _module("noise_aware.cli").run_noise_aware, "consensus": _module("consensus.cli").run_consensus,
    }
    return handlers[args.command](args)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name, parser)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(full=not (argv and argv[0] in OWN_COMMANDS))
    args = parser.parse_args(argv)
    check_options(_subparser(parser, args.command), args)
    return run_guarded(_dispatch, args)


if __name__ == "__main__":
    sys.exit(main())
