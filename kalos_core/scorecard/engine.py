"""Rater scorecards: each rater's boxes scored against a reference, as a detector against ground truth.

The reference of rater ``r`` is

* a named rater (an expert, ``reference="alice"``): their labels on the images both were assigned;
  the expert is not scored;
* or, by default, the majority of the *other* raters (leave-one-out, so a rater is never scored
  against themselves): with one other rater on an image, that rater's labels; with more, the
  consensus of the others (:func:`kalos_core.consensus.compute_consensus`: the agreement's units,
  a label where more than half of them drew it, majority class, median box).

The matching is COCOeval's greedy (:class:`kalos_core.coco_eval.BoxEval`): per image and class the
rater's labels in their order (a human label has no score: every score ties, so the order is the
input's, as FiftyOne's ``evaluate_detections`` sorts them), each taking the free reference label of
its class with the highest IoU at or above the threshold. That is ``evaluate_detections(...,
method="coco", classwise=True)`` of the rater's field against the reference field. A matched rater
label is a true positive, an unmatched one an *extra* (false positive), an unmatched reference
label a *miss* (false negative). The confusion matrix matches without classes
(``classwise=False``): rows the reference class, columns the rater's, ``(none)`` for a label the
other side lacks.

Size tendency: over the matched pairs at the IoU (classwise), ``d = ln(rater box area / reference box
area)``; ``size_bias = exp(mean d) - 1`` (the geometric-mean area ratio less one: +0.10 for a rater
whose boxes are 10 % larger) with the normal 95 % interval of the mean of ``d`` mapped the same way
(``size_bias_lo``, ``size_bias_hi``; none with fewer than two pairs). It is the rater's systematic
tendency against the reference; a log ratio, so A against B is the reciprocal of B against A.

Object size: a label's box area ``w·h`` in pycocotools' ranges (:data:`SIZE_BUCKETS`): small below
32², medium below 96², large from 96² on (pycocotools' ranges are closed, so a box of exactly 32² or
96² is in two of them there; here it is counted once, in the larger).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, replace

import numpy as np

from ..coco_eval import IOU_THRESHOLDS, BoxEval, Boxes, coco_iou
from ..data import MultiRaterDataset
from ..io.records import check_measurable
from ..jsonsafe import json_safe
from ..params import Config, ParamError, param

#: pycocotools' area ranges (``Params.areaRng`` of COCOeval, bbox): name -> (lo, hi) in square pixels
SIZE_BUCKETS = {"small": (0.0, 32.0**2), "medium": (32.0**2, 96.0**2), "large": (96.0**2, 1e5**2)}
ALL = "(all)"
NONE = "(none)"
LEAVE_ONE_OUT = "leave-one-out majority of the other raters"
#: the columns of the scorecard table (CSV header, ``rows``' keys), one row per rater x class
COLUMNS = ("rater", "class", "reference", "iou", "n_images", "n_rater", "n_reference", "tp", "fp", "fn",
           "precision", "recall", "f1", "precision_coco", "recall_coco", "f1_coco", "loc_error",
           "size_bias", "size_bias_lo", "size_bias_hi",
           *(f"misses_{b}" for b in SIZE_BUCKETS), *(f"extras_{b}" for b in SIZE_BUCKETS))


@dataclass(frozen=True)
class ScorecardConfig(Config):
    """Settings of a scorecard run: the reference and the IoU a label needs to count as found."""

    reference: str | None = param(
        None, "str", "the reference rater (an expert; not scored); default: each rater against the majority "
        "of the other raters (leave-one-out)", optional=True, label="Reference rater")
    iou: float = param(0.5, "fraction", "IoU a rater's box needs with a reference box of its class to be "
                       "found (precision, recall and F1 at it; the _coco columns average COCO's .50:.05:.95)",
                       lo_open=True, label="IoU")


@dataclass
class ScorecardResult:
    """``rows``: one dict per rater x class (:data:`COLUMNS`; class ``(all)`` is the rater's total);
    ``confusion[rater]``: ``{"classes": [...], "matrix": [[...]]}``, rows the reference's class,
    columns the rater's, the last of each ``(none)``; ``labels[rater]``: ``{"extras": {class: ids},
    "misses": {class: ids}}`` at the IoU, the ids of the labels behind each count (a miss of a
    majority reference: the ids of the other raters' labels it was made from)."""

    rows: list
    confusion: dict
    reference: str
    iou: float
    raters: list = field(default_factory=list)
    n_images: int = 0
    config: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    #: per rater, every label's outcome (:func:`kalos_core.scorecard.subsets.outcome_table`): what the
    #: confusion cells and the subsets are computed from, with no new matching
    outcomes: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe({"config": self.config, "reference": self.reference, "iou": self.iou,
                          "raters": self.raters, "n_images": self.n_images, "columns": list(COLUMNS),
                          "rows": self.rows, "confusion": self.confusion, "labels": self.labels,
                          "outcomes": self.outcomes})

    def csv_text(self) -> str:
        """The rows as CSV (header :data:`COLUMNS`; an undefined ratio is an empty cell)."""
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in self.rows:
            w.writerow({k: ("" if row[k] is None else row[k]) for k in COLUMNS})
        return out.getvalue()

    def row(self, rater: str, cls: str = ALL) -> dict:
        return next(r for r in self.rows if r["rater"] == rater and r["class"] == cls)


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b else None


#: the normal quantile of the size tendency's 95 % interval
Z95 = 1.959963984540054


def size_tendency(n: int, s1: float, s2: float) -> tuple:
    """``(size_bias, lo, hi)`` from ``n`` log area ratios with sum ``s1`` and sum of squares ``s2``:
    ``exp(mean) - 1`` and the normal 95 % interval of the mean (sample s.d.) mapped the same way;
    None where undefined (no pair; no interval with one)."""
    if n < 1:
        return None, None, None
    mean = s1 / n
    if n < 2:
        return float(np.expm1(mean)), None, None
    half = Z95 * np.sqrt(max(s2 - n * mean * mean, 0.0) / (n - 1) / n)
    return float(np.expm1(mean)), float(np.expm1(mean - half)), float(np.expm1(mean + half))


def _bucket(area: np.ndarray) -> np.ndarray:
    """Size bucket index of each area (0 small, 1 medium, 2 large)."""
    return np.searchsorted([SIZE_BUCKETS["medium"][0], SIZE_BUCKETS["large"][0]], area, side="right")


def _boxes(anns: list, img_at: dict, cat_at: dict) -> Boxes:
    """``(image_id, annotation)`` pairs as :class:`Boxes` (the box of a box label is its geometry)."""
    return Boxes(np.array([a.geometry if a.bbox is None else a.bbox for _, a in anns], float).reshape(-1, 4),
                 np.array([img_at[i] for i, _ in anns], np.int64),
                 np.array([cat_at[a.category] for _, a in anns], np.int64))


@dataclass(frozen=True)
class _Ref:
    """A reference label: what :func:`_boxes` reads of an annotation."""

    category: int
    geometry: tuple
    bbox: tuple | None = None
    members: tuple = ()        #: the ids of the labels it was made from


def _majority(sub: MultiRaterDataset) -> list:
    """``(image_id, label)`` of the consensus of ``sub``'s raters: the consensus measure's own steps
    (the agreement's units, :func:`kalos_core.consensus.units.unit_table`, a unit kept when more
    than half of its image's raters support its class, its median box), as
    :func:`kalos_core.consensus.compute_consensus` builds its labels with the default settings."""
    from ..agreement.pipeline import AgreementConfig, compute_agreement
    from ..consensus.units import median_boxes, unit_table

    quick = AgreementConfig(vitality=False, class_difficulty=False, collaboration=False, intra_rater=False,
                            bootstrap=0, lsa_thresholds=())
    t = unit_table(sub, compute_agreement(sub, quick).unit_of)
    n_of = np.array([len(im.raters) for im in sub.images], np.int64)
    need = np.minimum(n_of, np.floor(0.5 * n_of + 1e-9).astype(np.int64) + 1)   # consensus' needed_support
    kept = np.flatnonzero(t.top >= need[t.unit_image])
    f = median_boxes(t)[kept]
    ends = np.append(t.start[1:], len(t.ids))
    return [(sub.images[i].id, _Ref(c, (x1, y1, x2 - x1, y2 - y1), members=tuple(t.ids[s:e])))
            for i, c, (x1, y1, x2, y2), s, e in zip(t.unit_image[kept].tolist(), t.first_winners(kept), f.tolist(),
                                                     t.start[kept].tolist(), ends[kept].tolist())]


def _leave_one_out(dataset: MultiRaterDataset, rater: str) -> list:
    """``(image_id, label)`` of the other raters' majority on the images ``rater`` was assigned."""
    single, several = [], []
    for im in dataset.images:
        others = tuple(r for r in im.raters if r != rater)
        if rater not in im.raters or not others:
            continue
        if len(others) == 1:
            single += [(im.id, a) for a in im.annotations if a.rater == others[0]]
        else:
            several.append(replace(im, raters=others, annotations=[a for a in im.annotations if a.rater != rater]))
    if several:
        single += _majority(replace(dataset, images=several, skipped=[], warnings=[]))
    return single


def _reference_of(dataset: MultiRaterDataset, rater: str, expert: str | None) -> tuple[list, set]:
    """The reference labels of ``rater`` and the ids of the images it is scored on."""
    if expert is not None:
        images = {im.id for im in dataset.images if rater in im.raters and expert in im.raters}
        return [(im.id, a) for im in dataset.images if im.id in images
                for a in im.annotations if a.rater == expert], images
    images = {im.id for im in dataset.images if rater in im.raters and len(im.raters) > 1}
    return _leave_one_out(dataset, rater), images


def score_rater(dataset: MultiRaterDataset, rater: str, reference: list, images: set, iou: float,
                names: list[str], cat_at: dict, img_at: dict) -> tuple[list[dict], dict, dict, dict]:
    """One rater's rows (its classes and ``(all)``), confusion matrix, extras / misses ids and label
    outcomes (:func:`kalos_core.scorecard.subsets.outcome_table`) against ``reference``."""
    dt_anns = [(im.id, a) for im in dataset.images if im.id in images for a in im.annotations if a.rater == rater]
    gt, dt = _boxes(reference, img_at, cat_at), _boxes(dt_anns, img_at, cat_at)
    K = len(names)
    thresholds = np.r_[iou, IOU_THRESHOLDS]
    zeros = np.zeros(len(dt_anns))
    matched, _, _, dt_gt = BoxEval(gt, dt, zeros, K, floor=iou).match(thresholds=thresholds, with_gt=True)
    n_dt, n_gt = np.bincount(dt.cat, minlength=K), np.bincount(gt.cat, minlength=K)
    tp = np.stack([np.bincount(dt.cat[m], minlength=K) for m in matched])          # (T, K)
    at = matched[0]
    ious = coco_iou(dt.xywh[at], gt.xywh[dt_gt[0, at]])
    loss = np.bincount(dt.cat[at], 1.0 - ious, minlength=K)
    log_ratio = np.log(dt.area[at] / gt.area[dt_gt[0, at]])     # IoU > 0: both areas are positive
    lr1, lr2 = (np.bincount(dt.cat[at], w, minlength=K) for w in (log_ratio, log_ratio ** 2))
    gt_found = np.zeros(len(gt.cat), bool)
    gt_found[dt_gt[0, at]] = True
    misses = np.zeros((K, 3), np.int64)
    extras = np.zeros((K, 3), np.int64)
    np.add.at(misses, (gt.cat[~gt_found], _bucket(gt.area[~gt_found])), 1)
    np.add.at(extras, (dt.cat[~at], _bucket(dt.area[~at])), 1)

    def row(cls: str, k) -> dict:
        t, nd, ng = (x[..., k].sum(-1) if isinstance(k, slice) else x[..., k] for x in (tp, n_dt, n_gt))
        p = [_ratio(x, nd) for x in np.atleast_1d(t).tolist()]
        r = [_ratio(x, ng) for x in np.atleast_1d(t).tolist()]
        f = [_ratio(2 * x, nd + ng) for x in np.atleast_1d(t).tolist()]    # 2PR/(P+R); 0 where nothing is found
        mean = lambda v: None if v[1] is None else float(np.mean(v[1:]))
        n_tp = int(np.atleast_1d(t)[0])
        out = {"rater": rater, "class": cls, "reference": None, "iou": iou, "n_images": len(images),
               "n_rater": int(nd), "n_reference": int(ng), "tp": n_tp, "fp": int(nd) - n_tp, "fn": int(ng) - n_tp,
               "precision": p[0], "recall": r[0], "f1": f[0], "precision_coco": mean(p), "recall_coco": mean(r),
               "f1_coco": mean(f), "loc_error": _ratio(loss[k].sum(), n_tp)}
        out["size_bias"], out["size_bias_lo"], out["size_bias_hi"] = size_tendency(n_tp, lr1[k].sum(), lr2[k].sum())
        for j, b in enumerate(SIZE_BUCKETS):
            out[f"misses_{b}"] = int(misses[k, j].sum())
            out[f"extras_{b}"] = int(extras[k, j].sum())
        return out

    rows = [row(ALL, slice(None))] + [row(names[k], k) for k in np.flatnonzero(n_dt + n_gt).tolist()]
    ids = lambda anns, which: [getattr(a, "members", None) or (a.id,) for (_, a), w in zip(anns, which) if w]
    labels = {"extras": _by_class(ids(dt_anns, ~at), dt.cat[~at], names),
              "misses": _by_class(ids(reference, ~gt_found), gt.cat[~gt_found], names)}
    confusion, blind = _confusion(gt, dt, iou, names)
    ref_ids = [list(getattr(a, "members", None) or (a.id,)) for _, a in reference]
    # canonical order (by image, then label id): the table does not depend on the input's order
    d_order = sorted(range(len(dt_anns)), key=lambda k: (str(dt_anns[k][0]), str(dt_anns[k][1].id)))
    g_order = sorted(range(len(reference)), key=lambda k: (str(reference[k][0]), str(ref_ids[k][0])))
    g_at = np.full(len(reference) + 1, -1, np.int64)          # old reference index -> new; -1 stays -1
    g_at[g_order] = np.arange(len(g_order))
    pick = lambda seq, order: [seq[k] for k in order]
    outcomes = {"rater": {"id": [dt_anns[k][1].id for k in d_order], "image": [dt_anns[k][0] for k in d_order],
                          "class": pick([names[k] for k in dt.cat.tolist()], d_order),
                          "area": pick(dt.area.tolist(), d_order),
                          "match": g_at[np.where(at, dt_gt[0], -1)[d_order]].tolist() if d_order else [],
                          "blind": g_at[blind[d_order]].tolist() if d_order else []},
                "reference": {"ids": pick(ref_ids, g_order), "image": [reference[k][0] for k in g_order],
                              "class": pick([names[k] for k in gt.cat.tolist()], g_order),
                              "area": pick(gt.area.tolist(), g_order)}}
    return rows, confusion, labels, outcomes


def _by_class(ids: list[tuple], cats: np.ndarray, names: list[str]) -> dict:
    """``{class: sorted label ids}`` (a reference label made from several labels: all of them)."""
    out: dict = {}
    for group, k in zip(ids, cats.tolist()):
        out.setdefault(names[k], []).extend(group)
    return {c: sorted(v, key=str) for c, v in sorted(out.items())}


def _confusion(gt: Boxes, dt: Boxes, iou: float, names: list[str]) -> tuple[dict, np.ndarray]:
    """Class-blind matching at ``iou``: counts of (reference class, rater class), ``(none)`` last;
    and the reference label each rater label matched (-1: none)."""
    K = len(names)
    blind = lambda b: Boxes(b.xywh, b.img, np.zeros_like(b.cat))
    matched, _, _, dt_gt = BoxEval(blind(gt), blind(dt), np.zeros(len(dt.cat)), 1, floor=iou).match(
        thresholds=np.array([iou]), with_gt=True)
    m = np.zeros((K + 1, K + 1), np.int64)
    at = matched[0]
    np.add.at(m, (gt.cat[dt_gt[0, at]], dt.cat[at]), 1)
    found = np.zeros(len(gt.cat), bool)
    found[dt_gt[0, at]] = True
    np.add.at(m, (gt.cat[~found], K), 1)
    np.add.at(m, (K, dt.cat[~at]), 1)
    used = np.flatnonzero(m[:K].sum(1) + m[:, :K].sum(0))
    keep = np.r_[used, K]
    return ({"classes": [names[k] for k in used.tolist()] + [NONE], "matrix": m[np.ix_(keep, keep)].tolist()},
            np.where(at, dt_gt[0], -1))


def scorecard_steps(dataset: MultiRaterDataset, config: ScorecardConfig = ScorecardConfig()):
    """Each rater's scorecard as ``(fraction, message)`` steps; returns the :class:`ScorecardResult`."""
    if dataset.kind != "box":
        raise ValueError(f"scorecards score boxes (--task bbox), not {dataset.kind!r} labels")
    check_measurable(dataset)      # no image, or none with two raters: nobody to score against anybody
    expert = config.reference
    if expert is not None and expert not in dataset.raters:
        raise ParamError("reference", f"reference: {expert!r} is not a rater of the data; its raters are: "
                         f"{', '.join(dataset.raters) or 'none'}")
    if expert is not None and not any(expert in im.raters and len(im.raters) > 1 for im in dataset.images):
        raise ParamError("reference", f"reference: {expert!r} shares no image with another rater: nobody to score; "
                         "choose a reference assigned to images other raters labelled too")
    raters = [r for r in dataset.raters if r != expert]
    ids = sorted(dataset.categories, key=lambda c: (str(dataset.categories[c]), c))    # rows by class name
    names = [str(dataset.categories[c]) for c in ids]
    cat_at = {c: k for k, c in enumerate(ids)}
    img_at = {im.id: k for k, im in enumerate(dataset.images)}
    rows, confusion, labels, outcomes, scored = [], {}, {}, {}, set()
    for n, rater in enumerate(raters):
        yield n / max(len(raters), 1), f"scoring {rater}"
        reference, images = _reference_of(dataset, rater, expert)
        scored |= images
        mine, confusion[rater], labels[rater], outcomes[rater] = score_rater(dataset, rater, reference, images, config.iou, names,
                                                            cat_at, img_at)
        rows += mine
    label = expert if expert is not None else LEAVE_ONE_OUT
    for r in rows:
        r["reference"] = label
    yield 1.0, "scorecards done"
    return ScorecardResult(rows, confusion, label, config.iou, raters, len(scored), config.to_dict(), labels,
                           outcomes)


def compute_scorecards(dataset: MultiRaterDataset, config: ScorecardConfig = ScorecardConfig()) -> ScorecardResult:
    """Every rater's scorecard against the reference of ``config`` (see the module's doc)."""
    from ..progress import run_steps

    return run_steps(scorecard_steps(dataset, config))
