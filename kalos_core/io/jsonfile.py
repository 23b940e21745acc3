"""Reading a JSON label file: encodings, emptiness and nesting become clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..gcpause import paused_gc
from .validation import fatal


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; raise :class:`~kalos_core.io.InvalidInputError` saying what is wrong.

    UTF-8 (with or without a byte-order mark), UTF-16 and UTF-32 are read (JSON's own
    detection); other encodings, an empty file, invalid JSON and nesting too deep for
    the parser are refused. A missing or unreadable file raises ``OSError``.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a JSON file")
    raw = path.read_bytes()
    if not raw.strip():
        raise fatal("the file is empty: nothing to measure", str(path))
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode(json.detect_encoding(raw))
    except UnicodeDecodeError as e:
        raise fatal(f"the file is not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); "
                    "save it as UTF-8", str(path)) from None
    return parse_json_text(text, str(path))


def parse_json_text(text: str, source: str = "input") -> Any:
    """``json.loads`` with its failures turned into one-line input errors."""
    text = text.lstrip("\ufeff")
    try:
        with paused_gc():
            return json.loads(text)
    except RecursionError:
        raise fatal("the JSON is nested too deeply to be a label file", source) from None
    except json.JSONDecodeError as e:
        raise fatal(f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", source) from None

