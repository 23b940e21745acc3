"""The parameters of the empirical noise generator (METHOD.md §7, paper Sec. 9.3).

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

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
#: winsorising quantiles of the Student-t residuals (paper Eq. 12)
WINSOR = (0.001, 0.999)


@dataclass
class LinearT:
    """``|a + b * x + T|`` with ``T ~ Student-t(df, 0, scale)`` winsorised at :data:`WINSOR`."""

    a: float
    b: float
    scale: float
    df: float

    def sample(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw per entry of ``x`` (non-negative)."""
        u = np.clip(rng.random(len(x)), *WINSOR)
        return np.abs(self.a + self.b * np.asarray(x, float) + self.scale * stats.t.ppf(u, self.df))


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


@dataclass
class UnmatchedModel:
    """Events ``k ~ Poisson(exp(rate_a + rate_b * |Y|))`` (Eq. 16); targets weighted by
    ``sigmoid(select_a + select_b * ln A)`` (Eq. 17); each event is a false positive with
    probability ``fp_share``, else a miss."""

    rate_a: float
    rate_b: float
    select_a: float
    select_b: float
    fp_share: float = 0.5


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
    """Category mistakes (Sec. 9.3.2): a global Bernoulli ``rate``; the new class from observed
    ``confusion`` (``{class name: {class name: probability}}``), else a softmax over a user
    similarity matrix (``temperature``, ``top_k`` most similar), else uniform."""

    rate: float = 0.026
    confusion: dict[str, dict[str, float]] = field(default_factory=dict)
    temperature: float = 0.1
    top_k: int = 10


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
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "NoiseProfile":
        return _build(cls, data)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


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


def load_profile(path: str | Path | None = None) -> NoiseProfile:
    """A profile from a JSON file; ``None`` gives the shipped default (``profiles/default.json``)."""
    path = Path(path) if path is not None else PROFILES_DIR / "default.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read noise profile {path}: {e}") from None
    return NoiseProfile.from_dict(data)


def builtin_profile() -> NoiseProfile:
    """The hand-set starting point that ``profiles/default.json`` was calibrated from.

    Numbers from the paper: class rate 0.026, Poisson slope 0.021 (LVIS), child-to-child
    angle Beta(4.53, 0.53), child area ratio median 0.088 (per side ln(sqrt(0.088)) = -1.215).
    The rest are assumptions, calibrated in ``benchmarks/noise_default_profile.py`` (see
    docs/noise.md).
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
