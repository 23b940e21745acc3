"""The parameters of the empirical noise generator (docs/method.md §7, paper Sec. 9.3).

A :class:`NoiseProfile` is a tree of small dataclasses, one per channel, and is
stored as JSON (``NoiseProfile.save`` / ``load_profile``). All geometry is in
image-relative units (x / width, y / height); the size covariate ``x`` of the
localisation model is ``sqrt(relative area)`` (the object's relative side
length), the covariate of the logistic models is ``ln(relative area)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ..io.jsonwrite import dumps_indented
from ..jsonsafe import json_safe

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
#: winsorising quantiles of the Student-t residuals (paper Eq. 12)
WINSOR = (0.001, 0.999)


@dataclass
class LinearT:
    """``|a + b * x + scale * x**scale_power * T|`` with ``T ~ Student-t(df)`` winsorised at :data:`WINSOR`.

    ``scale_power = 0`` is the paper's homoscedastic form (Eq. 12, 14); a positive power lets the
    residual grow with the object (a translation error in proportion to the object's side), a
    negative one lets small objects scatter more (relative scale errors).
    """

    a: float
    b: float
    scale: float
    df: float
    scale_power: float = 0.0

    def _loc_scale(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, float)
        s = self.scale * np.power(np.maximum(x, 1e-4), self.scale_power) if self.scale_power else \
            np.full(x.shape, self.scale)
        return self.a + self.b * x, s

    def sample(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw per entry of ``x`` (non-negative)."""
        u = np.clip(rng.random(len(x)), *WINSOR)
        m, s = self._loc_scale(x)
        return np.abs(m + s * stats.t.ppf(u, self.df))

    def cdf(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """CDF of the folded variable at ``y >= 0`` (the probability-integral transform)."""
        m, s = self._loc_scale(x)
        y = np.asarray(y, float)
        if not self.scale:   # no noise: the point mass |m| (a step, not 0 / 0)
            return (y >= np.abs(m)).astype(float)
        return np.clip(stats.t.cdf((y - m) / s, self.df) - stats.t.cdf((-y - m) / s, self.df), 0.0, 1.0)

    def ppf(self, v: np.ndarray, x: np.ndarray, iterations: int = 60) -> np.ndarray:
        """Inverse of :meth:`cdf` (vectorised bisection; ``v`` in (0, 1))."""
        v = np.asarray(v, float)
        m, s = self._loc_scale(x)
        lo = np.zeros_like(v)
        hi = np.abs(m) + s * stats.t.ppf((1.0 + v) / 2.0, self.df)  # cdf(hi) >= v
        for _ in range(iterations):
            mid = (lo + hi) / 2
            below = self.cdf(mid, x) < v
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2


@dataclass
class DirectionModel:
    """Direction of a translation (radians, image-relative axes; 0 = +x, pi/2 = +y).

    ``cardinal``: mixture of four von Mises at 0, 90, 180, 270 degrees (paper Eq. 13);
    ``axial``: unimodal von Mises on the doubled angle (mean ``mu``, concentration ``kappa``);
    ``uniform``: isotropic.
    """

    kind: str = "cardinal"
    weights: list[float] = field(default_factory=lambda: [0.25] * 4)
    kappas: list[float] = field(default_factory=lambda: [4.0] * 4)
    mu: float = 0.0
    kappa: float = 1.0

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "cardinal":
            w = np.asarray(self.weights, float)
            k = rng.choice(4, size=n, p=w / w.sum())
            return k * (math.pi / 2) + rng.vonmises(0.0, np.asarray(self.kappas, float)[k])
        if self.kind == "axial":
            return rng.vonmises(2 * self.mu, self.kappa, n) / 2 + math.pi * rng.integers(0, 2, n)
        return rng.uniform(0.0, 2 * math.pi, n)


@dataclass
class LocalisationModel:
    """Translation magnitude, its direction and the log-space width/height scale (Sec. 9.3.1)."""

    translation: LinearT
    direction: DirectionModel
    log_width: LinearT
    log_height: LinearT
    #: s.d. of the extra per-joint shift of keypoints, as a fraction of the object's side length
    keypoint_jitter: float = 0.03
    #: Gaussian-copula correlation of (translation, log width, log height) magnitudes; ``None`` =
    #: independent draws. Real errors come together: a sloppy box is shifted *and* resized.
    copula: list[list[float]] | None = None

    def sample_magnitudes(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(n, 3)`` draws of (translation, |log width ratio|, |log height ratio|)."""
        parts = (self.translation, self.log_width, self.log_height)
        if self.copula is None:
            return np.stack([p.sample(x, rng) for p in parts], 1)
        chol = np.linalg.cholesky(np.asarray(self.copula, float))
        v = np.clip(stats.norm.cdf(rng.standard_normal((len(x), 3)) @ chol.T), *WINSOR)
        return np.stack([p.ppf(v[:, k], x) for k, p in enumerate(parts)], 1)


@dataclass
class UnmatchedModel:
    """Events per image with mean ``mu = exp(rate_a + rate_b * c)`` (Eq. 16), ``c = |Y|``
    (``count_covariate = "objects"``, the paper's form) or ``c = ln(1 + |Y|)`` (``"log1p_objects"``,
    a power law in the number of objects). ``count_family``: ``poisson`` (the paper),
    ``negbin1`` (variance ``mu (1 + count_dispersion)``) or ``negbin2`` (variance
    ``mu + count_dispersion mu^2``) -- a Gamma-Poisson mixture: some images are harder than others.
    Targets weighted by ``sigmoid(select_a + select_b * ln A)`` (Eq. 17); each event is a false
    positive with probability ``fp_share``, else a miss. A false positive copies the size and class
    of a reference object drawn (by the same weights) from the whole set (``fp_template =
    "dataset"``) or from its own scene (``"scene"``: real extra labels are of classes the scene has)."""

    rate_a: float
    rate_b: float
    select_a: float
    select_b: float
    fp_share: float = 0.5
    count_covariate: str = "objects"
    count_family: str = "poisson"
    count_dispersion: float = 0.0
    fp_template: str = "dataset"
    #: the largest ``|Y|`` of the fit (0 = no limit): beyond it the per-object event rate is held
    #: at its value there instead of following the trend past the data (a power law in ``|Y|``
    #: with exponent > 1 would give a crowded image ever more events per object)
    count_max_objects: int = 0

    def mean_events(self, n_objects) -> np.ndarray:
        """Expected events for an image with ``n_objects`` reference objects (magnitude 1)."""
        n = np.asarray(n_objects, float)
        top = float(self.count_max_objects)
        m = np.minimum(n, top) if top > 0 else n
        c = np.log1p(m) if self.count_covariate == "log1p_objects" else m
        mu = np.exp(np.clip(self.rate_a + self.rate_b * c, -30, 30))
        return np.where(n > m, mu * n / np.maximum(m, 1e-12), mu)

    def sample_events(self, n_objects: int, magnitude: float, rng: np.random.Generator) -> int:
        """Events for one image and rater; the mean is scaled by ``magnitude`` (λ)."""
        mu = magnitude * float(self.mean_events(n_objects))
        phi = self.count_dispersion
        if self.count_family == "negbin1" and phi > 0 and mu > 0:
            mu = rng.gamma(mu / phi, phi)
        elif self.count_family == "negbin2" and phi > 0 and mu > 0:
            mu = rng.gamma(1.0 / phi, phi * mu)
        return int(rng.poisson(mu))


@dataclass
class TopologyModel:
    """Fragmentation / combination (Sec. 9.3.4): parent probability
    ``sigmoid(parent_a + parent_b * ln A)`` (Eq. 18); a parent is split with probability
    ``split_share``, else merged with its most likely same-class neighbour. Children: per-side
    log scale ``N(child_log_scale_mean, child_log_scale_sd)`` (negative: they are smaller),
    centre offset as a fraction of the room left inside the parent
    ``N(child_offset_mean, child_offset_sd)``, child-to-child angle / pi ``~ Beta(angle_alpha, angle_beta)``."""

    parent_a: float
    parent_b: float
    split_share: float = 0.5
    child_log_scale_mean: float = -1.215
    child_log_scale_sd: float = 0.35
    child_offset_mean: float = 0.7
    child_offset_sd: float = 0.2
    angle_alpha: float = 4.53
    angle_beta: float = 0.53


@dataclass
class ClassModel:
    """Category mistakes (Sec. 9.3.2): a global Bernoulli ``rate`` (or a class's own, ``rates``); the new class from observed
    ``confusion`` (``{class name: {class name: probability}}``), else a softmax over a user
    similarity matrix (``temperature``, ``top_k`` most similar), else uniform."""

    rate: float = 0.026
    confusion: dict[str, dict[str, float]] = field(default_factory=dict)
    temperature: float = 0.1
    top_k: int = 10
    #: per-class rates (``{class name: rate}``) that replace ``rate`` for those classes
    rates: dict[str, float] = field(default_factory=dict)

    def rate_of(self, name: str) -> float:
        return float(self.rates.get(name, self.rate))


@dataclass
class NoiseProfile:
    """All generator parameters; ``meta`` says where they came from, ``fit_report`` how well they fit."""

    localisation: LocalisationModel
    class_localisation: LocalisationModel
    unmatched: UnmatchedModel
    topology: TopologyModel
    classes: ClassModel = field(default_factory=ClassModel)
    meta: dict[str, Any] = field(default_factory=dict)
    fit_report: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "NoiseProfile":
        return _build(cls, data)

    def to_json(self) -> str:
        """The profile as the JSON text :meth:`save` writes (and :func:`load_profile` reads)."""
        return dumps_indented(self.to_dict()) + "\n"

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path


_NESTED = {
    "localisation": LocalisationModel, "class_localisation": LocalisationModel, "unmatched": UnmatchedModel,
    "topology": TopologyModel, "classes": ClassModel, "translation": LinearT, "log_width": LinearT,
    "log_height": LinearT, "direction": DirectionModel,
}


def _build(cls, data: dict):
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown key(s) {sorted(unknown)}")
    kwargs = {}
    for key, value in data.items():
        sub = _NESTED.get(key)
        kwargs[key] = _build(sub, value) if sub is not None and isinstance(value, dict) and is_dataclass(sub) else value
    return cls(**kwargs)


#: the shipped default profile per task (fitted on the LVIS double-annotation subset)
DEFAULT_PROFILES = {"bbox": "default.json", "segm": "default_segm.json", "keypoints": "default.json"}


def load_profile(path: str | Path | None = None, task: str = "bbox") -> NoiseProfile:
    """A profile from a JSON file; ``None`` gives the shipped default for ``task``
    (``profiles/default.json`` for boxes, ``profiles/default_segm.json`` for polygons)."""
    path = Path(path) if path is not None else PROFILES_DIR / DEFAULT_PROFILES.get(task, "default.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read noise profile {path}: {e}") from None
    return NoiseProfile.from_dict(data)


def builtin_profile() -> NoiseProfile:
    """The hand-set profile of the paper's published values (class rate 0.026, Poisson slope
    0.021, child-to-child angle Beta(4.53, 0.53), child area ratio median 0.088) and assumptions.

    Still used where data are missing: ``fit_noise_profile`` keeps these values for components with too
    few observations (and says so in its report), and the tests use it as a known truth for
    parameter recovery. The shipped defaults are fitted on real data (see ``load_profile``).
    """
    loc = LocalisationModel(
        translation=LinearT(a=0.002, b=0.05, scale=0.004, df=3.0),
        direction=DirectionModel("cardinal", [0.25] * 4, [4.0] * 4),
        log_width=LinearT(a=0.06, b=-0.1, scale=0.04, df=4.0),
        log_height=LinearT(a=0.06, b=-0.1, scale=0.04, df=4.0),
    )
    cls_loc = LocalisationModel(
        translation=LinearT(a=0.004, b=0.08, scale=0.008, df=3.0),
        direction=DirectionModel("axial", mu=0.0, kappa=1.0),
        log_width=LinearT(a=0.1, b=-0.1, scale=0.06, df=4.0),
        log_height=LinearT(a=0.1, b=-0.1, scale=0.06, df=4.0),
    )
    return NoiseProfile(
        localisation=loc, class_localisation=cls_loc,
        unmatched=UnmatchedModel(rate_a=0.2, rate_b=0.021, select_a=-6.0, select_b=-0.8),
        topology=TopologyModel(parent_a=-1.0, parent_b=0.5, split_share=0.6),
        classes=ClassModel(rate=0.026),
        meta={"source": "builtin (hand-set; see docs/noise.md)"},
    )
