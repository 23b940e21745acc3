"""Input problems and coercions: collected with the ids at fault.

Every bad input is decided once, at the edge (docs/input.md): either it is a
:class:`Problem` (raised together as :class:`InvalidInputError`, or dropped and
counted with ``skip_invalid``), or it is coerced and counted in
:class:`InputWarnings`, which reach the result JSON as ``warnings``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, naming what is at fault."""

    message: str
    image_id: Any = None
    annotation_id: Any = None
    rater_id: Any = None

    def describe(self) -> str:
        where = []
        if self.image_id is not None:
            where.append(f"image {self.image_id!r}" if isinstance(self.image_id, str) and _looks_numeric(self.image_id)
                         else f"image {self.image_id}")
        if self.annotation_id is not None:
            where.append(f"annotation {self.annotation_id!r}"
                         if isinstance(self.annotation_id, str) and _looks_numeric(self.annotation_id)
                         else f"annotation {self.annotation_id}")
        if self.rater_id is not None:
            where.append(f"rater {self.rater_id!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def to_dict(self) -> dict:
        return {k: _plain_id(v) for k, v in asdict(self).items() if v is not None}


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _plain_id(v: Any) -> Any:
    return v if isinstance(v, (str, int, float)) else repr(v)


class InvalidInputError(ValueError):
    """The input has problems (``problems``: a list of :class:`Problem`, each naming its ids).

    Raised when skipping them was not asked for, or when nothing could be kept
    (``hint=False``: skipping would not help, e.g. a file that is not JSON).
    """

    def __init__(self, problems: list[Problem], source: str = "input", shown: int = 20, hint: bool = True):
        self.problems = list(problems)
        self.source = source
        lines = [p.describe() for p in self.problems[:shown]]
        more = f"\n  ... and {len(self.problems) - shown} more" if len(self.problems) > shown else ""
        tail = "\n(use --skip-invalid / skip_invalid=True to drop them and go on)" if hint else ""
        if len(self.problems) == 1 and not hint:
            text = f"{source}: {lines[0]}"
        else:
            text = f"{len(self.problems)} invalid item(s) in {source}:\n  " + "\n  ".join(lines) + more + tail
        super().__init__(text)

    @property
    def image_ids(self) -> list:
        """Ids of the images at fault, in order, without repeats."""
        return list(dict.fromkeys(p.image_id for p in self.problems if p.image_id is not None))

    @property
    def annotation_ids(self) -> list:
        """Ids of the annotations at fault, in order, without repeats."""
        return list(dict.fromkeys(p.annotation_id for p in self.problems if p.annotation_id is not None))


#: the name the issue tracker and the operators use for it
KalosInputError = InvalidInputError


def fatal(message: str, source: str = "input") -> InvalidInputError:
    """An error about the input as a whole (skipping items would not help)."""
    return InvalidInputError([Problem(message)], source, hint=False)


class InputWarnings:
    """Coercions applied to the input: one entry per kind, with a count and the first ids.

    ``to_list()`` gives ``[{"message", "count", "examples"}]``, the ``warnings``
    of the result JSON.
    """

    def __init__(self, items: list[dict] | None = None, examples: int = 5) -> None:
        self._items: dict[str, dict] = {}
        self._examples = examples
        for item in items or ():
            self.add(item["message"], count=item.get("count", 1), examples=item.get("examples", ()))

    def add(self, message: str, where: str | None = None, count: int = 1, examples=()) -> None:
        entry = self._items.setdefault(message, {"message": message, "count": 0, "examples": []})
        entry["count"] += count
        for ex in ([where] if where is not None else []) + list(examples):
            if len(entry["examples"]) < self._examples and ex not in entry["examples"]:
                entry["examples"].append(ex)

    def __len__(self) -> int:
        return len(self._items)

    def to_list(self) -> list[dict]:
        return [{**e, "examples": list(e["examples"])} for e in self._items.values()]


def describe_warning(w: dict) -> str:
    """One line for a warning entry: ``message (N×, e.g. image 3, annotation 7)``."""
    ex = f", e.g. {', '.join(map(str, w['examples']))}" if w.get("examples") else ""
    return f"{w['message']} ({w['count']}x{ex})"
