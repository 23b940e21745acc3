"""A measure's command-line sub-command, built from its declaration (:mod:`kalos_core.measure`).

Every parameter of the measure's config becomes one option (``--name-with-dashes`` unless
the parameter names its own flag), typed and bounded as declared: a bad value is argparse's
usage error naming the option (exit 2). ``file`` and ``--task`` read the labels,
``--skip-invalid`` and ``--output`` are common to all; a measure adds its own inputs as
:class:`kalos_core.measure.CliOption`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .cli_common import print_warnings, read_predictions, write_result
from .conventions import conventions_of, conventions_text, with_conventions
from .data import MultiRaterDataset
from .io.coco import load_coco
from .io.validation import InvalidInputError
from .measure import Measure, MeasureData
from .params import Param, ParamError
from .progress import TextBar


def option_type(p: Param):
    """argparse ``type`` for parameter ``p``: parsed, ``none_as`` mapped to None, checked as declared."""

    def parse(text: str):
        try:
            value = p.from_text(text)
        except ValueError:
            what = {"int": "an integer", "float": "a number", "fraction": "a number in [0, 1]"}.get(
                p.kind, "comma-separated values")
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        try:
            return p.check(value)
        except ParamError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = p.kind
    return parse


def add_param_option(parser: argparse.ArgumentParser, p: Param) -> None:
    """One option for parameter ``p`` (nothing when it is not on the command line)."""
    if p.cli_flag == "" or p.name == "task":
        return
    default_text = "" if p.default in (None, ()) or p.kind == "bool" or "default" in p.help \
        else f" (default {p.to_text(p.default)})"
    if p.kind == "bool":
        parser.add_argument(p.cli_flag, dest=p.name, action=argparse.BooleanOptionalAction, default=p.default,
                            help=p.help)
    elif p.kind == "choice":
        parser.add_argument(p.cli_flag, dest=p.name, choices=p.options(), default=p.default,
                            help=p.help + default_text)
    else:
        parser.add_argument(p.cli_flag, dest=p.name, type=option_type(p), default=p.default,
                            help=p.help + default_text)


def add_parser(sub, measure: Measure) -> argparse.ArgumentParser:
    """The sub-command of ``measure`` on an ``add_subparsers()`` object."""
    p = sub.add_parser(measure.name, help=measure.help, description=measure.help)
    if measure.read is None:
        p.add_argument("file", type=Path)
        p.add_argument("--task", choices=list(measure.tasks), default=measure.tasks[0])
    for prm in measure.params:
        add_param_option(p, prm)
    for option in measure.cli_options:
        p.add_argument(*option.flags, **option.kwargs)
    if measure.read is None:
        p.add_argument("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on")
    p.add_argument("--output", type=Path, required=measure.output_required, help="write the result JSON here")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal; into a pipe or log: "
                        "one line per tenth of the run)")
    return p


def config_from_args(measure: Measure, args: argparse.Namespace):
    """The measure's config from parsed options (``--task`` fills a ``task`` parameter)."""
    values = {p.name: getattr(args, p.name) for p in measure.params if hasattr(args, p.name)}
    if any(p.name == "task" for p in measure.params) and hasattr(args, "task"):
        values["task"] = args.task
    if measure.from_args is not None:
        values = measure.from_args(values, args)
    return measure.config(**values)


def load_or_report(path: Path, task: str, skip_invalid: bool = False, workers: int = 1) -> MultiRaterDataset | None:
    """``load_coco(path, task, workers=workers)``, or None after printing why it cannot be read (the handler
    then exits with status 2). Coercions are printed as warnings."""
    try:
        ds = load_coco(path, task, skip_invalid=skip_invalid, workers=workers)
    except InvalidInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: cannot read {path}: {e.strerror if isinstance(e, OSError) and e.strerror else e}",
              file=sys.stderr)
        return None
    print_warnings(ds.warnings)
    if ds.skipped:
        print(f"warning: skipped {len(ds.skipped)} invalid item(s) (--skip-invalid)", file=sys.stderr)
    return ds


def load_workers(args: argparse.Namespace) -> int:
    """The processes that parse the file: ``--workers`` where the chunks run in forked processes too
    (``--executor processes``, the default), else one."""
    forked = getattr(args, "executor", None) in (None, "processes")
    return getattr(args, "workers", 1) if forked else 1


def read_data(measure: Measure, args: argparse.Namespace) -> MeasureData | None:
    """The labels file (``file``, ``--task``, ``--skip-invalid``) and ``--predictions`` if the measure takes it."""
    if measure.read is not None:
        return measure.read(args)
    dataset = load_or_report(args.file, args.task, skip_invalid=args.skip_invalid, workers=load_workers(args))
    if dataset is None:
        return None
    path = getattr(args, "predictions", None)
    try:
        predictions = read_predictions(path) if isinstance(path, Path) else None
    except OSError as e:   # as an unreadable labels file: one error line, exit 2
        print(f"error: {e}", file=sys.stderr)
        return None
    return MeasureData(dataset, predictions, option_values(measure, args))


def option_values(measure: Measure, args: argparse.Namespace) -> dict:
    """The values of the measure's own options (:attr:`Measure.cli_options`) by name: its
    ``MeasureData.options`` (e.g. BAE's ``embeddings``)."""
    names = [o.kwargs.get("dest") or o.flags[0].lstrip("-").replace("-", "_") for o in measure.cli_options]
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def run_with_bar(measure: Measure, data: MeasureData, config, show: bool | None):
    """``measure.run`` with a :class:`~kalos_core.progress.TextBar` on stderr when ``show`` (None: on a terminal)."""
    bar = TextBar(sys.stderr) if show or (show is None and sys.stderr.isatty()) else None
    try:
        return measure.run(data, config, bar)
    finally:
        if bar is not None:
            bar.close()


def run_command(measure: Measure, args: argparse.Namespace) -> int:
    """Read, compute, print the summary, write ``--output``. Bad input: one ``error:`` line, exit 2."""
    config = config_from_args(measure, args)
    data = read_data(measure, args)
    if data is None:
        return 2
    start = time.perf_counter()
    try:
        result = run_with_bar(measure, data, config, getattr(args, "progress", None))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    written = args.output and measure.output is None
    plain = result.to_dict() if hasattr(result, "to_dict") and (measure.result_conventions or written) else {}
    if measure.summary is not None:
        print(measure.summary(result, time.perf_counter() - start)
              + conventions_text(conventions_of(measure.method, plain)))
    known = getattr(data.dataset, "warnings", None) or []
    print_warnings([w for w in getattr(result, "warnings", None) or [] if w not in known])
    if args.output:
        write_result(args.output, with_conventions(measure.method, measure.output(result, data, args)
                                                   if measure.output else plain))
    return 0
