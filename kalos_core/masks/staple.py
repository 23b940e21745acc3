"""STAPLE (Warfield, Zou & Wells, IEEE TMI 2004; multi-class: Rohlfing et al. 2004) on rater patterns.

Each rater k has a confusion matrix ``theta[k][j, c]`` = P(rater says j | true class c); the true
class of a pixel has the prior ``prior[c]``, fixed at the share of the raters' values that are c
(as ITK's filters estimate it). EM alternates the posterior of each pixel's true class (E) and
each rater's confusion matrix from those posteriors (M), starting from the share of the raters
that say each class at each pixel (ITK's binary start; a hard vote can pin a rater at a
sensitivity of exactly 1, a fixed point EM never leaves), until
no confusion entry moves by more than ``tolerance`` or ``max_iterations`` pass.

Pixels holding the same tuple of rater values have the same posterior, so EM runs over the
image's distinct tuples weighted by their pixel counts (:func:`kalos_core.masks.pixels.patterns`),
not over its pixels: an iteration costs the number of tuples, not of pixels. A missing value (no
mask, the ignore value) carries no evidence: its factor in the likelihood is 1.

With two classes this is binary STAPLE: sensitivity = ``theta[1, 1]``, specificity =
``theta[0, 0]``, the prior the mean foreground share (ITK's ``STAPLEImageFilter`` with
confidence weight 1). Per class of a multi-class run: sensitivity = P(says c | true c),
specificity = P(says not c | true not c), the latter weighted by the estimated true class totals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np



@dataclass
class StapleFit:
    """The EM's outcome on one image."""

    posterior: np.ndarray        #: (K, C) P(true class | the pattern's values)
    theta: np.ndarray            #: (R, C, C) P(rater says j | true c) as ``theta[k, j, c]``
    prior: np.ndarray            #: (C,)
    iterations: int
    converged: bool

    def labels(self) -> np.ndarray:
        """(K,) the class of highest posterior per pattern (a tie: the lowest class)."""
        return self.posterior.argmax(1)

    def sensitivity(self) -> np.ndarray:
        """(R, C) P(says c | true c)."""
        return np.diagonal(self.theta, axis1=1, axis2=2).copy()

    def specificity(self) -> np.ndarray:
        """(R, C) P(says not c | true not c), true classes weighted by their estimated totals."""
        totals = self.weights
        r, c, _ = self.theta.shape
        out = np.full((r, c), np.nan)
        for cls in range(c):
            others = np.arange(c) != cls
            w = totals[others]
            if w.sum() > 0:
                out[:, cls] = ((1 - self.theta[:, cls, others]) * w).sum(1) / w.sum()
        return out

    weights: np.ndarray | None = None     #: (C,) estimated pixels of each true class


def staple(table: np.ndarray, count: np.ndarray, n_classes: int, tolerance: float = 1e-7,
           max_iterations: int = 1000) -> StapleFit:
    """STAPLE on patterns: ``table`` (K, R) values (-1 missing), ``count`` (K,) pixels each."""
    k, r = table.shape
    c = n_classes
    w = count.astype(float)
    present = table >= 0
    obs = np.where(present, table, 0)
    votes = np.zeros(c)
    for i in range(r):
        np.add.at(votes, obs[present[:, i], i], w[present[:, i]])
    prior = votes / votes.sum() if votes.sum() else np.full(c, 1.0 / c)
    posterior = np.zeros((k, c))            # start: each pattern's share of the raters saying each class
    for i in range(r):
        np.add.at(posterior, (np.flatnonzero(present[:, i]), obs[present[:, i], i]), 1.0)
    posterior /= np.maximum(posterior.sum(1, keepdims=True), 1)
    theta = _m_step(obs, present, w, posterior, c)
    converged, it = False, 0
    for it in range(1, max_iterations + 1):
        posterior = _e_step(obs, present, theta, prior)
        new = _m_step(obs, present, w, posterior, c)
        change = np.abs(new - theta).max()
        theta = new
        if change < tolerance:
            converged = True
            break
    posterior = _e_step(obs, present, theta, prior)
    fit = StapleFit(posterior, theta, prior, it, converged)
    fit.weights = (posterior * w[:, None]).sum(0)
    return fit


def _e_step(obs, present, theta, prior) -> np.ndarray:
    log = np.tile(np.log(np.maximum(prior, 1e-300)), (len(obs), 1))
    for i in range(obs.shape[1]):
        rows = np.log(np.maximum(theta[i][obs[:, i]], 1e-300))          # (K, C)
        log += np.where(present[:, i, None], rows, 0.0)
    log -= log.max(1, keepdims=True)
    p = np.exp(log)
    return p / p.sum(1, keepdims=True)


def _m_step(obs, present, w, posterior, c) -> np.ndarray:
    r = obs.shape[1]
    theta = np.zeros((r, c, c))
    weighted = posterior * w[:, None]
    for i in range(r):
        ok = present[:, i]
        np.add.at(theta[i], obs[ok, i], weighted[ok])
        total = theta[i].sum(0, keepdims=True)
        theta[i] = np.divide(theta[i], total, out=np.full_like(theta[i], 1.0 / c), where=total > 0)
    return theta
