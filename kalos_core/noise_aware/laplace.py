"""The zero-mean truncated Laplace distribution on [-M, M] (Murrugarra-Llerena et al., Eq. 9):

    p(x) = exp(-(|x| - M) / σ) / (2σ (exp(M/σ) - 1))

its mean absolute value, its maximum-likelihood scale, and quadrature nodes for expectations.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar


def pdf(x, sigma: float, M: float) -> np.ndarray:
    """Density at ``x`` (0 outside [-M, M]); written with exp(-(|x|)/σ) / (2σ(1 - exp(-M/σ))),
    the same function without overflow for large M/σ."""
    x = np.asarray(x, dtype=float)
    dens = np.exp(-np.abs(x) / sigma) / (2.0 * sigma * -np.expm1(-M / sigma))
    return np.where(np.abs(x) <= M, dens, 0.0)


def mean_abs(sigma: float, M: float) -> float:
    """E|x| = σ - M / (exp(M/σ) - 1)."""
    r = M / sigma
    return float(sigma - M / np.expm1(r)) if r < 700 else float(sigma)


def log_likelihood(x, sigma: float, M: float) -> float:
    x = np.abs(np.asarray(x, dtype=float))
    return float(-x.sum() / sigma - len(x) * (np.log(2.0 * sigma) + np.log(-np.expm1(-M / sigma))))


def fit_sigma(x, M: float) -> float:
    """Maximum-likelihood σ for samples ``x`` (|x| <= M) with the support M fixed.

    As the mean of |x| approaches M / 2 the fit tends to a uniform distribution (σ → ∞); the search
    is bounded to [1e-4·M, 1e4·M]. M = 0 (every offset 0: identical raters) is no noise: σ = 0."""
    x = np.abs(np.asarray(x, dtype=float))
    if M <= 0:
        return 0.0
    if len(x) == 0:
        return float("nan")
    if x.mean() <= 1e-12 * M:
        return 1e-4 * M
    res = minimize_scalar(lambda ls: -log_likelihood(x, float(np.exp(ls)), M),
                          bounds=(np.log(1e-4 * M), np.log(1e4 * M)), method="bounded",
                          options={"xatol": 1e-10})
    return float(np.exp(res.x))


def quadrature(sigma: float, M: float, n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) with ``Σ w g(x) ≈ E[g(x)]``.

    Each half [-M, 0] and [0, M] (the density's kink at 0 falls on the split) is integrated in its
    quantile variable u, x = F⁻¹(u), with Gauss-Legendre nodes graded towards the tail,
    u = 1 − (1 − v)³, which tames the logarithmic end point of F⁻¹ when M ≫ σ: E|x| comes out
    within ~1e-5 (relative) for M/σ up to 40 with n = 8. No noise (M or σ = 0): one node at 0."""
    if M <= 0 or sigma <= 0:
        return np.zeros(1), np.ones(1)
    v, w = np.polynomial.legendre.leggauss(n)
    v, w = (v + 1.0) / 2.0, w / 2.0
    u, w = 1.0 - (1.0 - v) ** 3, w * 3.0 * (1.0 - v) ** 2
    x = -sigma * np.log1p(-u * -np.expm1(-M / sigma))    # inverse CDF of the half on [0, M]
    w = w / (2.0 * w.sum())                              # each half carries mass 1/2
    return np.concatenate([-x[::-1], x]), np.concatenate([w[::-1], w])
