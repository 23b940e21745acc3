"""What the command-line handlers share: reading the input file, writing the result JSON.

Used by :mod:`kalos_core.cli`, :mod:`kalos_core.calibration.cli` and :mod:`kalos_core.noise.cli`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .data import MultiRaterDataset
from .io import InvalidInputError, load_coco


def load_or_report(path: Path, task: str, skip_invalid: bool = False) -> MultiRaterDataset | None:
    """``load_coco(path, task)``, or None after printing why it cannot be read (the handler
    then exits with status 2)."""
    try:
        return load_coco(path, task, skip_invalid=skip_invalid)
    except InvalidInputError as e:
        print(f"error: {e}", file=sys.stderr)
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: cannot read {path}: {e}", file=sys.stderr)
    return None


def write_result(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON to ``path`` (creating its folder) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    print(f"\nwrote {path}")
