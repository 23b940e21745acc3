"""A registry of named things of one kind (executors, solvers, costs, agreement diagnostics):
registered once, looked up by name, listed in registration order.

    SOLVERS = Registry("solver")

    @SOLVERS.register("greedy")
    def greedy(...): ...

    SOLVERS.get("greedy")    # or ValueError: unknown solver 'x'; known: greedy, ...

It reads as a mapping (``SOLVERS["greedy"]``, ``list(SOLVERS)``, ``SOLVERS.items()``), so a form or a
parameter's choices list it directly; registering a name twice is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping, Generic[T]):
    """Named items of one ``kind`` (the word the errors use), in registration order."""

    def __init__(self, kind: str, items: Mapping[str, T] | None = None):
        self.kind = kind
        self._items: dict[str, T] = {}
        for name, item in (items or {}).items():
            self.add(name, item)

    def add(self, name: str, item: T) -> T:
        """Register ``item`` as ``name``; a name registered already is a ValueError."""
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: :meth:`add` the decorated object as ``name``."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T:  # type: ignore[override]
        """The item registered as ``name``, or a ValueError naming it and every known name."""
        try:
            return self._items[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}; known: {', '.join(self._items)}") from None

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"
