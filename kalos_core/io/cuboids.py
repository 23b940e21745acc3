"""Reading and checking 3D cuboids (``--task cuboids``; docs/input.md).

A cuboid annotation carries FiftyOne's names for a 3D ``Detection``::

    "cuboid": {"location": [x, y, z], "dimensions": [dx, dy, dz], "rotation": [rx, ry, rz]}

``location`` is the centre, ``dimensions`` the full side lengths along the box's
own axes, ``rotation`` Euler angles in radians (:mod:`kalos_core.geometry.cuboids`),
all in scene units. The engine holds it as the flat tuple
``(x, y, z, dx, dy, dz, rx, ry, rz)``.
"""

from __future__ import annotations

import math
from typing import Any

from .values import coordinates

#: the fields of a cuboid, in the order of the engine's flat tuple
CUBOID_FIELDS = ("location", "dimensions", "rotation")


def read_cuboid(raw: Any) -> tuple[tuple | None, bool, str | None]:
    """``(geometry, any number written as a string, error)`` of an annotation's ``cuboid`` object."""
    if raw is None:
        return None, False, "annotation has no 'cuboid' (an object with location, dimensions and rotation)"
    if not isinstance(raw, dict):
        return None, False, f"cuboid must be an object with location, dimensions and rotation, got {raw!r}"[:160]
    flat, coerced = [], False
    for name in CUBOID_FIELDS:
        if name not in raw:
            return None, False, f"cuboid has no '{name}'"
        vals, was_text, err = coordinates(raw[name])
        if err or len(vals) != 3:
            why = f" ({err})" if err else ""
            return None, False, f"cuboid {name} must be 3 finite numbers [x, y, z], got {raw[name]!r}{why}"[:200]
        flat += vals
        coerced |= was_text
    geometry = tuple(flat)
    return geometry, coerced, cuboid_problem(geometry)


def cuboid_problem(geometry: Any, im: Any = None) -> str | None:
    """Why an engine cuboid ``(x, y, z, dx, dy, dz, rx, ry, rz)`` cannot be compared (None if it can)."""
    if not isinstance(geometry, (list, tuple)) or len(geometry) != 9:
        return f"cuboid must be 9 numbers (location, dimensions, rotation), got {geometry!r}"[:160]
    vals, _, err = coordinates(list(geometry))
    if err:
        return f"cuboid: {err}"
    dims = vals[3:6]
    if any(d <= 0 for d in dims):
        return f"cuboid dimensions must be positive (a box without volume cannot be compared), got {dims}"
    if math.prod(dims) <= 0 or not math.isfinite(math.prod(dims)):
        return f"cuboid dimensions {dims} give no usable volume"
    return None
