"""Names a package imports on first use (PEP 562), so that importing it pays only for what is used."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, table: dict[str, str], namespace: dict,
                    fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` comes from the submodule ``table[name]`` on
    first use and is kept in ``namespace`` (the package's globals) after that; a name the table
    lacks is ``fallback(name)`` where that is not None."""

    def __getattr__(name: str) -> Any:
        value = getattr(import_module(f"{package}.{table[name]}"), name) if name in table else (
            fallback(name) if fallback is not None and not name.startswith("__") else None)
        if value is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__


class LazyModule:
    """A module imported on its first attribute use: ``shapely = LazyModule("shapely")`` at the top
    of a module that only some runs need (segmentation, masks), so the others never pay its import."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(import_module(self._name), attr)
