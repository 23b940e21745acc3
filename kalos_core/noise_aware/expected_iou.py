"""Expected IoU of a W×H box under corner noise (the paper's Eqs. 5-7), ε̄(W, H) = 1 − E[IoU].

Eq. 7 is integrated with a tensor-product quadrature (:func:`.laplace.quadrature`) over the four
independent components; the width terms depend on (x1, x2) only and the height terms on (y1, y2)
only, so the 4-D sum runs over two 2-D tables. ε̄ is tabulated on a log-spaced grid of sizes and
interpolated bilinearly in (log W, log H).
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import RegularGridInterpolator

from .laplace import quadrature
from .types import NoiseFit, EpsGrid


def corner_iou(W, H, x1, x2, y1, y2) -> np.ndarray:
    """IoU of the box (0, 0)-(W, H) with (x1, y1)-(W + x2, H + y2) (Eqs. 5-6; intersection clipped at
    0 so it holds beyond the paper's small-noise assumption too)."""
    iw = np.clip(W + np.minimum(x2, 0) - np.maximum(x1, 0), 0, None)
    ih = np.clip(H + np.minimum(y2, 0) - np.maximum(y1, 0), 0, None)
    inter = iw * ih
    union = W * H + np.clip(W + x2 - x1, 0, None) * np.clip(H + y2 - y1, 0, None) - inter
    return inter / union


def _axis_terms(size: float, a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intersection length, annotation length and weight over all (first, second) node pairs."""
    (xa, wa), (xb, wb) = a, b
    lo, hi = xa[:, None], xb[None, :]
    inter = np.clip(size + np.minimum(hi, 0) - np.maximum(lo, 0), 0, None).ravel()
    length = np.clip(size + hi - lo, 0, None).ravel()
    return inter, length, (wa[:, None] * wb[None, :]).ravel()


def expected_iou(W: float, H: float, fit: NoiseFit, n: int = 8) -> float:
    """E[IoU_s] for s = (W, H) under the fitted per-component noise (Eq. 7)."""
    q = {c: quadrature(fit.sigma[c], fit.M[c], n) for c in ("x1", "x2", "y1", "y2")}
    iw, aw, ww = _axis_terms(W, q["x1"], q["x2"])
    ih, ah, wh = _axis_terms(H, q["y1"], q["y2"])
    inter = iw[:, None] * ih[None, :]
    iou = inter / (W * H + aw[:, None] * ah[None, :] - inter)
    return float(ww @ iou @ wh)


def eps_grid(fit: NoiseFit, max_size: float, points: int = 24, n: int = 8) -> EpsGrid:
    """ε̄ on ``points`` × ``points`` log-spaced sizes from 1 to ``max_size`` pixels."""
    sizes = np.geomspace(1.0, max(float(max_size), 2.0), points)
    q = {c: quadrature(fit.sigma[c], fit.M[c], n) for c in ("x1", "x2", "y1", "y2")}
    w_terms = [_axis_terms(s, q["x1"], q["x2"]) for s in sizes]
    h_terms = [_axis_terms(s, q["y1"], q["y2"]) for s in sizes]
    eps = np.empty((points, points))
    for i, (W, (iw, aw, ww)) in enumerate(zip(sizes, w_terms)):
        for j, (H, (ih, ah, wh)) in enumerate(zip(sizes, h_terms)):
            inter = iw[:, None] * ih[None, :]
            eps[i, j] = 1.0 - ww @ (inter / (W * H + aw[:, None] * ah[None, :] - inter)) @ wh
    return EpsGrid(sizes, sizes.copy(), eps)


class EpsInterpolator:
    """ε̄(W, H) for any sizes: bilinear in (log W, log H) on an :class:`EpsGrid`, clamped to its range."""

    def __init__(self, grid: EpsGrid):
        self.grid = grid
        self._f = RegularGridInterpolator((np.log(grid.widths), np.log(grid.heights)), grid.eps)

    def __call__(self, W, H) -> np.ndarray:
        lw = np.clip(np.log(np.maximum(np.asarray(W, dtype=float), 1e-9)), *np.log(self.grid.widths[[0, -1]]))
        lh = np.clip(np.log(np.maximum(np.asarray(H, dtype=float), 1e-9)), *np.log(self.grid.heights[[0, -1]]))
        out = self._f(np.stack(np.broadcast_arrays(lw, lh), axis=-1))
        return out if np.ndim(lw) or np.ndim(lh) else float(out[0])
