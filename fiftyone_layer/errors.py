"""The one exception the adapters raise for a bad set-up (shared by every operator and the run store)."""

from __future__ import annotations


class SetupError(ValueError):
    """A bad set-up, worded for a form error; ``param`` names the input at fault."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param
