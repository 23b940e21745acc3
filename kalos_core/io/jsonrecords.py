"""A list of records given as columns, written as ``json.dumps(records, indent=1)`` writes it.

A consensus COCO file is 100k annotations of a dozen keys each. Building a dict per annotation
and encoding them costs more than the consensus itself; here each column is encoded at once
(``int.__repr__`` / ``float.__repr__`` / ``json``'s own string encoder over the whole column,
the values ``json`` writes) and the rows are joined from the column texts. Any value outside the
fast paths (a subclass, a dict, a nested list of lists) is written by ``json.dumps`` itself, so
the text is always ``json``'s (tests/core/test_jsonrecords.py compares them).

Whitespace: ``indent=1`` puts a value at depth ``d`` after ``"\\n"`` and ``d`` spaces; a value
written at depth 0 moves to depth ``d`` by adding ``d`` spaces after each ``"\\n"`` (strings
hold none: ``json`` escapes them).
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring_ascii as _string

import numpy as np

from .jsonwrite import dumps_indented


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()   #: a record without this key (the key is left out, as a dict without it)

_NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _float(v: float) -> str:
    t = float.__repr__(v)
    return t if math.isfinite(v) else _NONFINITE[t]


_SCALAR = {str: _string, int: int.__repr__, float: _float, bool: lambda v: "true" if v else "false",
           type(None): lambda v: "null"}


def _indent(depth: int) -> str:
    return "\n" + " " * depth


def value_texts(col: list, depth: int) -> list[str]:
    """``json.dumps(v, indent=1)`` of each value of ``col`` as it is written at ``depth``."""
    texts = _scalar_texts(col)
    if texts is None:
        if (lists := _few_text_lists(col)) is not None:
            memo = dict(zip(lists, value_texts(list(map(list, lists)), depth)))
            return [memo[tuple(v)] for v in col]
        flat = _flat_texts(col, depth)
        if flat is None:
            return [dumps_indented(v).replace("\n", _indent(depth)) for v in col]
        texts = _lists(col, flat, depth)
    return texts


def _scalar_texts(col: list) -> list[str] | None:
    """The texts of a column of text, ints, floats, bools and None (else None). A column of few
    distinct floats (a score) or ints or bools writes each once; not 0.0, which equals -0.0 but is
    written apart (ints and bools: one type in the column, so 1 and True are never one key)."""
    kinds = set(map(type, col))
    if not kinds <= _SCALAR.keys():
        return None
    if kinds == {float}:
        if not all(map(math.isfinite, col)):
            return list(map(_float, col))
        if len(set(col[:256])) < 64 and 0.0 not in (distinct := set(col)) and 4 * len(distinct) < len(col):
            memo = dict(zip(distinct, map(float.__repr__, distinct)))
            return list(map(memo.__getitem__, col))
        return list(map(float.__repr__, col))
    if len(kinds) == 1:
        write = _SCALAR[kinds.pop()]
        if write in (int.__repr__, _SCALAR[bool]) and len(set(col[:256])) < 64 \
                and 4 * len(distinct := set(col)) < len(col):      # few distinct: each written once
            return list(map(dict(zip(distinct, map(write, distinct))).__getitem__, col))
        return list(map(write, col))
    return [_SCALAR[type(v)](v) for v in col]


def _few_text_lists(col: list) -> list[tuple] | None:
    """The distinct lists (as tuples) of a column of lists (or tuples) of text with few distinct ones
    (the raters of a unit), else None. Text only: ``[1]`` and ``[True]`` are equal tuples, written apart."""
    if len(col) < 64 or set(map(type, col)) - {list, tuple} or len(set(map(tuple, col[:256]))) >= 64:
        return None
    distinct = set(map(tuple, col))
    if 4 * len(distinct) >= len(col) or set(map(type, [e for v in distinct for e in v])) - {str}:
        return None
    return list(distinct)


def _flat_texts(col: list, depth: int) -> list[str] | None:
    """The elements' texts, all lists one after another, of a column of lists of scalars (else None)."""
    if set(map(type, col)) != {list}:
        return None
    return _scalar_texts([e for v in col for e in v])


def _lists(col: list, texts: list[str], depth: int) -> list[str]:
    """Each list of ``col`` from its elements' ``texts`` (in order, all lists one after another)."""
    inner, outer = _indent(depth + 1), _indent(depth)
    sep, opening, closing = "," + inner, "[" + inner, outer + "]"
    out, start = [], 0
    for v in col:
        end = start + len(v)
        out.append(opening + sep.join(texts[start:end]) + closing if end > start else "[]")
        start = end
    return out


def records_text(columns: list[tuple[str, list]], depth: int = 0) -> str:
    """``json.dumps([...], indent=1)`` of the records (:func:`records_parts` joined)."""
    return "".join(records_parts(columns, depth))


def records_parts(columns: list[tuple[str, list]], depth: int = 0) -> list[str]:
    """The texts that, joined, are ``json.dumps([...], indent=1)`` of the records whose values under
    each key are the column (``ABSENT``: that record has no such key; a 2-D float array: its rows
    as lists of floats), as written at ``depth``. Keys are text.

    A record is a row of pieces: per column its key (text common to all records) and its value's
    texts (a column of lists of one length: a piece per element); a column with ``ABSENT`` values
    has one piece for its key and value together, empty where absent. The pieces of all records
    are put one after another into one list and joined once."""
    n = len(columns[0][1]) if columns else 0
    if not n:
        return ["[]"]
    inner = _indent(depth + 2)
    pieces: list = []             # text common to all records, or a list of one text per record
    for key, col in columns:
        head = "," + inner + _string(key) + ": "
        if isinstance(col, np.ndarray):           # a 2-D float array: its rows as lists of floats
            k = col.shape[1]
            pieces += _slots(head, _scalar_texts(np.asarray(col, float).ravel().tolist()), k, depth) if k \
                else [head + "[]"]
            continue
        absent = [v is ABSENT for v in col]
        if any(absent):
            it = iter(value_texts([v for v, a in zip(col, absent) if not a], depth + 2))
            pieces.append(["" if a else head + next(it) for a in absent])
            continue
        sizes = set(map(len, col)) if set(map(type, col)) == {list} else ()
        flat = _flat_texts(col, depth + 2) if len(sizes) == 1 and 0 not in sizes else None
        if flat is None:
            pieces += [head, value_texts(col, depth + 2)]
            continue
        pieces += _slots(head, flat, sizes.pop(), depth)
    pieces = [p for p in pieces if p != ""]
    for j in range(len(pieces) - 1, 0, -1):         # neighbouring common texts as one
        if isinstance(pieces[j], str) and isinstance(pieces[j - 1], str):
            pieces[j - 1] += pieces.pop(j)
    closing, between = _indent(depth + 1) + "}", "," + _indent(depth + 1)
    lists = [[p] * n if isinstance(p, str) else p for p in pieces]
    if not isinstance(pieces[0], str):               # a record may have no key at all: "{}"
        rows = ["{" + r[1:] + closing if r else "{}" for r in map("".join, zip(*lists))]
        return ["[" + _indent(depth + 1) + between.join(rows) + _indent(depth) + "]"]
    first = "{" + pieces[0][1:]
    lists[0] = ["[" + _indent(depth + 1) + first] + [closing + between + first] * (n - 1)
    out = [None] * (n * len(lists))
    for j, texts in enumerate(lists):
        out[j::len(lists)] = texts
    out.append(closing + _indent(depth) + "]")
    return out


def _slots(head: str, flat: list[str], k: int, depth: int) -> list:
    """The pieces of a column of lists of ``k`` values whose texts are ``flat`` (one list after another)."""
    inner, inner2 = _indent(depth + 2), _indent(depth + 3)
    return [x for j in range(k) for x in (head + "[" + inner2 if j == 0 else "," + inner2, flat[j::k])] + [inner + "]"]


def dumps_with(obj: dict, texts: dict[str, str | list[str]]) -> str:
    """``json.dumps(obj, indent=1)`` of a dict with text keys, where ``texts`` gives some of its
    values already written at depth 1 (as :func:`records_text` ``(..., depth=1)`` writes them, or
    as the parts of :func:`records_parts`), joined once."""
    if not obj:
        return "{}"
    out = ["{"]
    for k, v in obj.items():
        out += [_indent(1) if len(out) == 1 else "," + _indent(1), _string(k), ": "]
        text = texts[k] if k in texts else dumps_indented(v).replace("\n", _indent(1))
        out += [text] if isinstance(text, str) else text
    out.append("\n}")
    return "".join(out)


__all__ = ["ABSENT", "dumps_with", "records_parts", "records_text", "value_texts"]
