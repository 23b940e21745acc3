"""Synthetic raters and "schools of thought" (paper Sec. 5.2, Fig. 7).

A school is a group of raters that share an annotation *convention*: a
systematic per-edge offset of every box they draw, e.g. "the box includes the
handle" (one edge moved outwards) versus "excludes it". A *defiant* rater
follows a convention of its own and is noisier than the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .profile import NoiseProfile

#: edge offsets ``(left, top, right, bottom)`` as fractions of the object's width / height;
#: positive values move an edge outwards (the box grows)
Offsets = tuple[float, float, float, float]


@dataclass(frozen=True)
class RaterSpec:
    """One synthetic rater: its name (``rater_id``), a multiplier of the global magnitude,
    its school and that school's convention, and optionally a profile of its own."""

    name: str
    magnitude: float = 1.0
    school: str | None = None
    edge_offsets: Offsets = (0.0, 0.0, 0.0, 0.0)
    profile: NoiseProfile | None = None


def plain_raters(n_raters: int, prefix: str = "rater") -> list[RaterSpec]:
    """``n_raters`` interchangeable raters ``rater_1 .. rater_n`` (no conventions)."""
    if n_raters < 1:
        raise ValueError(f"need at least one rater, got {n_raters}")
    return [RaterSpec(f"{prefix}_{k}") for k in range(1, n_raters + 1)]


def school_raters(sizes: Sequence[int], strength: float = 0.4, defiant: bool = False,
                  defiant_magnitude: float = 2.0, prefix: str = "rater") -> list[RaterSpec]:
    """Raters in schools of the given ``sizes`` (e.g. ``(3, 3)`` or ``(5, 1)``).

    The schools' conventions are spread evenly over ``[-strength/2, +strength/2]`` on the
    *top* edge (a part above the object included or left out); two schools therefore differ
    by ``strength`` times the object height. ``defiant`` adds one more rater, ``defiant``,
    whose convention moves the *left* edge by ``strength`` and whose magnitude is
    ``defiant_magnitude`` times the global one.
    """
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError(f"school sizes must be positive, got {list(sizes)}")
    raters, k = [], 1
    g = len(sizes)
    for school, size in enumerate(sizes):
        top = 0.0 if g == 1 else strength * (school / (g - 1) - 0.5)
        for _ in range(size):
            raters.append(RaterSpec(f"{prefix}_{k}", school=f"school_{chr(65 + school)}",
                                    edge_offsets=(0.0, top, 0.0, 0.0)))
            k += 1
    if defiant:
        raters.append(RaterSpec("defiant", magnitude=defiant_magnitude, school="defiant",
                                edge_offsets=(strength, 0.0, 0.0, 0.0)))
    return raters


def rater_specs(n_raters: int, schools: Sequence[int] = (), defiant: bool = False) -> list[RaterSpec]:
    """The raters of one simulation: schools of the given sizes (``n_raters`` ignored), else
    ``n_raters`` plain raters; ``defiant`` adds the defiant rater of :func:`school_raters`."""
    if schools:
        return school_raters(list(schools), defiant=defiant)
    return plain_raters(n_raters) + (school_raters([1], defiant=True)[1:] if defiant else [])
