"""The four noise channels, applied in a strict hierarchy (paper Sec. 9.4).

unmatched (existence) -> fragmentation/combination (topology) -> class (semantics)
-> localisation (geometry). Every channel samples its events on the *whole* reference
set (the theoretical error rate) and can only act on candidates that are still clean;
an event whose candidate a higher-priority channel consumed is *cannibalised*
(Table 3). Geometry is image-relative: boxes ``(x0, y0, x1, y1)`` in ``[0, 1]``,
polygons as lists of ``(N, 2)`` rings, keypoints as ``(K, 3)`` arrays ``(x, y, v)``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely

from .profile import ClassModel, LocalisationModel, NoiseProfile

MIN_SIDE = 1e-4  # smallest relative side a generated box may have


@dataclass(eq=False)
class RefObject:
    """One clean reference object (image-relative box, optional shape, original pixel payload)."""

    id: Any
    category: int
    box: np.ndarray
    shape: Any = None
    geometry: Any = None
    bbox: tuple | None = None

    @property
    def area(self) -> float:
        return max(float((self.box[2] - self.box[0]) * (self.box[3] - self.box[1])), MIN_SIDE**2)


@dataclass(eq=False)
class SynthLabel:
    """One synthetic label and its truth: reference object id(s) (empty for a false positive),
    the errors applied (in order), the reference class; ``exact`` = an untouched copy."""

    category: int
    box: np.ndarray
    shape: Any
    ref_ids: tuple
    errors: list[str] = field(default_factory=list)
    ref_category: int | None = None
    source: RefObject | None = None
    exact: bool = False


@dataclass
class ChannelStats:
    """Sampled error events per channel and how many were cannibalised."""

    attempted: Counter = field(default_factory=Counter)
    cannibalised: Counter = field(default_factory=Counter)
    capped: int = 0          # misses drawn beyond the objects an image has (not cannibalised)
    no_partner: int = 0      # combinations without a same-class neighbour
    fp_unplaced: int = 0     # false positives that found no free spot

    def add(self, other: "ChannelStats") -> None:
        self.attempted.update(other.attempted)
        self.cannibalised.update(other.cannibalised)
        self.capped += other.capped
        self.no_partner += other.no_partner
        self.fp_unplaced += other.fp_unplaced

    @property
    def ratio(self) -> float:
        """Cannibalised / sampled error events (0 when nothing was sampled)."""
        total = sum(self.attempted.values())
        return sum(self.cannibalised.values()) / total if total else 0.0

    def to_dict(self) -> dict:
        return {"attempted": dict(self.attempted), "cannibalised": dict(self.cannibalised),
                "ratio": self.ratio, "capped": self.capped, "no_partner": self.no_partner,
                "fp_unplaced": self.fp_unplaced}


class ClassSampler:
    """Draws the wrong class for a category mistake (never the true one)."""

    def __init__(self, categories: dict[int, str], model: ClassModel,
                 similarity: dict[str, dict[str, float]] | None = None) -> None:
        self.categories, self.model, self.similarity = dict(categories), model, similarity or {}
        self.by_name = {v: k for k, v in self.categories.items()}
        self._rows: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}

    def row(self, c: int) -> tuple[np.ndarray, np.ndarray] | None:
        if c not in self._rows:
            self._rows[c] = self._make_row(c)
        return self._rows[c]

    def _make_row(self, c: int):
        name = self.categories.get(c, str(c))
        observed = {self.by_name[n]: p for n, p in self.model.confusion.get(name, {}).items()
                    if n in self.by_name and self.by_name[n] != c and p > 0}
        if observed:
            ids = np.array(list(observed))
            p = np.array(list(observed.values()), float)
            return ids, p / p.sum()
        sims = {self.by_name[n]: s for n, s in self.similarity.get(name, {}).items()
                if n in self.by_name and self.by_name[n] != c}
        if sims:
            top = sorted(sims.items(), key=lambda kv: -kv[1])[: self.model.top_k]
            ids = np.array([k for k, _ in top])
            z = np.array([s for _, s in top], float) / self.model.temperature
            p = np.exp(z - z.max())
            return ids, p / p.sum()
        others = np.array([k for k in self.categories if k != c])
        return (others, np.full(len(others), 1.0 / len(others))) if len(others) else None

    def sample(self, c: int, rng: np.random.Generator) -> int | None:
        row = self.row(c)
        return None if row is None else int(row[0][rng.choice(len(row[0]), p=row[1])])


@dataclass
class RaterContext:
    """What the channels need for one rater: its magnitude, profile, random stream and pools."""

    rng: np.random.Generator
    magnitude: float
    profile: NoiseProfile
    classes: ClassSampler
    templates: list[RefObject]          # all reference objects (false-positive templates)
    template_p: np.ndarray              # their selection probabilities
    stats: ChannelStats = field(default_factory=ChannelStats)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(z, float)))


def remap(shape: Any, old: np.ndarray, new: np.ndarray) -> Any:
    """Move a shape with its box: the axis-aligned affine map taking ``old`` onto ``new``."""
    if shape is None:
        return None
    scale = (new[2:] - new[:2]) / np.maximum(old[2:] - old[:2], 1e-12)
    if isinstance(shape, list):
        return [new[:2] + (ring - old[:2]) * scale for ring in shape]
    out = shape.copy()
    seen = out[:, 2] > 0
    out[seen, :2] = new[:2] + (out[seen, :2] - old[:2]) * scale
    return out


def _clip_boxes(boxes: np.ndarray) -> np.ndarray:
    boxes = np.clip(boxes, 0.0, 1.0)
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + MIN_SIDE)
    over = boxes[:, 2:] > 1.0
    boxes[:, :2] = np.where(over, 1.0 - MIN_SIDE, boxes[:, :2])
    boxes[:, 2:] = np.minimum(boxes[:, 2:], 1.0)
    return boxes


def iou_one(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    if len(boxes) == 0:
        return np.zeros(0)
    iw = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    ih = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = iw * ih
    area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
    return inter / np.maximum(area(box) + area(boxes) - inter, 1e-12)


def copy_label(obj: RefObject) -> SynthLabel:
    shape = None if obj.shape is None else ([r.copy() for r in obj.shape] if isinstance(obj.shape, list)
                                             else obj.shape.copy())
    return SynthLabel(obj.category, obj.box.copy(), shape, (obj.id,), [], obj.category, obj, exact=True)


def localise(labels: list[SynthLabel], model: LocalisationModel, lam: float, rng: np.random.Generator) -> None:
    """Shift and rescale ``labels`` in place (Eq. 12-14), magnitudes times ``lam``."""
    if not labels or lam <= 0:
        return
    boxes = np.array([lab.box for lab in labels], float)
    wh = boxes[:, 2:] - boxes[:, :2]
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    x = np.sqrt(wh[:, 0] * wh[:, 1])
    m = len(labels)
    if model.copula is None:  # independent draws, in the historical order (same seed, same output)
        dist = lam * model.translation.sample(x, rng)
        theta = model.direction.sample(m, rng)
        centre = np.clip(centre + dist[:, None] * np.stack([np.cos(theta), np.sin(theta)], 1), 0.0, 1.0)
        sign = rng.choice([-1.0, 1.0], size=(m, 2))
        logs = np.stack([model.log_width.sample(x, rng), model.log_height.sample(x, rng)], 1)
    else:
        mags = model.sample_magnitudes(x, rng)
        dist, logs = lam * mags[:, 0], mags[:, 1:]
        theta = model.direction.sample(m, rng)
        centre = np.clip(centre + dist[:, None] * np.stack([np.cos(theta), np.sin(theta)], 1), 0.0, 1.0)
        sign = rng.choice([-1.0, 1.0], size=(m, 2))
    wh = np.maximum(wh * np.exp(lam * sign * logs), MIN_SIDE)
    new = _clip_boxes(np.concatenate([centre - wh / 2, centre + wh / 2], 1))
    for k, lab in enumerate(labels):
        lab.shape = remap(lab.shape, lab.box, new[k])
        if lab.shape is not None and not isinstance(lab.shape, list) and model.keypoint_jitter > 0:
            seen = lab.shape[:, 2] > 0
            lab.shape[seen, :2] = np.clip(
                lab.shape[seen, :2] + rng.normal(0, lam * model.keypoint_jitter * x[k], (int(seen.sum()), 2)), 0, 1)
        lab.box = new[k]
        lab.exact = False


def apply_convention(labels: list[SynthLabel], offsets, school: str | None) -> None:
    """A school's systematic edge offsets (fractions of width / height, outwards positive)."""
    left, top, right, bottom = offsets
    for lab in labels:
        w, h = lab.box[2] - lab.box[0], lab.box[3] - lab.box[1]
        new = _clip_boxes(np.array([[lab.box[0] - left * w, lab.box[1] - top * h,
                                     lab.box[2] + right * w, lab.box[3] + bottom * h]]))[0]
        lab.shape, lab.box, lab.exact = remap(lab.shape, lab.box, new), new, False
        lab.errors.append(f"school:{school}")


# ----------------------------------------------------------------------------- channel 1
def unmatched_channel(objs: list[RefObject], clean: np.ndarray, out: list[SynthLabel], missed: list,
                      ctx: RaterContext) -> None:
    """Misses (weighted towards small objects) and false positives (ghosts of a reference
    object's size and class, placed where they overlap nothing: IoU < 0.1)."""
    m, lam, rng = ctx.profile.unmatched, ctx.magnitude, ctx.rng
    if lam <= 0:
        return
    k = m.sample_events(len(objs), lam, rng)
    n_fp = int(rng.binomial(k, m.fp_share))
    n_fn = k - n_fp
    take = min(n_fn, len(objs))
    ctx.stats.attempted["unmatched"] += take + n_fp
    ctx.stats.capped += n_fn - take
    if take:
        w = sigmoid(m.select_a + m.select_b * np.log([o.area for o in objs])) + 1e-12
        for i in rng.choice(len(objs), size=take, replace=False, p=w / w.sum()):
            clean[i] = False
            missed.append(objs[i].id)
    taken = np.array([o.box for o in objs] + [lab.box for lab in out]).reshape(-1, 4)
    local = None
    if n_fp and objs and m.fp_template == "scene":
        w = sigmoid(m.select_a + m.select_b * np.log([o.area for o in objs])) + 1e-12
        local = (objs, w / w.sum())
    for _ in range(n_fp):
        ghost = _ghost(taken, ctx, local)
        if ghost is None:
            ctx.stats.fp_unplaced += 1
            continue
        out.append(ghost)
        taken = np.vstack([taken, ghost.box])


def _ghost(taken: np.ndarray, ctx: RaterContext, local=None, tries: int = 20) -> SynthLabel | None:
    """A false positive shaped like a template: one of the scene's own objects (``local``:
    objects and selection probabilities; real extra labels are of classes the scene has), else
    one from the whole reference set."""
    rng = ctx.rng
    if local is not None:
        t = local[0][int(rng.choice(len(local[0]), p=local[1]))]
    elif ctx.templates:
        t = ctx.templates[int(rng.choice(len(ctx.templates), p=ctx.template_p))]
    else:
        return None
    wh = t.box[2:] - t.box[:2]
    if (wh >= 1.0).any():
        return None
    for _ in range(tries):
        lo = rng.uniform(0, 1, 2) * (1.0 - wh)
        box = np.concatenate([lo, lo + wh])
        if (iou_one(box, taken) < 0.1).all():
            shape = copy_label(t).shape
            return SynthLabel(t.category, box, remap(shape, t.box, box), (), ["false_positive"], None)
    return None


# ----------------------------------------------------------------------------- channel 2
def topology_channel(objs: list[RefObject], clean: np.ndarray, out: list[SynthLabel], ctx: RaterContext) -> None:
    """Fragmentation (one parent -> two smaller children on opposite sides) or combination
    (a parent merged with its nearest clean same-class neighbour)."""
    t, lam, rng = ctx.profile.topology, ctx.magnitude, ctx.rng
    if lam <= 0 or not objs:
        return
    p = np.minimum(1.0, lam * sigmoid(t.parent_a + t.parent_b * np.log([o.area for o in objs])))
    hit = rng.random(len(objs)) < p
    split = rng.random(len(objs)) < t.split_share
    for i in np.flatnonzero(hit):
        ctx.stats.attempted["topology"] += 1
        if not clean[i]:
            ctx.stats.cannibalised["topology"] += 1
            continue
        if split[i]:
            out.extend(fragment(objs[i], ctx))
            clean[i] = False
            continue
        j = _partner(objs, clean, i)
        if j is None:
            ctx.stats.no_partner += 1
            continue
        out.append(combine(objs[i], objs[j]))
        clean[i] = clean[j] = False


def _partner(objs: list[RefObject], clean: np.ndarray, i: int) -> int | None:
    a = objs[i]
    best, best_d = None, math.inf
    ca, sa = (a.box[:2] + a.box[2:]) / 2, math.sqrt(a.area)
    for j, b in enumerate(objs):
        if j == i or not clean[j] or b.category != a.category:
            continue
        d = float(np.hypot(*((b.box[:2] + b.box[2:]) / 2 - ca))) / (sa + math.sqrt(b.area))
        if d < best_d:
            best, best_d = j, d
    return best if best_d <= 1.5 else None


def fragment(obj: RefObject, ctx: RaterContext) -> list[SynthLabel]:
    """Two children of ``obj``: smaller (per-side log scale), on opposing sides (Beta angle)."""
    t, rng = ctx.profile.topology, ctx.rng
    parent_wh = obj.box[2:] - obj.box[:2]
    centre = (obj.box[:2] + obj.box[2:]) / 2
    phi = rng.uniform(0, 2 * math.pi)
    phis = [phi, phi + rng.choice([-1.0, 1.0]) * math.pi * rng.beta(t.angle_alpha, t.angle_beta)]
    children = []
    for ph in phis:
        wh = parent_wh * np.clip(np.exp(rng.normal(t.child_log_scale_mean, t.child_log_scale_sd, 2)), 0.05, 0.95)
        r = float(np.clip(rng.normal(t.child_offset_mean, t.child_offset_sd), 0.0, 1.0))
        c = centre + r * np.array([math.cos(ph), math.sin(ph)]) * (parent_wh - wh) / 2
        box = _clip_boxes(np.concatenate([c - wh / 2, c + wh / 2])[None])[0]
        children.append(SynthLabel(obj.category, box, None, (obj.id,), ["fragment"], obj.category))
    if obj.shape is None:
        return children
    if isinstance(obj.shape, list):
        parent = shapely.union_all([shapely.Polygon(r) for r in obj.shape if len(r) >= 3]).buffer(0)
        for ch in children:
            piece = parent.intersection(shapely.box(*ch.box))
            parts = [g for g in getattr(piece, "geoms", [piece]) if isinstance(g, shapely.Polygon) and g.area > 0]
            best = max(parts, key=lambda g: g.area, default=None)
            ring = np.asarray(best.exterior.coords)[:-1] if best is not None else None
            ch.shape = [ring] if ring is not None and len(ring) >= 3 else [_rect(ch.box)]
        return children
    centres = np.array([(ch.box[:2] + ch.box[2:]) / 2 for ch in children])
    seen = obj.shape[:, 2] > 0
    owner = np.argmin(((obj.shape[:, None, :2] - centres[None]) ** 2).sum(-1), axis=1)
    kept = []
    for k, ch in enumerate(children):
        kp = obj.shape.copy()
        kp[~(seen & (owner == k))] = 0.0
        if (kp[:, 2] > 0).any():
            ch.shape = remap(kp, obj.box, obj.box)
            kept.append(ch)
    return kept


def _rect(box: np.ndarray) -> np.ndarray:
    return np.array([[box[0], box[1]], [box[2], box[1]], [box[2], box[3]], [box[0], box[3]]])


def combine(a: RefObject, b: RefObject) -> SynthLabel:
    """One label covering ``a`` and ``b`` (union box; both polygons' rings; keypoints of ``a``,
    filled in from ``b``)."""
    box = np.concatenate([np.minimum(a.box[:2], b.box[:2]), np.maximum(a.box[2:], b.box[2:])])
    shape = None
    if isinstance(a.shape, list):
        shape = [r.copy() for r in a.shape] + [r.copy() for r in b.shape]
    elif a.shape is not None:
        shape = a.shape.copy()
        if b.shape is not None and len(b.shape) == len(a.shape):
            fill = (shape[:, 2] <= 0) & (b.shape[:, 2] > 0)
            shape[fill] = b.shape[fill]
    return SynthLabel(a.category, box, shape, (a.id, b.id), ["combination"], a.category)


# ----------------------------------------------------------------------------- channels 3 and 4
def class_channel(objs: list[RefObject], clean: np.ndarray, out: list[SynthLabel], ctx: RaterContext) -> None:
    """Category mistakes (Bernoulli, the global rate or a class's own), with their own localisation profile."""
    lam, rng = ctx.magnitude, ctx.rng
    if lam <= 0 or not objs:
        return
    model = ctx.profile.classes
    if model.rates:
        names = ctx.classes.categories
        rate = np.array([model.rate_of(names.get(o.category, str(o.category))) for o in objs])
    else:
        rate = model.rate
    hit = rng.random(len(objs)) < np.minimum(1.0, lam * rate)
    flipped = []
    for i in np.flatnonzero(hit):
        ctx.stats.attempted["class"] += 1
        if not clean[i]:
            ctx.stats.cannibalised["class"] += 1
            continue
        new = ctx.classes.sample(objs[i].category, rng)
        if new is None:
            continue
        lab = copy_label(objs[i])
        lab.category, lab.exact = new, False
        lab.errors.append("class")
        flipped.append(lab)
        clean[i] = False
    localise(flipped, ctx.profile.class_localisation, lam, rng)
    out.extend(flipped)


def localisation_channel(objs: list[RefObject], clean: np.ndarray, out: list[SynthLabel], ctx: RaterContext) -> None:
    """Every object no other channel touched gets the baseline shift and scale."""
    labels = [copy_label(objs[i]) for i in np.flatnonzero(clean)]
    if ctx.magnitude > 0:
        localise(labels, ctx.profile.localisation, ctx.magnitude, ctx.rng)
        for lab in labels:
            lab.errors.append("localisation")
    out.extend(labels)


def rate_image(objs: list[RefObject], ctx: RaterContext, offsets=(0.0, 0.0, 0.0, 0.0),
               school: str | None = None) -> tuple[list[SynthLabel], list]:
    """One rater's labels of one image (shuffled) and the reference ids it missed."""
    clean = np.ones(len(objs), bool)
    out: list[SynthLabel] = []
    missed: list = []
    unmatched_channel(objs, clean, out, missed, ctx)
    topology_channel(objs, clean, out, ctx)
    class_channel(objs, clean, out, ctx)
    localisation_channel(objs, clean, out, ctx)
    if any(v != 0.0 for v in offsets):
        apply_convention(out, offsets, school)
    return [out[i] for i in ctx.rng.permutation(len(out))], missed
