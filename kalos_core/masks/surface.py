"""Boundary measures of two binary masks: boundary F-score, surface Dice, HD95, mean surface distance.

Conventions (docs/masks.md):

* A mask's boundary is its pixels with a 4-neighbour (6 in 3D) outside the mask or outside the
  image: ``mask & ~erosion(mask)``, the image's edge counting as outside.
* Distances are Euclidean, in pixels (``spacing`` scales the axes), from each boundary pixel of
  one mask to the nearest boundary pixel of the other (``scipy.ndimage.distance_transform_edt``).
* boundary F-score at tolerance τ: precision = share of A's boundary pixels within τ of B's,
  recall = share of B's within τ of A's, F = their harmonic mean.
* surface Dice at τ: boundary pixels of both masks within τ of the other's boundary, over all
  boundary pixels of both (Nikolov et al. 2021, counted in pixels rather than surface elements).
* HD95: the 95th percentile (linear interpolation) of both directions' distances pooled;
  mean surface distance (ASSD): the mean of both directions' distances pooled.
* Both masks empty: every measure is None (the class is absent; nothing to compare). One empty:
  boundary F and surface Dice are 0, HD95 and the mean surface distance None (no distance
  exists); such pairs are counted as ``one_empty``.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

KEYS = ("boundary_f", "surface_dice", "hd95", "msd")


def boundary(mask: np.ndarray) -> np.ndarray:
    """The boundary pixels of a binary mask (the image edge counts as outside)."""
    structure = ndimage.generate_binary_structure(mask.ndim, 1)
    return mask & ~ndimage.binary_erosion(mask, structure=structure, border_value=0)


def distance_to(border: np.ndarray, box: tuple, spacing=None) -> np.ndarray:
    """Distance of every pixel of ``box`` (a tuple of slices holding every pixel of ``border``)
    to the nearest pixel of ``border``."""
    return ndimage.distance_transform_edt(~border[box], sampling=spacing)


def bounding_box(borders: list[np.ndarray]) -> tuple | None:
    """Slices holding every True pixel of ``borders`` (None: none is)."""
    union = np.logical_or.reduce(borders)
    if not union.any():
        return None
    return ndimage.find_objects(union.astype(np.int8))[0]


def measures(a_border: np.ndarray, b_border: np.ndarray, dist_a: np.ndarray | None, dist_b: np.ndarray | None,
             box: tuple | None, tolerance: float) -> dict:
    """The four measures of a pair, given each mask's boundary and the distance maps to each boundary
    over ``box`` (None for an empty mask)."""
    na, nb = int(a_border.sum()), int(b_border.sum())
    if na == 0 and nb == 0:
        return dict.fromkeys(KEYS)
    if na == 0 or nb == 0:
        return {"boundary_f": 0.0, "surface_dice": 0.0, "hd95": None, "msd": None}
    ab = dist_b[a_border[box]]          # A's boundary pixels -> B's boundary
    ba = dist_a[b_border[box]]
    tol = tolerance + 1e-9              # a distance equal to the tolerance is within it
    within_ab, within_ba = int((ab <= tol).sum()), int((ba <= tol).sum())
    precision, recall = within_ab / na, within_ba / nb
    f = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {"boundary_f": f, "surface_dice": (within_ab + within_ba) / (na + nb),
            "hd95": float(np.percentile(np.concatenate([ab, ba]), 95)),
            "msd": float((ab.sum() + ba.sum()) / (na + nb))}


def pair_measures(a: np.ndarray, b: np.ndarray, tolerance: float, spacing=None) -> dict:
    """The boundary measures of two binary masks (one call; the engine shares the distance maps)."""
    ba_, bb_ = boundary(a.astype(bool)), boundary(b.astype(bool))
    box = bounding_box([ba_, bb_])
    if box is None or not ba_.any() or not bb_.any():
        return measures(ba_, bb_, None, None, box, tolerance)
    return measures(ba_, bb_, distance_to(ba_, box, spacing), distance_to(bb_, box, spacing), box, tolerance)
