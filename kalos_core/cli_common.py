"""What the command-line handlers share: option types, reading the input, writing the result.

Used by :mod:`kalos_core.cli`, :mod:`kalos_core.measure_cli` and the measures' declarations
(``kalos_core/*/measure.py``).
Every bad option value ends in argparse's usage error (exit 2); every bad input
in one ``error: ...`` naming the ids at fault (exit 2); never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from .io.jsonfile import read_json
from .io.validation import InvalidInputError, describe_warning


def fraction(text: str) -> float:
    """argparse type: a number in [0, 1] (a threshold)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text!r}")
    return v


def fractions(text: str) -> tuple[float, ...]:
    """argparse type: comma-separated numbers in [0, 1], e.g. ``0.1,0.3,0.5``."""
    parts = [v.strip() for v in text.split(",") if v.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers in [0, 1], got {text!r}")
    return tuple(fraction(v) for v in parts)


def count(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return v


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    v = count(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return v


def non_negative(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def output_problem(output: Path | None, inputs) -> str | None:
    """Why ``--output`` must be refused: a folder, or one of the input files (never overwrite them)."""
    if output is None:
        return None
    if output.is_dir():
        return f"--output {output} is a folder; give a file name"
    for path in inputs:
        if path is None:
            continue
        path = Path(path)
        same = (output.exists() and path.exists() and os.path.samefile(output, path)) or \
            output.resolve() == path.resolve()
        if same:
            return f"--output {output} is the input file {path}; refusing to overwrite it"
    if output.parent.exists() and not output.parent.is_dir():
        return f"--output {output}: {output.parent} is not a folder"
    return None


def print_warnings(warnings: list[dict]) -> None:
    """One ``warning:`` line per kind of coercion, on stderr."""
    for w in warnings:
        print(f"warning: {describe_warning(w)}", file=sys.stderr)


def write_result(path: Path, data: dict | str) -> None:
    """Write ``data`` as indented JSON (``json.dumps(data, indent=1)``'s bytes; a str: as it is) to
    ``path`` (creating its folder) and say so."""
    from .io.jsonwrite import dumps_indented  # numpy, imported when a result is written

    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else dumps_indented(data)
    with path.open("w") as f:     # as path.write_text, in slices: no encoded copy of a whole 40 MB text
        for start in range(0, len(text), 1 << 16):
            f.write(text[start:start + (1 << 16)])
    print(f"\nwrote {path}")


def read_predictions(path: Path) -> list:
    """A COCO results file: a list of detections, or a COCO dict whose ``annotations`` are them
    (:func:`~kalos_core.io.jsonfile.read_json`: the objects ``json`` gives, by orjson where it can)."""
    predictions = read_json(path)
    return predictions.get("annotations", []) if isinstance(predictions, dict) else predictions


def run_guarded(handler, args: argparse.Namespace) -> int:
    """Run a command handler; an error becomes one ``error:`` line and an exit status, not a traceback.

    Input and value errors exit 2, a file that cannot be written 1, anything unexpected 1
    (``KALOS_DEBUG=1`` shows the traceback).
    """
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (InvalidInputError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the last line of defence of a command-line tool
        if os.environ.get("KALOS_DEBUG"):
            raise
        print(f"error: unexpected {type(e).__name__}: {e} (set KALOS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
