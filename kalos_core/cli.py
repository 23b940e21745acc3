"""Command line: ``python -m kalos_core agreement FILE.json --task bbox ...``.

The JSON written by ``agreement --output`` is a contract other tools script
against; see docs/cli.md ("agreement: the output JSON") for its keys.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from .cli_common import count, output_problem, positive, run_guarded, write_result
from .conventions import conventions_text, with_conventions
from .geometry import distances_for
from .io.coco import TASK_GEOMETRY_KINDS, load_coco
from .measure import MEASURE_MODULES, MeasureData, get_measure
from .measure_cli import add_parser as add_measure_parser
from .measure_cli import run_command as run_measure_command


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse option values that depend on each other (argparse's usage error, exit 2)."""
    option = "--distance" if getattr(args, "distance", None) else "--distances"
    names = [args.distance] if option == "--distance" else list(getattr(args, "distances", None) or ())
    if args.command in MEASURE_MODULES and any(p.cli_flag == option and isinstance(p.choices, tuple)
                                               for p in get_measure(args.command).params):
        names = []   # a measure's own fixed set (braylan's set distances): checked against its declared choices
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
    inputs += [getattr(v, "source_path", None) for v in vars(args).values()]   # files read while parsing
    problem = output_problem(getattr(args, "output", None), inputs)
    if problem:
        parser.error(problem)


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The command line's parser: every registered measure (:mod:`kalos_core.measure`) and
    ``demo``; ``commands`` limits it to those (what :func:`main` builds when the
    first argument names a command, so that one command never imports another's modules)."""
    parser = argparse.ArgumentParser(prog="python -m kalos_core", description="KaLOS inter-rater agreement")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = (lambda name: True) if commands is None else (lambda name: name in commands)
    for name in MEASURE_MODULES:
        if wanted(name):
            add_measure_parser(sub, get_measure(name))
    if wanted("demo"):
        d = sub.add_parser("demo", help="build the embedded demo data set and compute agreement on it")
        d.add_argument("--folder", type=Path, default=Path("data/demo"))
        d.add_argument("--images", type=positive, default=40)
        d.add_argument("--seed", type=count, default=0)
        d.add_argument("--task", choices=["bbox", "segm"], default="bbox")
    if wanted("gate"):
        g = sub.add_parser("gate", help="pass/fail rules (a TOML file) over agreement and scorecard results: "
                           "exit 1 when a rule fails")
        g.add_argument("rules", type=Path, help="the rules file (TOML, or JSON): [overall] and [class.NAME] tables")
        g.add_argument("results", type=Path, nargs="+", help="result JSON files (agreement, scorecard --output)")
        g.add_argument("--report", type=Path, help="write the checks as JSON (a CI artefact)")
    return parser


def run_demo(args: argparse.Namespace) -> int:
    from .agreement.config import SENSITIVITY_THRESHOLDS

    agreement = get_measure("agreement")   # the demo's modules are imported when it runs, as a command's
    path = importlib.import_module(f"{__package__}.demo_data").build_demo(args.folder, n_images=args.images, seed=args.seed)
    print(f"demo data set: {path} ({args.images} procedurally drawn scenes, seed {args.seed})")
    dataset = load_coco(path, args.task)
    start = time.perf_counter()
    config = agreement.config(lsa_thresholds=SENSITIVITY_THRESHOLDS, seed=args.seed)
    result = agreement.run(MeasureData(dataset), config)
    plain = with_conventions(agreement.method, result.to_dict())
    print(agreement.summary(result, time.perf_counter() - start) + conventions_text(plain["conventions"]))
    out = args.folder / f"agreement_{args.task}.json"
    write_result(out, plain)
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        return run_demo(args)
    if args.command == "gate":
        from .gate import run_gate

        problem = output_problem(args.report, [args.rules, *args.results]) if args.report else None
        if problem:
            raise ValueError(problem)
        return run_gate(args.rules, args.results, args.report)
    return run_measure_command(get_measure(args.command), args)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name, parser)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    known = {*MEASURE_MODULES, "demo", "gate"}   # one command: only its modules are imported
    parser = build_parser(commands=[argv[0]] if argv and argv[0] in known else None)
    args = parser.parse_args(argv)
    check_options(_subparser(parser, args.command), args)
    return run_guarded(_dispatch, args)


if __name__ == "__main__":
    sys.exit(main())
