"""Pixel agreement of class maps: rater patterns, exact coincidence counts, α and Dice.

Every pixel is a unit; each rater's class there is a value; a rater without a mask on the
image, or the ignore value, is a missing value. All the pixel measures depend on an image only
through its *patterns*: the distinct tuples of the raters' values and how many pixels hold each
(:func:`patterns`, one ``np.bincount`` over a code per pixel). From them come

* the coincidence counts of Krippendorff's α (:func:`coincidence_counts`), kept as integers per
  ``m_u - 1`` so that sums over images stay exact, and α itself (:func:`alpha_of_counts`): pooled
  over classes, and per class one vs rest (the coincidence matrix collapsed to class / not class);
* each rater pair's confusion matrix (:func:`pair_confusion`), hence Dice and Jaccard per class.

No pixel is sampled: the counts are those of every pixel.
"""

from __future__ import annotations

import numpy as np

MISSING = -1
#: above this many possible patterns the codes are counted by sorting (``np.unique``), not by a bincount
BINCOUNT_LIMIT = 1 << 24


def patterns(values: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rater tuples of ``values`` ((R, P) class per rater and pixel, MISSING = none).

    Returns ``table`` ((K, R), the tuples), ``count`` ((K,) pixels holding each) and ``index``
    ((P,) the tuple of each pixel)."""
    r, p = values.shape
    base = n_classes + 1
    if base ** r < 2 ** 62:
        code = np.zeros(p, np.int64)
        for row in values[::-1]:
            code *= base
            code += row.astype(np.int64) + 1
        if base ** r <= BINCOUNT_LIMIT:
            counts = np.bincount(code, minlength=base ** r)
            present = np.flatnonzero(counts)
            lut = np.zeros(base ** r, np.int64)
            lut[present] = np.arange(len(present))
            index, count, codes = lut[code], counts[present], present
        else:
            codes, index, count = np.unique(code, return_inverse=True, return_counts=True)
        digits = (codes[:, None] // base ** np.arange(r)[None, :]) % base
        return digits - 1, count.astype(np.int64), index.ravel()
    table, index, count = np.unique(values.T, axis=0, return_inverse=True, return_counts=True)
    return table.astype(np.int64), count.astype(np.int64), index.ravel()


def coincidence_counts(table: np.ndarray, count: np.ndarray, n_classes: int) -> np.ndarray:
    """(R, C, C) integer counts: ``[m - 1, c, k]`` = ordered pairs of values (c, k) from two
    different raters within pixels holding ``m`` values. The coincidence matrix is
    ``Σ_m counts[m - 1] / (m - 1)`` (m ≥ 2)."""
    k, r = table.shape
    out = np.zeros((max(r, 1), n_classes, n_classes), np.int64)
    present = table >= 0
    m = present.sum(1)
    for i in range(r):
        for j in range(i + 1, r):
            both = present[:, i] & present[:, j]
            np.add.at(out, (m[both] - 1, table[both, i], table[both, j]), count[both])
    return out + out.transpose(0, 2, 1)


def coincidences(counts: np.ndarray) -> np.ndarray:
    """The (C, C) coincidence matrix of integer counts (:func:`coincidence_counts`)."""
    weights = np.zeros(len(counts))
    weights[1:] = 1.0 / np.arange(1, len(counts))
    return np.tensordot(weights, counts.astype(float), axes=1)


def alpha_of_coincidences(o: np.ndarray) -> float | None:
    """Nominal α of a coincidence matrix; 1.0 when the values show no variation (every pairable
    value the same class), None when nothing is pairable (no pixel holds two values)."""
    n = o.sum()
    if n <= 1:
        return None
    n_c = o.sum(1)
    expected = n * n - (n_c * n_c).sum()
    if expected <= 0:
        return 1.0
    return float(1.0 - (n - 1) * (n - np.trace(o)) / expected)


def class_alpha(o: np.ndarray, c: int) -> float | None:
    """Nominal α of class ``c`` against the rest (the coincidence matrix collapsed to 2 x 2);
    None when no pairable value is ``c`` (the class is absent: nothing to agree on)."""
    if c >= len(o) or o[c].sum() == 0:
        return None
    inside = o[c, c]
    across = o[c].sum() - inside
    rest = o.sum() - inside - 2 * across
    return alpha_of_coincidences(np.array([[inside, across], [across, rest]]))


def pair_confusion(table: np.ndarray, count: np.ndarray, i: int, j: int, n_classes: int) -> np.ndarray:
    """(C, C) pixels with rater ``i`` saying row, rater ``j`` saying column (both present)."""
    both = (table[:, i] >= 0) & (table[:, j] >= 0)
    out = np.zeros((n_classes, n_classes), np.int64)
    np.add.at(out, (table[both, i], table[both, j]), count[both])
    return out


def dice_jaccard(conf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class Dice and Jaccard of a pair's confusion matrix, NaN where neither rater has the class;
    and the per class sizes (intersection, |A|, |B|) stacked as (3, C)."""
    inter = np.diag(conf).astype(float)
    a, b = conf.sum(1).astype(float), conf.sum(0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        dice = 2 * inter / (a + b)
        jaccard = inter / (a + b - inter)
    return dice, jaccard, np.stack([inter, a, b])


def majority(table: np.ndarray, n_classes: int) -> np.ndarray:
    """(K,) the most frequent present class of each pattern (a tie: the lowest class; no value: MISSING)."""
    votes = np.zeros((len(table), n_classes), np.int64)
    for i in range(table.shape[1]):
        ok = table[:, i] >= 0
        np.add.at(votes, (np.flatnonzero(ok), table[ok, i]), 1)
    out = votes.argmax(1)
    out[votes.max(1) == 0] = MISSING
    return out


def disagreement(table: np.ndarray, n_classes: int) -> np.ndarray:
    """(K,) uint8: per pattern, the percent (rounded) of its present values outside its most frequent
    class (0: all agree; a pattern with fewer than two values: 0)."""
    votes = np.zeros((len(table), n_classes), np.int64)
    for i in range(table.shape[1]):
        ok = table[:, i] >= 0
        np.add.at(votes, (np.flatnonzero(ok), table[ok, i]), 1)
    m = votes.sum(1)
    share = np.where(m >= 2, 1 - votes.max(1) / np.maximum(m, 1), 0.0)
    return np.rint(100 * share).astype(np.uint8)


def majority_share(table: np.ndarray, n_classes: int) -> np.ndarray:
    """(K,) the share of each pattern's present values that are its most frequent class (0 without any)."""
    votes = np.zeros((len(table), n_classes), np.int64)
    for i in range(table.shape[1]):
        ok = table[:, i] >= 0
        np.add.at(votes, (np.flatnonzero(ok), table[ok, i]), 1)
    return votes.max(1) / np.maximum(votes.sum(1), 1)
