"""The one refusal every importer raises: what is wrong, where (file, then task / image /
annotation / line), and the fix. Raised before anything is written to a dataset."""

from __future__ import annotations

from ..errors import SetupError


class ImportRefused(SetupError):
    """An import refused before anything was written. ``str()`` is one line a user can act on:
    ``<file>, <where>: <problem>; <fix>``."""

    def __init__(self, problem: str, file=None, where: str | None = None, fix: str | None = None,
                 param: str | None = None):
        self.problem, self.file, self.where, self.fix = problem, file, where, fix
        head = ", ".join(str(p) for p in (file, where) if p)
        text = (f"{head}: " if head else "") + problem + (f"; {fix}" if fix else "")
        super().__init__(" ".join(text.split()), param)

