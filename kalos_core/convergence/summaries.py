"""From AP arrays to summaries: one direction, two directions averaged, several pairs pooled."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from .accumulate import prepare, subsets_ap
from .types import THRESHOLD_KEYS, MapSummary

if TYPE_CHECKING:
    from .cocoeval import DirectionTable


def nanmean(a, axis=None):
    """``np.nanmean`` without the all-NaN warning (the result is NaN there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=axis)


def full_set_ap(table: DirectionTable) -> np.ndarray:
    """(T, K) AP read from COCOeval's accumulated precision array (mean over the 101 recall
    points); NaN where the category has no ground truth (COCOeval's -1)."""
    p = table.precision
    if p.shape[2] == 0:
        return np.zeros((p.shape[0], 0))
    return np.where(p[:, 0, :] > -1, p.mean(axis=1), np.nan)


class Side:
    """One evaluated direction and where its images sit in the run's image list."""

    def __init__(self, table: DirectionTable, index_of: dict):
        self.table = table
        self.pos = np.array([index_of[i] for i in table.image_ids], dtype=np.int64)
        self.prepared = None                                          # accumulate.prepare(table), on first use

    def per_threshold(self, union_masks: np.ndarray) -> np.ndarray:
        """(S, T) AP per subset (a row of ``union_masks``, over the run's images) and threshold, the
        mean over classes; NaN where undefined."""
        if self.prepared is None:
            self.prepared = prepare(self.table)
        masks = np.asarray(union_masks, dtype=bool)[:, self.pos]
        return nanmean(subsets_ap(self.table, masks, prepared=self.prepared), axis=2)


def direction_summary(ap: np.ndarray, cat_ids, names: dict) -> MapSummary:
    """One direction: mAP, AP50, AP75, AP per threshold (mean over classes with ground truth) and AP
    per class (mean over thresholds)."""
    per_t = nanmean(ap, axis=1) if ap.size else np.full(ap.shape[0], np.nan)
    per_class = {names.get(int(c), str(c)): float(v) for c, v in zip(cat_ids, nanmean(ap, axis=0))
                 if np.isfinite(v)} if ap.size else {}
    return MapSummary(float(nanmean(per_t)), float(per_t[0]), float(per_t[5]),
                      dict(zip(THRESHOLD_KEYS, map(float, per_t))), per_class)


def average_summaries(parts: list[MapSummary]) -> MapSummary:
    """The mean of several summaries (two directions, several raters, several pairs); per class, the
    mean over the parts where the class is defined."""
    if not parts:
        nan = float("nan")
        return MapSummary(nan, nan, nan, {k: nan for k in THRESHOLD_KEYS}, {})
    classes = sorted({c for p in parts for c in p.per_class})
    return MapSummary(
        float(nanmean([p.map for p in parts])), float(nanmean([p.ap50 for p in parts])),
        float(nanmean([p.ap75 for p in parts])),
        {k: float(nanmean([p.per_threshold.get(k, np.nan) for p in parts])) for k in THRESHOLD_KEYS},
        {c: float(nanmean([p.per_class[c] for p in parts if c in p.per_class])) for c in classes})
