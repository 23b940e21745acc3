"""The per-image α of one key of an agreement run, held as two arrays.

A run records, per diagnostic key, the α of every image where the key occurs: once a
list of ``(image index, α)`` tuples, about 130 bytes a value in Python objects (82 MB of
a 50,000-image run's peak). :class:`ImageValues` keeps the image indices and the α as
arrays (16 bytes a value), appended chunk by chunk without copying, and still reads as
that list: iteration, ``len``, indexing and ``==`` give the same tuples, so a registered
diagnostic's ``reduce`` that walks ``(i, a)`` pairs runs unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ImageValues(Sequence):
    """``[(image index, α), ...]`` in the order recorded, as arrays (:attr:`images`, :attr:`alphas`)."""

    __slots__ = ("_parts",)

    def __init__(self, images=(), alphas=()) -> None:
        images, alphas = np.asarray(images, np.int64), np.asarray(alphas, np.float64)
        if images.shape != alphas.shape or images.ndim != 1:
            raise ValueError(f"images and alphas must be two 1-d arrays of one length, got shapes "
                             f"{images.shape} and {alphas.shape}")
        self._parts = [(images, alphas)] if len(images) else []

    def extend(self, other: ImageValues) -> None:
        """Append ``other``'s values (its arrays are shared, not copied)."""
        self._parts += other._parts

    def _joined(self) -> tuple[np.ndarray, np.ndarray]:
        if len(self._parts) > 1:
            self._parts = [(np.concatenate([i for i, _ in self._parts]), np.concatenate([a for _, a in self._parts]))]
        return self._parts[0] if self._parts else (np.zeros(0, np.int64), np.zeros(0))

    @property
    def images(self) -> np.ndarray:
        """The image indices (read-only: the arrays are shared by the partials that extend them)."""
        return _read_only(self._joined()[0])

    @property
    def alphas(self) -> np.ndarray:
        """The α, in the same order (read-only)."""
        return _read_only(self._joined()[1])

    def __len__(self) -> int:
        return sum(len(a) for _, a in self._parts)

    def __getitem__(self, k):
        images, alphas = self._joined()
        if isinstance(k, slice):
            return list(zip(images[k].tolist(), alphas[k].tolist()))
        return int(images[k]), float(alphas[k])

    def __iter__(self):
        images, alphas = self._joined()
        return zip(images.tolist(), alphas.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None     # mutable (extend), as the list it replaces

    def __repr__(self) -> str:
        return f"ImageValues({list(self)!r})"


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def alphas_of(items) -> np.ndarray:
    """The α of ``items``: :class:`ImageValues` or any sequence of ``(image index, α)`` pairs."""
    if isinstance(items, ImageValues):
        return items.alphas
    return np.array([a for _, a in items], np.float64)


__all__ = ["ImageValues", "alphas_of"]
