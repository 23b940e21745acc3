"""α per subset and threshold, mapped to mAP through Eq. 1, and the line refitted on these data.

The paper's step (Sec. 4.2): per bootstrap subset, α at IoU thresholds .50:.05:.95 and their mean;
Eq. 1 maps the mean to an mAP; the interval is taken empirically over the mapped values. Here α is
KaLOS' mean per-image α (docs/method.md §4), computed once per threshold and averaged over each
subset's images, so the subsets cost nothing extra.

Both lines are straight, so they leave [0, 1] at the ends (Eq. 1 maps α = 1 to 1.033): a mapped
value is an mAP, and is clipped to [0, 1] (:func:`as_map`), never reported above 100 %.
"""

from __future__ import annotations

import numpy as np

from .stats import fit_line, interval_stats, map_from_alpha
from .summaries import nanmean
from .types import THRESHOLD_KEYS, AlphaMapping


def as_map(values) -> np.ndarray:
    """Values of a line through (α, mAP) as mAPs: clipped to [0, 1]."""
    return np.clip(np.asarray(values, dtype=float), 0.0, 1.0)


def alpha_mapping(img_alpha: np.ndarray, masks: np.ndarray | None, ap_per_subset: np.ndarray | None,
                  confidence: float) -> AlphaMapping:
    """Eq. 1 on per-subset α, and a refit of mAP = a·α + b on (α@t, AP@t) per subset and threshold.

    Parameters
    ----------
    img_alpha : (T, I) per-image α at each threshold (:func:`.engine.per_image_alpha`), images as the
        columns of ``masks``.
    masks : (S, I) bool subsets; None = the full set only (then no interval and no refit).
    ap_per_subset : (S, T) the raters' pooled AP per subset and threshold (fractions).
    """
    full_t = nanmean(img_alpha, axis=1)
    if masks is None:
        masks = np.ones((1, img_alpha.shape[1]), dtype=bool)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(img_alpha)
        sums = np.where(finite, img_alpha, 0.0) @ masks.T.astype(float)       # (T, S)
        alpha_st = (sums / (finite.astype(float) @ masks.T.astype(float))).T   # (S, T)
    alpha_s = nanmean(alpha_st, axis=1)
    refit, refit_map = fit_line([], []), None
    if ap_per_subset is not None:
        refit = fit_line(alpha_st, ap_per_subset)
        if np.isfinite(refit["slope"]):
            refit_map = interval_stats(as_map(refit["slope"] * alpha_s + refit["intercept"]), confidence)
    return AlphaMapping(full_set_alpha=float(nanmean(full_t)),
                        alpha_per_threshold={k: float(v) for k, v in zip(THRESHOLD_KEYS, full_t)},
                        alpha=interval_stats(alpha_s, confidence),
                        eq1_map=interval_stats(as_map(map_from_alpha(alpha_s)), confidence),
                        refit=refit, refit_map=refit_map)
