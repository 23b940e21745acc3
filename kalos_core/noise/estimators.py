"""Maximum-likelihood estimators used by :func:`kalos_core.noise.fit.fit_noise_profile`.

Each returns fitted parameters and a small report dict: ``n``, the fitted values,
``aic`` (and the AIC of the simpler alternative), ``ks``/``ks_p`` where a continuous
CDF exists (probability-integral transform against U(0, 1)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from .profile import DirectionModel, LinearT

MAX_FIT = 50_000  # observations used per continuous fit (a seeded subsample beyond that)
DF_MAX = 200.0    # the largest Student-t degrees of freedom a fit takes (about normal)


def _subsample(rng: np.random.Generator, *arrays: np.ndarray):
    n = len(arrays[0])
    if n <= MAX_FIT:
        return arrays
    idx = np.sort(rng.choice(n, MAX_FIT, replace=False))
    return tuple(a[idx] for a in arrays)


def _folded_terms(y, x, a, b, s, df, power=0.0):
    m = a + b * x
    if power:
        s = s * np.power(np.maximum(x, 1e-4), power)
    if df is None:
        return stats.norm.pdf((y - m) / s) / s + stats.norm.pdf((-y - m) / s) / s, \
            stats.norm.cdf((y - m) / s) - stats.norm.cdf((-y - m) / s)
    return stats.t.pdf((y - m) / s, df) / s + stats.t.pdf((-y - m) / s, df) / s, \
        stats.t.cdf((y - m) / s, df) - stats.t.cdf((-y - m) / s, df)


def _folded_pdf(y: np.ndarray, m: np.ndarray, log_s, df: float | None) -> np.ndarray:
    """Density of ``|m + s T|`` at ``y`` (``T`` Student-t(df), normal where ``df`` is None):
    the likelihood of :func:`fit_folded_t`, written out (scipy.stats' per-call overhead dominated the fits)."""
    s = np.exp(log_s)
    zp, zm = (y - m) / s, (-y - m) / s
    if df is None:
        return (np.exp(-0.5 * zp * zp) + np.exp(-0.5 * zm * zm)) / (s * math.sqrt(2 * math.pi))
    log_c = special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * math.log(df * math.pi)
    e = -(df + 1) / 2
    return np.exp(log_c) * (np.exp(e * np.log1p(zp * zp / df)) + np.exp(e * np.log1p(zm * zm / df))) / s


def fit_folded_t(y: np.ndarray, x: np.ndarray, seed: int = 0, scale_power: bool = False) -> tuple[LinearT, dict]:
    """Fit ``y = |a + b x + s x**p T|``, ``T ~ t(df)`` by maximum likelihood (and a normal
    alternative for comparison). ``scale_power=False`` fixes ``p = 0`` (the paper's homoscedastic
    form); ``True`` also fits ``p`` and keeps it only where it lowers the AIC."""
    y, x = _subsample(np.random.default_rng(seed), np.asarray(y, float), np.asarray(x, float))
    if len(y) and np.ptp(y) == 0:
        return _no_spread(y)
    # a line through x values that differ by round-off only is degenerate (numpy's RankWarning): a constant
    spread = len(x) and np.ptp(x) > 1e-9 * np.max(np.abs(x))
    b0, a0 = np.polyfit(x, y, 1) if spread else (0.0, float(np.mean(y)))
    s0 = max(float(np.std(y - (a0 + b0 * x))), 1e-6)

    logx = np.log(np.maximum(x, 1e-4))

    def nll(p, kind="t"):
        a, b, ls = p[:3]
        df = None if kind == "normal" else float(np.clip(math.exp(p[3]), 0.5, DF_MAX))
        log_s = ls + (p[4] * logx if kind == "t_power" else 0.0)
        return -np.sum(np.log(np.maximum(_folded_pdf(y, a + b * x, log_s, df), 1e-300)))

    def minimise(p0, kind):
        res = optimize.minimize(nll, p0, args=(kind,), method="Nelder-Mead",
                                options={"maxiter": 4000, "xatol": 1e-7, "fatol": 1e-6})
        return optimize.minimize(nll, res.x, args=(kind,), method="Nelder-Mead",
                                 options={"maxiter": 4000, "xatol": 1e-8, "fatol": 1e-7})

    fits = {"t": minimise([a0, b0, math.log(s0 * 0.7), math.log(5.0)], "t"),
            "normal": minimise([a0, b0, math.log(s0)], "normal")}
    k_t = 4
    best = fits["t"]
    if scale_power:
        xm = float(np.exp(np.mean(np.log(np.maximum(x, 1e-4)))))
        starts = [np.append(best.x, 0.0)]
        for pw in (-0.5, 0.5, 1.0):  # the scale is matched at the typical size, then refined
            starts.append(np.array([best.x[0], best.x[1], best.x[2] - pw * math.log(xm), best.x[3], pw]))
        power_fit = min((minimise(p0, "t_power") for p0 in starts), key=lambda r: r.fun)
        fits["t_power"] = power_fit
        if 2 * 5 + 2 * power_fit.fun < 2 * 4 + 2 * best.fun:
            best, k_t = power_fit, 5
    a, b, ls, ldf = best.x[:4]
    power = float(best.x[4]) if k_t == 5 else 0.0
    model = LinearT(float(a), float(b), float(math.exp(ls)), float(np.clip(math.exp(ldf), 0.5, DF_MAX)), power)
    u = model.cdf(y, x)
    ks = stats.kstest(np.clip(u, 0, 1), "uniform")
    an, bn, lsn = fits["normal"].x
    _, un = _folded_terms(y, x, an, bn, math.exp(lsn), None)
    ks_n = stats.kstest(np.clip(un, 0, 1), "uniform")
    report = {"n": int(len(y)), "a": model.a, "b": model.b, "scale": model.scale, "df": model.df,
              "scale_power": model.scale_power, "aic": 2 * k_t + 2 * best.fun,
              "aic_homoscedastic": 2 * 4 + 2 * fits["t"].fun, "ks": float(ks.statistic), "ks_p": float(ks.pvalue),
              "aic_normal": 2 * 3 + 2 * fits["normal"].fun, "ks_normal": float(ks_n.statistic)}
    return model, report


def _no_spread(y: np.ndarray) -> tuple[LinearT, dict]:
    """Every observation the same value ``c`` (identical raters: every offset 0): the point mass
    ``|c|``, scale 0, in closed form (the likelihood has no maximum: it grows without end as the
    scale shrinks, and the numerical fit would never stop)."""
    c = float(abs(y[0]))
    model = LinearT(c, 0.0, 0.0, DF_MAX, 0.0)
    return model, {"n": int(len(y)), "a": c, "b": 0.0, "scale": 0.0, "df": DF_MAX, "scale_power": 0.0,
                   "no_spread": True}


def fit_copula(u: np.ndarray) -> tuple[list[list[float]], dict]:
    """Gaussian-copula correlation of the columns of ``u`` (probability-integral transforms in
    (0, 1)): the correlation of their normal scores."""
    z = stats.norm.ppf(np.clip(np.asarray(u, float), 1e-6, 1 - 1e-6))
    c = np.eye(z.shape[1])   # a column without spread (a point mass, no noise) correlates with nothing
    live = np.flatnonzero(np.ptp(z, axis=0) > 0) if len(z) else []
    if len(live) > 1:
        c[np.ix_(live, live)] = np.corrcoef(z[:, live], rowvar=False)
    c = (c + c.T) / 2
    np.fill_diagonal(c, 1.0)
    w, v = np.linalg.eigh(c)  # keep it positive definite
    c = v @ np.diag(np.maximum(w, 1e-6)) @ v.T
    d = np.sqrt(np.diag(c))
    c = c / np.outer(d, d)
    rows = [[float(e) for e in r] for r in c]
    return rows, {"n": int(len(z)), "correlation": rows}


def _vm_logpdf(theta, mu, kappa):
    return kappa * (np.cos(theta - mu) - 1.0) - np.log(2 * math.pi * special.i0e(kappa))


def fit_direction(theta: np.ndarray, seed: int = 0) -> tuple[DirectionModel, dict]:
    """Cardinal 4-von-Mises mixture vs. axial (doubled-angle) von Mises vs. uniform; lowest AIC wins."""
    (theta,) = _subsample(np.random.default_rng(seed), np.mod(np.asarray(theta, float), 2 * math.pi))
    mus = np.arange(4) * math.pi / 2

    def nll_cardinal(p):
        w = special.softmax(np.concatenate([[0.0], p[:3]]))
        k = np.exp(np.clip(p[3:], -5, 6))
        comp = np.stack([np.log(w[j]) + _vm_logpdf(theta, mus[j], k[j]) for j in range(4)])
        return -special.logsumexp(comp, axis=0).sum()

    def nll_axial(p):
        k = math.exp(min(p[1], 6.0))
        return -np.sum(_vm_logpdf(2 * theta, 2 * p[0], k))  # f(theta) = VM(2 theta) on [0, 2 pi)

    card = optimize.minimize(nll_cardinal, np.concatenate([np.zeros(3), np.full(4, math.log(2.0))]),
                             method="Nelder-Mead", options={"maxiter": 6000, "xatol": 1e-6, "fatol": 1e-6})
    c2 = np.mean(np.exp(2j * theta))
    axial = optimize.minimize(nll_axial, [float(np.angle(c2)) / 2, 0.0], method="Nelder-Mead")
    aic = {"cardinal": 2 * 7 + 2 * card.fun, "axial": 2 * 2 + 2 * axial.fun,
           "uniform": 2 * len(theta) * math.log(2 * math.pi)}
    best = min(aic, key=aic.get)
    w = special.softmax(np.concatenate([[0.0], card.x[:3]]))
    models = {
        "cardinal": DirectionModel("cardinal", [float(v) for v in w],
                                   [float(v) for v in np.exp(np.clip(card.x[3:], -5, 6))]),
        "axial": DirectionModel("axial", mu=float(np.mod(axial.x[0], math.pi)),
                                kappa=float(math.exp(min(axial.x[1], 6.0)))),
        "uniform": DirectionModel("uniform"),
    }
    rayleigh = abs(np.mean(np.exp(1j * theta))) ** 2 * len(theta)
    report = {"n": int(len(theta)), "chosen": best, **{f"aic_{k}": float(v) for k, v in aic.items()},
              "rayleigh_p": float(math.exp(-rayleigh)) if len(theta) else 1.0}
    return models[best], report


def _count_nll(p, y, c, family: str) -> float:
    """Negative log-likelihood of the counts ``y``; ``p = (a, b[, ln dispersion])``."""
    mu = np.exp(np.clip(p[0] + p[1] * c, -30, 30))
    if family == "poisson":
        return float(np.sum(mu - y * np.log(mu) + special.gammaln(y + 1)))
    phi = math.exp(float(np.clip(p[2], -12, 8)))
    r = mu / phi if family == "negbin1" else np.full_like(mu, 1.0 / phi)
    return -float(np.sum(special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1)
                         + r * np.log(r / (r + mu)) + y * np.log(mu / (r + mu))))


def fit_poisson(y: np.ndarray, n: np.ndarray) -> tuple[float, float, dict]:
    """``y ~ Poisson(exp(a + b n))`` by maximum likelihood (Eq. 16)."""
    y, n = np.asarray(y, float), np.asarray(n, float)

    def nll(p):
        eta = np.clip(p[0] + p[1] * n, -30, 30)
        r = np.exp(eta) - y
        return float(np.sum(np.exp(eta) - y * eta)), np.array([r.sum(), (r * n).sum()])

    res = optimize.minimize(nll, [math.log(max(y.mean(), 1e-3)), 0.0], jac=True, method="BFGS")
    base = math.log(max(y.mean(), 1e-12))
    nll0 = float(np.sum(math.exp(base) - y * base))
    lgam = float(np.sum(special.gammaln(y + 1)))
    mu = np.exp(np.clip(res.x[0] + res.x[1] * n, -30, 30))
    report = {"n": int(len(y)), "a": float(res.x[0]), "b": float(res.x[1]),
              "aic": 4 + 2 * (res.fun + lgam), "aic_intercept_only": 2 + 2 * (nll0 + lgam),
              "mean_observed": float(y.mean()), "mean_fitted": float(mu.mean()),
              "dispersion": float(np.sum((y - mu) ** 2 / np.maximum(mu, 1e-12)) / max(len(y) - 2, 1))}
    return float(res.x[0]), float(res.x[1]), report


def fit_counts(y: np.ndarray, n: np.ndarray) -> tuple[dict, dict]:
    """Event counts per image: Poisson, negative binomial 1 or 2, on the covariate ``|Y|``
    (Eq. 16) or ``ln(1 + |Y|)``; the lowest AIC wins. Returns the :class:`UnmatchedModel` count
    fields (``rate_a``, ``rate_b``, ``count_covariate``, ``count_family``, ``count_dispersion``,
    ``count_max_objects``: the largest image of the fit, beyond which the per-object rate is held)
    and a report with every AIC."""
    y, n = np.asarray(y, float), np.asarray(n, float)
    a0, b0, pois = fit_poisson(y, n)
    fits = {}
    for cov, c in (("objects", n), ("log1p_objects", np.log1p(n))):
        start = [a0, b0] if cov == "objects" else [math.log(max(y.mean(), 1e-3)) - 1.0, 1.0]
        for family in ("poisson", "negbin1", "negbin2"):
            p0 = start if family == "poisson" else start + [0.0]
            # 2000 steps: a fit converges in a few hundred; one whose dispersion runs into the clip of
            # _count_nll (Poisson data: the likelihood is flat there) would take all of them
            res = optimize.minimize(_count_nll, p0, args=(y, c, family), method="Nelder-Mead",
                                    options={"maxiter": 2000, "xatol": 1e-9, "fatol": 1e-9})
            fits[(cov, family)] = (res.x, 2 * len(p0) + 2 * res.fun, 0.0)
    (cov, family), (p, aic, _) = min(fits.items(), key=lambda kv: kv[1][1])
    model = {"rate_a": float(p[0]), "rate_b": float(p[1]), "count_covariate": cov, "count_family": family,
             "count_dispersion": float(math.exp(np.clip(p[2], -12, 8))) if family != "poisson" else 0.0,
             "count_max_objects": int(n.max()) if len(n) else 0}
    report = {"n": int(len(y)), "a": model["rate_a"], "b": model["rate_b"], "aic": float(aic),
              "aic_intercept_only": pois["aic_intercept_only"], "chosen": f"{family} on {cov}",
              **{f"aic_{k[1]}_{k[0]}": float(v[1]) for k, v in fits.items()},
              "dispersion": model["count_dispersion"], "max_objects": model["count_max_objects"],
              "mean_observed": float(y.mean()), "var_observed": float(y.var()),
              "dispersion_poisson_objects": pois["dispersion"]}
    return model, report


def fit_logistic(flag: np.ndarray, z: np.ndarray) -> tuple[float, float, dict]:
    """``P(flag) = sigmoid(a + b z)`` by maximum likelihood (Eq. 17, 18)."""
    flag, z = np.asarray(flag, float), np.asarray(z, float)

    def nll(p):
        eta = p[0] + p[1] * z
        r = 1.0 / (1.0 + np.exp(-eta)) - flag
        return float(np.sum(np.logaddexp(0, eta) - flag * eta)), np.array([r.sum(), (r * z).sum()])

    p = np.clip(flag.mean(), 1e-6, 1 - 1e-6)
    res = optimize.minimize(nll, [math.log(p / (1 - p)), 0.0], jac=True, method="BFGS")
    nll0 = -float(np.sum(flag * math.log(p) + (1 - flag) * math.log(1 - p)))
    report = {"n": int(len(flag)), "positives": int(flag.sum()), "a": float(res.x[0]), "b": float(res.x[1]),
              "aic": 4 + 2 * res.fun, "aic_intercept_only": 2 + 2 * nll0}
    return float(res.x[0]), float(res.x[1]), report


def fit_beta(v: np.ndarray) -> tuple[float, float, dict]:
    """Beta on (0, 1) (child-to-child angle / pi, Eq. 19)."""
    v = np.clip(np.asarray(v, float), 1e-4, 1 - 1e-4)
    a, b, _, _ = stats.beta.fit(v, floc=0, fscale=1)
    ks = stats.kstest(v, "beta", args=(a, b))
    nll = -np.sum(stats.beta.logpdf(v, a, b))
    return float(a), float(b), {"n": int(len(v)), "alpha": float(a), "beta": float(b), "aic": 4 + 2 * float(nll),
                                "aic_uniform": 0.0, "ks": float(ks.statistic), "ks_p": float(ks.pvalue)}
