"""Per-annotation results (unit, status) kept as the chunks' columns, made a dict on first use.

A run's :attr:`AgreementResult.unit_of` and ``status_of`` map every annotation id to its
unit (``"<image id>:<unit>"``) and status. Building 2 × 300k Python strings and dict
entries costs a third of a 300k-box run, and most runs (the CLI without
``--include-labels``) never read them: the map step keeps, per chunk, the ids, the
images' prefixes and the unit / status codes (:class:`LabelBlock`), and :class:`LabelMap`
builds the dict the first time it is read. It is a read-only ``Mapping`` equal to that
dict (and pickles as one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..reliability import STATUS   # status names by code (kalos_core.reliability.status_codes)


class LabelBlock(NamedTuple):
    """Consecutive annotations of some images: ``ids``; per image its unit prefix
    (``"<image id>:"``) and its number of annotations; per annotation its unit and status code.
    With ``order``, annotation k's id is ``ids[order[k]]`` (ids kept as read, not permuted)."""

    ids: list
    prefixes: list[str]
    counts: list[int]
    units: np.ndarray
    codes: np.ndarray
    order: np.ndarray | None = None

    @classmethod
    def compact(cls, ids: list, prefixes: list[str], counts: list[int], units: np.ndarray, codes: np.ndarray,
                order: np.ndarray | None = None) -> LabelBlock:
        """The block with its codes in the smallest types that hold them: a run keeps one block per
        chunk to its end (at 2.9M annotations, 32 bytes each as int64: 93 MB). Status codes are
        below 3; a unit number and a place in ``order`` are below the block's length."""
        small = np.int32 if len(units) < 2 ** 31 else np.int64
        return cls(ids, prefixes, counts, np.asarray(units).astype(small, copy=False),
                   np.asarray(codes).astype(np.int8, copy=False),
                   None if order is None else np.asarray(order).astype(small, copy=False))

    def ordered_ids(self) -> list:
        return self.ids if self.order is None else [self.ids[k] for k in self.order.tolist()]


class LabelMap(Mapping):
    """``annotation id -> unit id`` (``what="unit"``) or ``-> status`` (``what="status"``)."""

    __slots__ = ("_blocks", "_what", "_dict")

    def __init__(self, blocks: list[LabelBlock], what: str) -> None:
        if what not in ("unit", "status"):
            raise ValueError(f"what must be 'unit' or 'status', not {what!r}")
        self._blocks, self._what, self._dict = blocks, what, None

    def _data(self) -> dict:
        if self._dict is None:
            out: dict = {}
            for b in self._blocks:
                if self._what == "status":
                    out.update(zip(b.ordered_ids(), [STATUS[c] for c in b.codes.tolist()]))
                    continue
                units, strings, start = b.units.tolist(), [], 0
                for prefix, n in zip(b.prefixes, b.counts):
                    strings += [prefix + str(u) for u in units[start:start + n]]
                    start += n
                out.update(zip(b.ordered_ids(), strings))
            self._dict = out
        return self._dict

    def __getitem__(self, key: Any) -> Any:
        return self._data()[key]

    def as_dict(self) -> dict:
        """The dict itself (built once; not to be changed): many look-ups without a call each."""
        return self._data()

    def unit_codes(self) -> tuple[list, np.ndarray, np.ndarray, list[str]] | None:
        """Of a unit map, every annotation as the blocks read it: ``(ids, units, image, prefixes)``,
        annotation k's unit being ``prefixes[image[k]] + str(units[k])`` (the dict's values without
        their strings); None for a status map or units that are not integer codes."""
        if self._what != "unit" or any(b.units.dtype.kind not in "iu" for b in self._blocks):
            return None
        ids, units, counts, prefixes = [], [], [], []
        for b in self._blocks:
            ids += b.ids
            u = b.units
            if b.order is not None:
                u = np.empty_like(b.units)
                u[b.order] = b.units
            units.append(u)
            counts += b.counts
            prefixes += b.prefixes
        image = np.repeat(np.arange(len(counts)), counts)
        return ids, np.concatenate(units or [np.empty(0, np.int64)]), image, prefixes

    def __iter__(self):
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __contains__(self, key: object) -> bool:
        return key in self._data()

    def __repr__(self) -> str:
        return f"LabelMap({self._what}, {len(self)} annotations)"

    def __reduce__(self):
        return dict, (self._data(),)


__all__ = ["LabelBlock", "LabelMap", "STATUS"]
