"""Reading a JSON label file: encodings, emptiness and nesting become clear errors.

UTF-8 files are parsed by orjson when it is installed (``pip install
kalos-fiftyone[fast]``; about 1.6x faster than ``json`` on a large box file)
unless ``KALOS_JSON=stdlib`` is set. orjson is used only where it gives the
very objects ``json`` gives: on any failure of orjson (invalid JSON, ``NaN`` /
``Infinity``, a float out of range, a lone surrogate, nesting deeper than 1024,
...) and before it on any run of 19 or more digits that does not follow a ``.``
(orjson reads an integer beyond 64 bits as a float, ``json`` as an int), the file goes to ``json``,
which accepts, refuses and words its errors as without orjson. One difference
is left: a file nested between about 990 and 1024 levels deep, which ``json``
refuses (Python's recursion limit), orjson reads.

Memory: orjson builds its own document tree before the Python objects, so
the peak while parsing is about two bytes per byte of the file higher (47 MB
file: 421 MB peak instead of 319 MB for a whole agreement run; the objects
kept are the same size). So by default (``KALOS_JSON=auto``) orjson parses
files up to 256 MB (:data:`ORJSON_MAX_BYTES`), where it saves a third of the
parse, and ``json`` the larger ones, where the extra gigabyte matters more;
``KALOS_JSON=orjson`` / ``stdlib`` choose one for every size.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..gcpause import paused_gc
from .validation import fatal

try:
    import orjson
except ImportError:   # optional (the ``fast`` extra): json parses everything then
    orjson = None

BOM = b"\xef\xbb\xbf"
_FAILED = object()
_DIGITS = 19          # the fewest digits of an integer outside orjson's 64 bits (-9223372036854775809)


#: ``KALOS_JSON=auto`` (the default) parses UTF-8 files up to this size with orjson
ORJSON_MAX_BYTES = 256 * 2 ** 20


def fast_parser(n_bytes: int = 0) -> bool:
    """Whether orjson parses ``n_bytes`` of UTF-8: installed, and ``KALOS_JSON`` is ``orjson``,
    or ``auto`` (default, any other value) and the text is at most :data:`ORJSON_MAX_BYTES`."""
    if orjson is None:
        return False
    choice = _choice()
    return choice == "orjson" or (choice != "stdlib" and n_bytes <= ORJSON_MAX_BYTES)


def stdlib_chosen() -> bool:
    """Whether ``KALOS_JSON=stdlib`` asks for ``json`` on every file."""
    return _choice() == "stdlib"


def _choice() -> str:
    return os.environ.get("KALOS_JSON", "").strip().lower()


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; raise :class:`~kalos_core.io.InvalidInputError` saying what is wrong.

    UTF-8 (with or without a byte-order mark), UTF-16 and UTF-32 are read (JSON's own
    detection); other encodings, an empty file, invalid JSON and nesting too deep for
    the parser are refused. A missing or unreadable file raises ``OSError``.
    No cyclic garbage collection while parsing (restored after); the parsed objects
    then count as old ones, so that the next collections do not walk them all (see
    :func:`settle`).
    """
    with paused_gc():
        parsed = load_json_file(path)
        settle()
        return parsed


def settle() -> None:
    """Move every object the collector tracks into its oldest generation, without a collection.

    Objects built while it was paused sit in the youngest generation, and the first
    collection after it resumes walks them all (0.1 s for a 300k-annotation file), then
    the next generation's walks them again. ``gc.freeze()`` followed by ``gc.unfreeze()``
    moves them to the oldest generation, where only full collections look at them. Done
    only when nothing is frozen already, so that a caller's frozen objects stay frozen.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def load_json_file(path: str | Path) -> Any:
    """:func:`read_json` without pausing the garbage collector (for a caller that pauses it)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a JSON file")
    try:
        raw = path.read_bytes()
    except MemoryError:
        raise fatal(f"the file ({path.stat().st_size / 2**20:,.0f} MB) does not fit in memory: split it "
                    "into smaller files, or run on a machine with more memory", str(path)) from None
    if not raw.strip():
        raise fatal("the file is empty: nothing to measure", str(path))
    if raw.startswith(BOM):
        raw = raw[3:]
    encoding = json.detect_encoding(raw)
    if encoding == "utf-8" and fast_parser(len(raw)):
        parsed = _orjson(raw)
        if parsed is not _FAILED:
            return parsed
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise fatal(f"the file is not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); "
                    "save it as UTF-8", str(path)) from None
    return _stdlib(text, str(path))


def parse_json_text(text: str, source: str = "input") -> Any:
    """``json.loads`` (or orjson, giving the same objects) with its failures turned into one-line input errors."""
    text = text.lstrip("\ufeff")
    with paused_gc():
        parsed = _FAILED
        if fast_parser(len(text)):
            try:
                parsed = _orjson(text.encode())
            except UnicodeEncodeError:   # a lone surrogate: json's to read
                pass
        if parsed is _FAILED:
            parsed = _stdlib(text, source)
        settle()
        return parsed


def _stdlib(text: str, source: str) -> Any:
    text = text.lstrip("\ufeff")
    try:
        return json.loads(text)
    except RecursionError:
        raise fatal(f"the JSON is nested more than about {sys.getrecursionlimit()} levels deep, which the "
                    "parser refuses (a label file needs 6): not a label file", source) from None
    except MemoryError:
        raise fatal(f"the JSON ({len(text) / 2**20:,.0f} MB of text) does not fit in memory: split it into "
                    "smaller files, or run on a machine with more memory", source) from None
    except json.JSONDecodeError as e:
        raise fatal(f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", source) from None


def _orjson(raw: bytes) -> Any:
    """orjson's parse of UTF-8 bytes, or ``_FAILED`` where json must parse them."""
    if has_integer_run(raw, _DIGITS):
        return _FAILED
    try:
        return orjson.loads(raw)
    except Exception:     # any refusal: json decides, and words the error
        return _FAILED


def has_integer_run(raw: bytes, length: int = _DIGITS, chunk: int = 1 << 23) -> bool:
    """Whether ``raw`` holds ``length`` ASCII digits in a row that do not follow a ``.``: the
    integer part of a number (or digits in a string) that long. Digits after a ``.`` are a
    fraction, which orjson and ``json`` both read as the same float however many there are
    (a full-precision ``0.00012345678901234567`` writes 21 in a row).

    One ``bytes.translate`` (digits to ``d``, ``.`` kept, every other byte to ``x``) and one
    substring search per 8 MB chunk: about 0.1 s on a 50 MB file of full-precision floats.
    """
    needle = b"x" + b"d" * length
    for start in range(0, len(raw), chunk):
        lo = start - length                                   # a run across the cut between chunks
        piece = raw[lo:start + chunk] if lo > 0 else b"x" + raw[:start + chunk]   # "x": the document's start
        if needle in piece.translate(_CLASSES):
            return True
    return False


_CLASSES = bytes(ord("d") if 48 <= b <= 57 else ord(".") if b == 46 else ord("x") for b in range(256))


__all__ = ["BOM", "fast_parser", "has_integer_run", "load_json_file", "parse_json_text", "read_json", "settle", "stdlib_chosen"]
