"""Distances between annotations (docs/method.md §2), one registry for all kinds."""

from . import boxes, cuboids, keypoints, masks, polygons, voxels  # noqa: F401  (register)
from .registry import (
    DEFAULT_DISTANCE,
    DISTANCES,
    DistanceSpec,
    Prepared,
    default_threshold,
    distances_for,
    get_distance,
    register_distance,
)

__all__ = [
    "DEFAULT_DISTANCE", "DISTANCES", "DistanceSpec", "Prepared", "default_threshold",
    "distances_for", "get_distance", "register_distance",
]
