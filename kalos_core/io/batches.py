"""Reading a COCO file's ``annotations`` in batches, so that all of their objects never exist at once.

:func:`read_in_batches` reads the file in blocks, finds the top-level
``"annotations"`` array by a vectorised scan of its bytes (quotes not escaped
by an odd run of backslashes open and close strings; brackets and braces
outside strings give the depth by a cumulative sum; an annotation ends where
a ``}`` brings the depth back to the array's), and gives orjson whole
annotations a batch at a time. The rest of the file (images, categories,
...) is parsed as one document with ``null`` in place of the array.

It answers only where the whole file would parse to the same objects with
orjson (:mod:`kalos_core.io.jsonfile`): UTF-8, valid JSON, no integer run of
19 digits, ``"annotations"`` once. On anything else it returns ``None``
and the caller reads the file whole, which refuses or reads it exactly as
before and words every error. :func:`read_forked` parses the batches in forked
processes (``--workers``), with the same answer.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .jsonfile import BOM, has_integer_run, orjson, stdlib_chosen

BLOCK = 1 << 21                       # bytes read at a time (2 MB: about 9,000 box annotations)
_OPEN, _CLOSE, _QUOTE, _ESCAPE = 1, 2, 3, 4
_KIND = np.zeros(256, np.uint8)
_KIND[[ord("{"), ord("[")]] = _OPEN
_KIND[[ord("}"), ord("]")]] = _CLOSE
_KIND[ord('"')] = _QUOTE
_KIND[ord("\\")] = _ESCAPE
_KEY = re.compile(rb'"annotations"[ \t\n\r]*:[ \t\n\r]*\Z')
_WHITESPACE = b" \t\n\r"
_NEXT = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_GUESS_SPAN = 1 << 16                  # where the last cut is looked for: the block's last 64 kB
_END = re.compile(rb"\}[ \t\n\r]*\]")    # where the array may end: after an object
_AGAIN = object()                        # a guess was refuted: read the file by one process


class Scanner:
    """The structure of JSON text given in blocks: where brackets and braces outside strings
    open and close, and the depth after each (state carried from block to block)."""

    def __init__(self, depth: int = 0) -> None:
        self.depth = depth
        self.in_string = False
        self.backslashes = 0          # the run of backslashes that ended the last block

    def scan(self, block: bytes) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, depth after)`` of the block's structural brackets and braces."""
        if not block:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        kind = _KIND[np.frombuffer(block, np.uint8)]
        pos = np.flatnonzero(kind)
        kind = kind[pos]
        quote = kind == _QUOTE
        if self.backslashes or (kind == _ESCAPE).any():
            quote &= ~self._escaped(pos, kind == _ESCAPE, len(block))
        toggles = np.cumsum(quote) + self.in_string
        outside = (toggles - quote) % 2 == 0
        bracket = outside & ((kind == _OPEN) | (kind == _CLOSE))
        step = np.where(kind[bracket] == _OPEN, 1, -1)
        depth = self.depth + np.cumsum(step)
        self.in_string = bool(toggles[-1] % 2) if len(toggles) else self.in_string
        if len(depth):
            self.depth = int(depth[-1])
        return pos[bracket], depth

    def _escaped(self, pos: np.ndarray, is_escape: np.ndarray, size: int) -> np.ndarray:
        """Which entries follow an odd run of backslashes (a run may begin in the block before)."""
        at = pos[is_escape]
        first = np.r_[True, np.diff(at) != 1] if len(at) else np.zeros(0, bool)
        last = np.r_[first[1:], True] if len(at) else first
        starts, ends = at[first], at[last] + 1
        runs = ends - starts
        if self.backslashes:
            if len(starts) and starts[0] == 0:
                runs[0] += self.backslashes
            else:
                starts, ends, runs = np.r_[0, starts], np.r_[0, ends], np.r_[self.backslashes, runs]
        self.backslashes = int(runs[-1]) if len(ends) and ends[-1] == size else 0
        k = np.minimum(np.searchsorted(ends, pos), max(len(ends) - 1, 0))
        return (ends[k] == pos) & (runs[k] % 2 == 1) if len(ends) else np.zeros(len(pos), bool)


def read_in_batches(path: str | Path, take: Callable[[list], bool], block: int | None = None,
                    runs: bool = True) -> dict | None:
    """The file's top-level object with ``annotations`` set to None, its annotations given to
    ``take`` a batch (list) at a time in file order; None where the file must be read whole
    (see the module's docstring), or where ``take`` returns False (it wants the whole file).

    ``runs=False``: the batches are not searched for integers of 19 digits, for a ``take``
    that refuses a float wherever json would give an int (:class:`~kalos_core.io.columnar.BoxColumns`:
    ids and category ids must be ints or strings, a coordinate of 19 digits is out of range)."""
    if orjson is None or stdlib_chosen():
        return None
    with open(path, "rb") as f:
        return _Reader(take, runs).read(f, block or BLOCK)


class _Reader:
    def __init__(self, take: Callable[[list], bool], runs: bool = True) -> None:
        self.take, self.runs = take, runs
        self.scanner = Scanner()
        self.outside: list[bytes] = []   # the file less the array's content
        self.pending = b""               # the array's content since the last batch
        self.state = "before"            # "in" the array, "after" it
        self.batches = 0

    def read(self, f, block: int) -> dict | None:
        data = f.read(max(block, 4))
        if data.startswith(BOM):
            data = data[3:]
        if not data.strip() or json.detect_encoding(data[:4]) != "utf-8":
            return None
        while data:
            if not (self._guess(data) if self.state == "in" else self._walk(data, 0, *self.scanner.scan(data))):
                return None
            data = f.read(block)
        if self.state == "in" and self.pending:      # the array's end in the text after the last cut
            buf, self.pending, self.scanner = self.pending, b"", Scanner(depth=2)
            if not self._inside(buf, 0, *self.scanner.scan(buf)):
                return None
        if self.state != "after" or self.scanner.depth or self.scanner.in_string:
            return None
        parsed = _parse(b"".join(self.outside))
        if not isinstance(parsed, dict) or "annotations" not in parsed or parsed["annotations"] is not None:
            return None                               # not an object, or "annotations" not the key found
        return parsed

    def _walk(self, data: bytes, at: int, pos: np.ndarray, depth: np.ndarray) -> bool:
        """Take ``data[at:]`` (``pos``, ``depth``: its structure); False where the file must be read whole."""
        if self.state == "in":
            return self._inside(data, at, pos, depth)
        for k in np.flatnonzero(depth == 2).tolist():
            p = int(pos[k])
            if data[p] == ord("[") and _KEY.search(self._before(data, at, p)):
                if self.state == "after":
                    return False                      # "annotations" twice: json decides which
                self.outside.append(data[at:p] + b"null")
                self.state = "in"
                return self._inside(data, p + 1, pos[k + 1:], depth[k + 1:])
        self.outside.append(data[at:])
        return True

    def _guess(self, data: bytes) -> bool:
        """Inside the array: cut after the last ``}`` that a ``,`` and a ``{`` follow, where orjson
        takes the text before it (which proves it ends an annotation: the text from the last cut
        tokenises as in the file); else, or where that fails, scan the text from the last cut."""
        cut = None
        for m in _NEXT.finditer(data, max(0, len(data) - _GUESS_SPAN)):
            cut = m.start() + 1
        if cut is not None:
            taken = self._batch(self.pending, memoryview(data)[:cut], guess=True)
            if taken is not None:
                self.pending = data[cut:]
                return taken
        buf, self.pending = self.pending + data, b""
        self.scanner = Scanner(depth=2)               # the last cut ends an annotation: depth 2, no string
        return self._inside(buf, 0, *self.scanner.scan(buf))

    def _before(self, data: bytes, at: int, p: int) -> bytes:
        """The 200 bytes before ``data[p]`` (some from blocks before)."""
        near, k = [data[max(at, p - 200):p]], len(self.outside)
        while sum(map(len, near)) < 200 and k:
            k -= 1
            near.insert(0, self.outside[k][-200:])
        return b"".join(near)

    def _inside(self, data: bytes, at: int, pos: np.ndarray, depth: np.ndarray) -> bool:
        closes = np.flatnonzero(depth == 1)
        end = int(pos[closes[0]]) if len(closes) else len(data)
        ends = pos[:closes[0]] if len(closes) else pos
        ends = ends[depth[:len(ends)] == 2]
        ends = ends[np.frombuffer(data, np.uint8)[ends] == ord("}")]
        cut = int(ends[-1]) + 1 if len(ends) else at
        if cut > at:
            if not self._batch(self.pending, memoryview(data)[at:cut]):
                return False                          # None (not JSON) or False (not a box)
            self.pending = b""
        self.pending += data[cut:end]
        if not len(closes):
            return True
        if data[end] != ord("]") or self.pending.strip(_WHITESPACE):
            return False                              # not an array of objects: json's to word
        self.state, self.pending = "after", b""
        rest = closes[0] + 1
        return self._walk(data, end + 1, pos[rest:], depth[rest:])

    def _batch(self, *piece, guess: bool = False) -> bool | None:
        """Whether ``take`` took the annotations in the joined ``piece``; None where they are not JSON
        (``guess``: the piece ends at a guessed cut, which that refutes).

        After the first batch the text begins with the ``,`` after the last cut: a ``0`` before
        it makes it JSON (orjson checks the separator) and is dropped after parsing."""
        raw = b"".join((b"[[0" if self.batches else b"[[", *piece, b"]]"))   # as deep as in the file
        return self._take(raw, self.batches > 0, guess)

    def _take(self, raw: bytes, joined: bool, guess: bool) -> bool | None:
        anns = batch_annotations(raw, joined, self.runs)
        if anns is None:
            return None
        self.batches += 1
        return self.take(anns)


def batch_annotations(raw: bytes, joined: bool, runs: bool = True) -> list | None:
    """The annotations in a batch's text (``joined``: it begins ``[[0,``); None where it is not JSON
    (or, with ``runs``, holds an integer run of 19 digits)."""
    parsed = _parse(raw, runs)
    if parsed is None:
        return None
    anns = parsed[0]
    if joined:
        del anns[0]
    return anns


def _parse(raw: bytes, runs: bool = True) -> Any:
    """orjson's parse, or None where the whole file must go to :func:`~kalos_core.io.jsonfile.load_json_file`."""
    if runs and has_integer_run(raw):
        return None
    try:
        return orjson.loads(raw)
    except Exception:     # any refusal: the whole file goes to load_json_file, which words it
        return None


# --- the batches parsed by forked processes (``workers`` > 1), merged in file order ---------------
#
# :func:`read_forked` walks the file as :func:`read_in_batches` does, but hands each batch's
# text to a pool of forked processes, which parse it and take its columns (``fresh().take``);
# the parts are given to ``merge`` in file order once all are in, so the columns are the ones
# one process builds. A batch cut at a guessed place is parsed there on trust; where the guess
# may hold the end of the array (a ``}`` that a ``]`` follows), it is parsed here first, as
# one process does. Where any batch sent off is not JSON (a guess refuted), the file is read
# again by one process from the start: the same answer in every case, slower only there.


def read_forked(path: str | Path, take: Callable[[list], bool], fresh: Callable[[], Any],
                merge: Callable[[Any], None], workers: int, block: int | None = None, runs: bool = True) -> dict | None:
    """:func:`read_in_batches` with the batches parsed by ``workers`` forked processes (``take``:
    the taker of one process, used where the file is read again by one)."""
    import multiprocessing as mp  # here: 20-50 ms of import that one-process reads never pay

    if workers > 1 and "fork" in mp.get_all_start_methods():
        with open(path, "rb") as f, mp.get_context("fork").Pool(workers) as pool:
            got = _ForkedReader(pool, fresh, merge, 2 * workers, runs).read(f, block or BLOCK)
        if got is not _AGAIN:
            return got
    return read_in_batches(path, take, block, runs)


def _part(fresh: Callable[[], Any], raw: bytes, joined: bool, runs: bool) -> Any:
    """A batch's taker (False: it refuses the batch; None: the text is not JSON)."""
    anns = batch_annotations(raw, joined, runs)
    if anns is None:
        return None
    part = fresh()
    return part if part.take(anns) else False


class _Ready:
    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self) -> Any:
        return self.value


class _ForkedReader(_Reader):
    def __init__(self, pool, fresh: Callable[[], Any], merge: Callable[[Any], None], ahead: int, runs: bool) -> None:
        super().__init__(lambda anns: False, runs)
        self.pool, self.fresh, self.merge, self.ahead = pool, fresh, merge, ahead
        self.queue: deque = deque()
        self.done: list = []
        self.again = False

    def read(self, f, block: int) -> Any:
        got = super().read(f, block)
        if not self.again and self._drain(0) and got is not None:
            for part in self.done:      # merged once all are in: a file read again starts afresh
                self.merge(part)
        return _AGAIN if self.again else got if not self.queue else None

    def _take(self, raw: bytes, joined: bool, guess: bool) -> bool | None:
        if guess and _END.search(raw, 0, len(raw) - 2):
            anns = batch_annotations(raw, joined, self.runs)     # parsed here: a refuted guess is scanned exactly
            if anns is None:
                return None
            part = self.fresh()
            self.queue.append(_Ready(part if part.take(anns) else False))
        else:
            self.queue.append(self.pool.apply_async(_part, (self.fresh, raw, joined, self.runs)))
        self.batches += 1
        return self._drain(self.ahead)

    def _drain(self, keep: int) -> bool:
        """Collect the parts done, in order, until ``keep`` are left; False on one refused or not JSON."""
        while len(self.queue) > keep:
            part = self.queue[0].get()
            if part is None:
                self.again = True
            if not part:
                return False
            self.done.append(part)
            self.queue.popleft()
        return True


__all__ = ["BLOCK", "Scanner", "batch_annotations", "read_forked", "read_in_batches"]
