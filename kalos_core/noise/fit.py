"""Fit a :class:`NoiseProfile` to real multi-rater data (paper Sec. 9.2-9.3).

Pairwise extraction, as in the paper: for every image and every pair of its raters,
boxes are matched one-to-one (greedy, IoU >= threshold, same class preferred: ψsoft).
One rater plays the reference, the other the noisy copy, in both directions (no
ground truth: errors are symmetric), unless ``reference_rater`` names a gold standard.

* matched, same class -> localisation: centre distance, direction, |log| width/height ratio,
  size covariate ``sqrt(relative area)`` of the reference box;
* matched, other class -> class rate, observed confusions, class-mistake localisation;
* unmatched objects containing >= 2 unmatched same-class objects of the other rater
  (each >= 60 % inside, <= 70 % of its area) -> fragmentation / combination;
* unmatched pairs with 0.1 <= IoU < threshold -> near misses (localisation outliers; skipped);
* the other unmatched -> Poisson event counts per image and logistic size selection.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..data import ImageRecord, MultiRaterDataset
from ..geometry import get_distance
from ..geometry.registry import box_intersection_union, box_iou_xyxy
from ..io.records import check_measurable
from ..matching.costs import get_cost
from ..matching.problem import MatchProblem
from ..matching.solvers import get_solver
from .estimators import fit_beta, fit_copula, fit_counts, fit_direction, fit_folded_t, fit_logistic
from .profile import ClassModel, LocalisationModel, NoiseProfile, TopologyModel, UnmatchedModel, builtin_profile

MIN_OBS = 30  # fewer observations than this: the component keeps its default value


def rel_boxes(image: ImageRecord, anns) -> np.ndarray:
    """Image-relative ``(x0, y0, x1, y1)`` of annotations (their bbox, or keypoint extents)."""
    out = np.zeros((len(anns), 4))
    for k, a in enumerate(anns):
        b = a.bbox if a.bbox is not None else (a.geometry if len(a.geometry) == 4 else None)
        if b is None:  # keypoints without bbox
            kp = np.reshape(a.geometry, (-1, 3))
            kp = kp[kp[:, 2] > 0] if (kp[:, 2] > 0).any() else kp
            lo, hi = kp[:, :2].min(0), kp[:, :2].max(0)
            b = (lo[0], lo[1], max(hi[0] - lo[0], 1.0), max(hi[1] - lo[1], 1.0))
        out[k] = [b[0] / image.width, b[1] / image.height, (b[0] + b[2]) / image.width, (b[1] + b[3]) / image.height]
    return out


def moment_boxes(image: ImageRecord, anns) -> np.ndarray:
    """Image-relative boxes with a polygon's area centroid and second moments: centre
    ``(cx, cy)``, half sides ``sqrt(3) * (sd_x, sd_y)`` (a filled rectangle gives its own box).
    Unlike the bounding box, one stray vertex hardly moves them: they measure the rigid part
    (shift and scale) of the difference between two outlines. Rings are parts (COCO)."""
    out = np.zeros((len(anns), 4))
    size = np.array([image.width, image.height], float)
    for k, a in enumerate(anns):
        area = mx = my = mxx = myy = 0.0
        for flat in a.geometry:
            p = np.reshape(np.asarray(flat, float), (-1, 2)) / size
            x, y = p[:, 0], p[:, 1]
            x1, y1 = np.roll(x, -1), np.roll(y, -1)
            cross = x * y1 - x1 * y
            sign = 1.0 if cross.sum() >= 0 else -1.0
            area += sign * cross.sum() / 2
            mx += sign * np.sum((x + x1) * cross) / 6
            my += sign * np.sum((y + y1) * cross) / 6
            mxx += sign * np.sum((x * x + x * x1 + x1 * x1) * cross) / 12
            myy += sign * np.sum((y * y + y * y1 + y1 * y1) * cross) / 12
        if area <= 1e-12:
            out[k] = rel_boxes(image, [a])[0]
            continue
        cx, cy = mx / area, my / area
        half = math.sqrt(3.0) * np.sqrt(np.maximum([mxx / area - cx * cx, myy / area - cy * cy], 1e-12))
        out[k] = [cx - half[0], cy - half[1], cx + half[0], cy + half[1]]
    return out


def geometry_iou(kind: str, image: ImageRecord, A, B) -> np.ndarray | None:
    """The IoU the agreement uses for polygons (exact outlines); ``None`` for other kinds (box IoU)."""
    if kind != "polygon" or not A or not B:
        return None
    spec = get_distance("polygon", "iou")
    return spec.similarity(spec.prepare(image, A), spec.prepare(image, B))


def match_pair(box_a, cat_a, box_b, cat_b, threshold: float = 0.5, similarity: np.ndarray | None = None):
    """One-to-one matching of two raters' labels by the engine's Greedy solver with ψsoft, on box
    IoU or on ``similarity`` (e.g. polygon IoU) where given. Boxes are ``(x1, y1, x2, y2)``.
    Returns ``(pairs (m, 2), similarity matrix, box intersections)``."""
    na, nb = len(box_a), len(box_b)
    if na == 0 or nb == 0:
        return np.zeros((0, 2), int), np.zeros((na, nb)), np.zeros((na, nb))
    inter, _ = box_intersection_union(box_a, box_b)
    iou = box_iou_xyxy(box_a, box_b) if similarity is None else np.asarray(similarity, float)
    sim = np.zeros((na + nb, na + nb))
    sim[:na, na:], sim[na:, :na] = iou, iou.T
    problem = MatchProblem(sim, np.repeat([0, 1], [na, nb]), np.concatenate([cat_a, cat_b]))
    units = get_solver("greedy")(problem, threshold, get_cost("soft"))
    first = {}
    pairs = []
    for k, u in enumerate(units):
        if u in first:
            pairs.append((first[u], k - na))
        else:
            first[u] = k
    return np.array(pairs, int).reshape(-1, 2), iou, inter


@dataclass
class PairData:
    """Everything extracted from the rater pairs (one direction = reference -> noisy)."""

    loc: list = field(default_factory=list)        # (x, dist, theta, |lw|, |lh|) same class
    cls_loc: list = field(default_factory=list)    # the same for class mistakes
    ious: list = field(default_factory=list)
    n_matched: int = 0
    n_cross: int = 0
    confusion: Counter = field(default_factory=Counter)
    counts: list = field(default_factory=list)     # (events, |Y| of the reference)
    select: list = field(default_factory=list)     # (unmatched flag, ln area)
    parent: list = field(default_factory=list)     # (parent flag, ln area)
    n_frag: int = 0
    n_comb: int = 0
    child_scale: list = field(default_factory=list)
    child_offset: list = field(default_factory=list)
    child_angle: list = field(default_factory=list)
    n_near_miss: int = 0
    unmatched_in_scene: list = field(default_factory=list)  # 1 if the other rater used the class


def _topology(box_p, cat_p, free_p, box_c, cat_c, free_c, inter):
    """Parents (unmatched, in P) holding >= 2 unmatched same-class children (in C)."""
    area_c = (box_c[:, 2] - box_c[:, 0]) * (box_c[:, 3] - box_c[:, 1])
    area_p = (box_p[:, 2] - box_p[:, 0]) * (box_p[:, 3] - box_p[:, 1])
    events = []
    taken = set()
    for p in np.flatnonzero(free_p):
        kids = [c for c in np.flatnonzero(free_c) if c not in taken and cat_c[c] == cat_p[p]
                and inter[p, c] >= 0.6 * area_c[c] and area_c[c] <= 0.7 * area_p[p]]
        if len(kids) >= 2:
            kids = sorted(kids, key=lambda c: -area_c[c])[:2]
            taken.update(kids)
            events.append((p, kids))
    return events


def _child_stats(parent: np.ndarray, kids: np.ndarray, data: PairData) -> None:
    pwh, pc = parent[2:] - parent[:2], (parent[:2] + parent[2:]) / 2
    vecs = []
    for k in kids:
        wh, c = k[2:] - k[:2], (k[:2] + k[2:]) / 2
        data.child_scale += list(np.log(np.maximum(wh, 1e-9) / pwh))
        v = (c - pc) / np.maximum((pwh - wh) / 2, 1e-9)
        data.child_offset.append(float(min(np.hypot(*v), 1.5)))
        vecs.append(v)  # the generator draws the angle in this room-normalised frame
    n1, n2 = np.hypot(*vecs[0]), np.hypot(*vecs[1])
    if n1 > 1e-9 and n2 > 1e-9:
        data.child_angle.append(math.acos(float(np.clip(vecs[0] @ vecs[1] / (n1 * n2), -1, 1))) / math.pi)


def _direction(data: PairData, im, box_a, cat_a, box_b, cat_b, pairs, iou, inter, names, shape_a=None,
               shape_b=None) -> None:
    """Record one direction a (reference) -> b (noisy); ``shape_*`` (moment boxes of polygons)
    give the localisation errors where present, the bounding boxes the size covariate."""
    shape_a = box_a if shape_a is None else shape_a
    shape_b = box_b if shape_b is None else shape_b
    free_a = np.ones(len(box_a), bool)
    free_b = np.ones(len(box_b), bool)
    free_a[pairs[:, 0]] = False
    free_b[pairs[:, 1]] = False
    for i, j in pairs:
        wa, wb = shape_a[i, 2:] - shape_a[i, :2], shape_b[j, 2:] - shape_b[j, :2]
        d = (shape_b[j, :2] + shape_b[j, 2:]) / 2 - (shape_a[i, :2] + shape_a[i, 2:]) / 2
        size = box_a[i, 2:] - box_a[i, :2]
        row = (math.sqrt(size[0] * size[1]), float(np.hypot(*d)), math.atan2(d[1], d[0]),
               *np.abs(np.log(np.maximum(wb, 1e-9) / np.maximum(wa, 1e-9))))
        data.ious.append(float(iou[i, j]))
        data.n_matched += 1
        if cat_a[i] == cat_b[j]:
            data.loc.append(row)
        else:
            data.cls_loc.append(row)
            data.n_cross += 1
            data.confusion[(names.get(cat_a[i], str(cat_a[i])), names.get(cat_b[j], str(cat_b[j])))] += 1
    frag = _topology(box_a, cat_a, free_a.copy(), box_b, cat_b, free_b.copy(), inter)
    comb = _topology(box_b, cat_b, free_b.copy(), box_a, cat_a, free_a.copy(), inter.T)
    parent_flag = np.zeros(len(box_a), bool)
    topo_a, topo_b = np.zeros(len(box_a), bool), np.zeros(len(box_b), bool)
    for p, kids in frag:
        parent_flag[p] = topo_a[p] = True
        topo_b[kids] = True
        _child_stats(box_a[p], box_b[kids], data)
    for p, kids in comb:
        topo_b[p] = True
        topo_a[kids] = True
        parent_flag[kids[0]] = True
    data.n_frag += len(frag)
    data.n_comb += len(comb)
    area_a = np.maximum((box_a[:, 2] - box_a[:, 0]) * (box_a[:, 3] - box_a[:, 1]), 1e-8)
    area_b = np.maximum((box_b[:, 2] - box_b[:, 0]) * (box_b[:, 3] - box_b[:, 1]), 1e-8)
    data.parent += list(zip(parent_flag.astype(float), np.log(area_a)))
    # near misses (an unmatched pair with 0.1 <= IoU < threshold) are localisation outliers, not
    # existence errors: the heavy-tailed localisation model produces them, so they are not counted
    near_a, near_b = np.zeros(len(box_a), bool), np.zeros(len(box_b), bool)
    if len(box_a) and len(box_b):
        close = (iou >= 0.1) & free_a[:, None] & free_b[None, :] & ~topo_a[:, None] & ~topo_b[None, :]
        near_a, near_b = close.any(1), close.any(0)
    data.n_near_miss += int(near_a.sum())
    topo_a, topo_b = topo_a | near_a, topo_b | near_b
    un_a, un_b = free_a & ~topo_a, free_b & ~topo_b
    data.unmatched_in_scene += [float(c in set(cat_a)) for c in cat_b[un_b]]
    data.counts.append((int(un_a.sum() + un_b.sum()), len(box_a)))
    data.select += list(zip(un_a[~topo_a].astype(float), np.log(area_a[~topo_a])))
    data.select += list(zip(un_b[~topo_b].astype(float), np.log(area_b[~topo_b])))


def extract_pairs(ds: MultiRaterDataset, threshold: float = 0.5, reference_rater: str | None = None) -> PairData:
    """Pairwise error data of a multi-rater data set (see the module docstring)."""
    data = PairData()
    for im in ds.images:
        by = defaultdict(list)
        for a in im.annotations:
            by[a.rater].append(a)
        rows = sorted(im.raters)
        for x, ra in enumerate(rows):
            for rb in rows[x + 1:]:
                if reference_rater is not None and reference_rater not in (ra, rb):
                    continue
                if rb == reference_rater:
                    ra, rb = rb, ra
                A, B = by[ra], by[rb]
                box_a, box_b = rel_boxes(im, A), rel_boxes(im, B)
                sh_a, sh_b = (moment_boxes(im, A), moment_boxes(im, B)) if ds.kind == "polygon" else (None, None)
                cat_a = np.array([a.category for a in A], int)
                cat_b = np.array([b.category for b in B], int)
                pairs, iou, inter = match_pair(box_a, cat_a, box_b, cat_b, threshold)
                _direction(data, im, box_a, cat_a, box_b, cat_b, pairs, iou, inter, ds.categories, sh_a, sh_b)
                if reference_rater is None:
                    _direction(data, im, box_b, cat_b, box_a, cat_a, pairs[:, ::-1], iou.T, inter.T, ds.categories,
                               sh_b, sh_a)
    return data


def _fit_loc(rows: list, default: LocalisationModel, report: dict, key: str, seed: int) -> LocalisationModel:
    if len(rows) < MIN_OBS:
        report[key] = {"n": len(rows), "source": "default (too few observations)"}
        return default
    arr = np.asarray(rows, float)
    x = arr[:, 0]
    trans, r_t = fit_folded_t(arr[:, 1], x, seed, scale_power=True)
    moved = arr[:, 1] > 1e-6
    direction, r_d = fit_direction(arr[moved, 2], seed) if moved.sum() >= MIN_OBS else (default.direction, {})
    lw, r_w = fit_folded_t(arr[:, 3], x, seed, scale_power=True)
    lh, r_h = fit_folded_t(arr[:, 4], x, seed, scale_power=True)
    pit = np.stack([m.cdf(arr[:, c], x) for m, c in ((trans, 1), (lw, 3), (lh, 4))], 1)
    copula, r_c = fit_copula(pit)
    report[key] = {"translation": r_t, "direction": r_d, "log_width": r_w, "log_height": r_h, "copula": r_c,
                   "source": "fitted"}
    return LocalisationModel(trans, direction, lw, lh, default.keypoint_jitter, copula)


def fit_noise_profile(ds: MultiRaterDataset, threshold: float = 0.5, reference_rater: str | None = None,
                      seed: int = 0, source: str = "") -> "FitResult":
    """Estimate a :class:`NoiseProfile` from a multi-rater data set (boxes; polygons and
    keypoints through their boxes). Components with fewer than :data:`MIN_OBS` observations
    keep the built-in value, and the report says so.

    (Not :func:`kalos_core.noise_aware.fit_reference_noise`, which fits the noise of a model's
    predictions against a reference rater for the noise-aware evaluation.)

    Parameters
    ----------
    ds : the multi-rater data set.
    threshold : IoU at which two raters' labels are matched.
    reference_rater : a gold-standard rater (the others are its noisy copies); None = every
        pair in both directions.
    seed : seed of the estimators' subsampling.
    source : where the data came from, for ``profile.meta["source"]`` (default ``"fit_noise"``).

    Returns
    -------
    FitResult : the profile, the goodness-of-fit report and the extracted pairs.
    """
    ds.check_raters(ds.raters, "raters", at_least=2)
    check_measurable(ds)   # two raters, but on no image together: no pair to compare
    if reference_rater is not None:
        ds.check_raters(reference_rater, "reference_rater")
    if not ds.n_annotations:
        raise ValueError("the data hold no labels: there is no noise to fit")
    d = extract_pairs(ds, threshold, reference_rater)
    base = builtin_profile()
    rep: dict = {"threshold": threshold, "reference_rater": reference_rater, "n_matched": d.n_matched,
                 "n_near_miss": d.n_near_miss}
    loc = _fit_loc(d.loc, base.localisation, rep, "localisation", seed)
    cls_loc = _fit_loc(d.cls_loc, base.class_localisation, rep, "class_localisation", seed)
    um = base.unmatched
    if len(d.counts) >= MIN_OBS:
        y, n = np.asarray(d.counts, float).T
        counts, rep["unmatched_count"] = fit_counts(y, n)
        sel = np.asarray(d.select, float)
        sa, sb, rep["unmatched_select"] = fit_logistic(sel[:, 0], sel[:, 1])
        scene = float(np.mean(d.unmatched_in_scene)) if d.unmatched_in_scene else 0.0
        rep["unmatched_select"]["share_of_scene_classes"] = scene
        um = UnmatchedModel(select_a=sa, select_b=sb, fp_share=um.fp_share, **counts,
                            fp_template="scene" if scene >= 0.5 else "dataset")
    topo = base.topology
    par = np.asarray(d.parent, float).reshape(-1, 2)
    if par[:, 0].sum() >= 5:
        pa, pb, rep["topology_parent"] = fit_logistic(par[:, 0], par[:, 1])
        share = d.n_frag / max(d.n_frag + d.n_comb, 1)
        scale, offset = np.asarray(d.child_scale), np.asarray(d.child_offset)
        ang_a, ang_b = topo.angle_alpha, topo.angle_beta
        if len(d.child_angle) >= MIN_OBS:
            ang_a, ang_b, rep["topology_angle"] = fit_beta(np.asarray(d.child_angle))
        topo = TopologyModel(pa, pb, share, float(scale.mean()), float(max(scale.std(), 1e-3)),
                             float(offset.mean()), float(max(offset.std(), 1e-3)), ang_a, ang_b)
        rep["topology"] = {"n_fragmentation": d.n_frag, "n_combination": d.n_comb, "split_share": share,
                           "n_child_angles": len(d.child_angle)}
    else:
        rep["topology"] = {"n_fragmentation": d.n_frag, "n_combination": d.n_comb,
                           "source": "default (too few observations)"}
    rate = d.n_cross / d.n_matched if d.n_matched else base.classes.rate
    conf: dict = defaultdict(dict)
    rows = Counter()
    for (a, b), c in d.confusion.items():
        rows[a] += c
    for (a, b), c in d.confusion.items():
        conf[a][b] = c / rows[a]
    classes = ClassModel(rate, dict(conf), base.classes.temperature, base.classes.top_k)
    rep["classes"] = {"n_matched": d.n_matched, "n_class_mistakes": d.n_cross, "rate": rate,
                      "n_confused_classes": len(conf)}
    ious = np.asarray(d.ious)
    rep["matched_iou"] = {"n": int(len(ious)), "median": float(np.median(ious)) if len(ious) else None}
    profile = NoiseProfile(loc, cls_loc, um, topo, classes,
                           meta={"source": source or "fit_noise", "n_images": len(ds.images),
                                 "n_annotations": ds.n_annotations, "threshold": threshold},
                           fit_report=rep)
    return FitResult(profile, rep, d)


@dataclass
class FitResult:
    """The fitted profile, the goodness-of-fit report (also ``profile.fit_report``) and the pairs."""

    profile: NoiseProfile
    report: dict
    data: PairData

    def to_dict(self) -> dict:
        """The profile as plain JSON values (the JSON contract of ``fit-noise --output``)."""
        return self.profile.to_dict()


@dataclass
class PairStats:
    """Agreement statistics of one rater pair (reference -> other) over a data set."""

    match_rate: float      # 2 * matched / (n_a + n_b)
    flip_rate: float       # matched pairs with different classes / matched
    ious: np.ndarray       # IoU of every matched pair
    n_a: int
    n_b: int


def pair_images(ds: MultiRaterDataset, pair: Callable[[ImageRecord], tuple[str, str] | None]):
    """``(image, pair(image))`` of every image for which ``pair`` names two raters (not None)."""
    for im in ds.images:
        who = pair(im)
        if who is not None:
            yield im, who


def pair_statistics(ds: MultiRaterDataset, pair: Callable[[ImageRecord], tuple[str, str] | None],
                    threshold: float = 0.5) -> PairStats:
    """Match rate, class-flip rate and matched IoUs of the rater pair ``pair(image)`` per image."""
    matched = cross = n_a = n_b = 0
    ious = []
    for im, who in pair_images(ds, pair):
        A = [a for a in im.annotations if a.rater == who[0]]
        B = [a for a in im.annotations if a.rater == who[1]]
        ca, cb = np.array([a.category for a in A], int), np.array([b.category for b in B], int)
        pairs, iou, _ = match_pair(rel_boxes(im, A), ca, rel_boxes(im, B), cb, threshold,
                                   geometry_iou(ds.kind, im, A, B))
        matched += len(pairs)
        cross += int((ca[pairs[:, 0]] != cb[pairs[:, 1]]).sum()) if len(pairs) else 0
        ious += [float(iou[i, j]) for i, j in pairs]
        n_a, n_b = n_a + len(A), n_b + len(B)
    return PairStats(2 * matched / max(n_a + n_b, 1), cross / max(matched, 1), np.asarray(ious), n_a, n_b)
