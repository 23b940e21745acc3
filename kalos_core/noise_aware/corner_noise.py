"""Corner-noise fit from two label sets on the same images (the paper's Sec. 3.3).

Boxes are paired per image and class by Hungarian matching on 1 - IoU; pairs with IoU < 0.1 are
dropped; the offsets x1, x2, y1, y2 (left, right, top, bottom edges, in pixels) of one box against
the other pass a Tukey fence (1.5 IQR) on all four; each component gets a truncated Laplace with M
from its fence and σ by maximum likelihood.

Two noisy raters (``share="split"``): the observed offset is the difference of two independent
errors, so its variance is twice one rater's; each rater gets the fitted distribution scaled by
1/√2 (σ and M alike), which halves the variance. ``share="reference"``: the reference is taken as
noise-free and carries none of it (the paper's setting, corrected against original annotations).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..arrays import ranges
from ..data import MultiRaterDataset
from ..dataset_boxes import BoxColumns, box_columns
from ..geometry.registry import box_iou_xyxy, paired_iou
from .laplace import fit_sigma
from .types import COMPONENTS, NoiseFit


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, m) IoU of xywh boxes."""
    return box_iou_xyxy(_xyxy(a), _xyxy(b))


def box_iou_xyxy_paired(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) IoU of paired xywh rows (:func:`box_iou`'s arithmetic)."""
    return paired_iou(_xyxy(a), _xyxy(b))


def _xyxy(xywh: np.ndarray) -> np.ndarray:
    return np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)


def pair_boxes(dataset: MultiRaterDataset, reference: str, other: str, iou_min: float = 0.1,
               columns: BoxColumns | None = None):
    """Hungarian pairs (per image and class) of ``reference`` and ``other`` boxes with IoU >= iou_min.

    Returns (ref, oth, iou): (N, 4) xywh arrays and (N,) IoU, by image, class and reference box.
    ``columns``: :func:`box_columns` of ``dataset`` (read here when None).

    An (image, class) whose overlapping boxes pair off one to one (no box overlaps two) needs no
    solver: every optimal assignment holds those pairs (swapping one in gains its IoU); the others
    go to ``linear_sum_assignment`` on 1 − IoU as a whole."""
    img, rater, cat, boxes, _ = box_columns(dataset) if columns is None else columns
    both = np.array([reference in im.raters and other in im.raters for im in dataset.images], dtype=bool)
    codes = np.unique(cat, return_inverse=True)[1].reshape(-1)
    key = img * (int(codes.max(initial=0)) + 1) + codes
    r_at = np.flatnonzero((rater == reference) & both[img])
    o_at = np.flatnonzero((rater == other) & both[img])
    r_at, o_at = r_at[np.argsort(key[r_at], kind="stable")], o_at[np.argsort(key[o_at], kind="stable")]
    lo = np.searchsorted(key[o_at], key[r_at], side="left")
    hi = np.searchsorted(key[o_at], key[r_at], side="right")
    ri, oj = ranges(lo, hi - lo)                       # every same-class pair: index into r_at, o_at
    iou = box_iou_xyxy_paired(boxes[r_at[ri]], boxes[o_at[oj]])
    pos = iou > 0
    one_to_one = (np.bincount(ri[pos], minlength=len(r_at)) <= 1)[ri] & (np.bincount(oj[pos], minlength=len(o_at)) <= 1)[oj]
    group = key[r_at[ri]]
    solve = np.isin(group, group[~one_to_one]) if iou_min > 1e-9 else np.ones(len(ri), dtype=bool)
    take = [np.flatnonzero(~solve & (iou >= iou_min))]
    new = np.ones(len(group), dtype=bool)
    new[1:] = group[1:] != group[:-1]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(group)]
    width = (hi - lo)[ri[starts]]                      # other boxes per group: the matrix's columns
    for a, b, n_o in zip(*(v[solve[starts]].tolist() for v in (starts, ends, width))):
        rows, cols = linear_sum_assignment(1.0 - iou[a:b].reshape(-1, n_o))
        at = a + rows * n_o + cols                     # pairs of a group: reference boxes by row, others by column
        take.append(at[iou[at] >= iou_min])
    at = np.concatenate(take)
    at = at[np.lexsort((ri[at], group[at]))]
    return boxes[r_at[ri[at]]], boxes[o_at[oj[at]]], iou[at]


def corner_offsets(ref: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(N, 4) offsets (x1, x2, y1, y2) in pixels of ``other`` against ``ref`` (xywh): left, right,
    top and bottom edges, so ``other`` = (x1, y1) to (W + x2, H + y2) in ``ref``'s frame (Eq. 5)."""
    return np.stack([other[:, 0] - ref[:, 0], (other[:, 0] + other[:, 2]) - (ref[:, 0] + ref[:, 2]),
                     other[:, 1] - ref[:, 1], (other[:, 1] + other[:, 3]) - (ref[:, 1] + ref[:, 3])], axis=1)


def tukey_fences(values: np.ndarray, k: float = 1.5) -> np.ndarray:
    """(C, 2) fences [Q1 - k·IQR, Q3 + k·IQR] per column (Eq. 8)."""
    q1, q3 = np.percentile(values, [25, 75], axis=0)
    return np.stack([q1 - k * (q3 - q1), q3 + k * (q3 - q1)], axis=1)


def fit_offsets(offsets: np.ndarray, fence_k: float = 1.5, share: str = "split", pair_iou=None) -> NoiseFit:
    """Fit one truncated Laplace per component to corner offsets (rows = box pairs)."""
    if share not in ("split", "reference"):
        raise ValueError(f"share must be 'split' or 'reference', got {share!r}")
    n = len(offsets)
    if n < 4:
        raise ValueError(f"need at least 4 paired boxes to fit the corner noise, got {n}")
    fences = tukey_fences(offsets, fence_k)
    inlier = np.all((offsets >= fences[:, 0]) & (offsets <= fences[:, 1]), axis=1)
    scale = 1.0 / np.sqrt(2.0) if share == "split" else 1.0
    sigma, M = {}, {}
    for c, name in enumerate(COMPONENTS):
        m = float(max(abs(fences[c, 0]), abs(fences[c, 1])))
        s = fit_sigma(offsets[inlier, c], m)
        sigma[name], M[name] = float(s * scale), float(m * scale)
    mean_iou = float(np.mean(pair_iou[inlier])) if pair_iou is not None and inlier.any() else float("nan")
    return NoiseFit(sigma=sigma, M=M, n_pairs=n, n_inliers=int(inlier.sum()), share=share,
                    observed_sigma={k: v / scale for k, v in sigma.items()}, mean_iou_inliers=mean_iou,
                    fences={k: [float(fences[c, 0]), float(fences[c, 1])] for c, k in enumerate(COMPONENTS)})


def fit_corner_noise(dataset: MultiRaterDataset, reference: str, others: list[str], iou_min: float = 0.1,
                     fence_k: float = 1.5, share: str = "split", columns: BoxColumns | None = None) -> NoiseFit:
    """Pair ``reference`` with each of ``others`` (pooled) and fit the corner noise (``columns``:
    :func:`~kalos_core.dataset_boxes.box_columns` of ``dataset``, read here when None)."""
    columns = box_columns(dataset) if columns is None else columns
    parts = [pair_boxes(dataset, reference, o, iou_min, columns) for o in others]
    ref = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, 4))
    oth = np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, 4))
    iou = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    fit = fit_offsets(corner_offsets(ref, oth), fence_k, share, iou)
    fit.sources = [reference, *others]
    return fit
