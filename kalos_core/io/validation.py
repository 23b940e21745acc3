"""Input problems: collected with the ids at fault, raised together or skipped."""

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
            where.append(f"image {self.image_id}")
        if self.annotation_id is not None:
            where.append(f"annotation {self.annotation_id}")
        if self.rater_id is not None:
            where.append(f"rater {self.rater_id!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


class InvalidInputError(ValueError):
    """Raised when the input has problems and skipping them was not asked for."""

    def __init__(self, problems: list[Problem], source: str = "input", shown: int = 20):
        self.problems = problems
        lines = [p.describe() for p in problems[:shown]]
        more = f"\n  ... and {len(problems) - shown} more" if len(problems) > shown else ""
        super().__init__(
            f"{len(problems)} invalid item(s) in {source}:\n  " + "\n  ".join(lines) + more
            + "\n(use --skip-invalid / skip_invalid=True to drop them and go on)"
        )
