"""Consensus labels from the agreement run's units, and a review queue for the rest.

One label per unit that enough raters support:

* class: majority vote of the unit's labels; a tie is flagged (``tie``, ``tied_categories``,
  ``category = None``), never guessed;
* support: how many raters voted for that class (the *agreeing* raters); the unit is kept
  when support is more than ``support`` x the image's assigned raters (default: a
  majority; all raters always suffice), otherwise it goes to the review queue;
* confidence: support / assigned raters (two of three raters on class A -> 2/3);
* box: per-coordinate median of the agreeing raters' boxes (``x1, y1, x2, y2``), or the
  score-weighted mean (``box_fusion="weighted"``, scores of model predictions, 1 otherwise);
* polygon / mask: pixel majority of the agreeing raters' rasterised shapes (a pixel is kept
  when at least ``pixel_share`` of them cover it), as COCO RLE.

On a tie the geometry is fused over the tied classes' labels.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping

import numpy as np

from ..agreement.pipeline import AgreementConfig, agreement_steps
from ..data import Annotation, ImageRecord, MultiRaterDataset
from ..gcpause import paused_gc
from ..geometry.masks import mask_utils, to_rle
from ..jsonsafe import json_safe
from ..progress import rescale, run_steps
from ..matching.params import MATCHING_PARAMS, MatchingConfig
from ..params import Config, param, same_param
from .units import median_boxes, unit_table

BOX_FUSIONS = ("median", "weighted")


@dataclass(frozen=True)
class ConsensusConfig(Config):
    """Settings of a consensus run: the matching that makes the units (the agreement run's own
    parameters, :mod:`kalos_core.matching.params`) and how a unit's labels are fused."""

    threshold: float = same_param(MatchingConfig, "threshold")
    distance: str | None = same_param(MatchingConfig, "distance")
    solver: str = same_param(MatchingConfig, "solver")
    cost: str = same_param(MatchingConfig, "cost")
    support: float = param(0.5, "fraction", "a unit needs more than this share of the image's assigned raters "
                           "(0.5: a majority)", label="Support level")
    box_fusion: str = param("median", "choice", "boxes: the agreeing raters' per-coordinate median, or their "
                            "score-weighted mean", choices=BOX_FUSIONS)
    pixel_share: float = param(0.5, "fraction", "polygons / masks: share of the agreeing raters that must cover a "
                               "pixel", lo_open=True, label="Pixel share (polygons / masks)")


@dataclass
class ConsensusLabel:
    """One fused label. ``geometry``: ``(x, y, w, h)`` for boxes, a COCO RLE for polygons/masks."""

    unit: str
    image_id: Any
    category: int | None
    geometry: Any
    bbox: tuple
    confidence: float
    support: int
    n_assigned: int
    raters: tuple                 #: the agreeing raters
    members: tuple                #: annotation ids of the whole unit
    tie: bool = False
    tied_categories: tuple = ()


@dataclass
class ReviewItem:
    """A unit that did not reach the support level."""

    unit: str
    image_id: Any
    support: int
    n_assigned: int
    raters: tuple
    members: tuple
    votes: dict                   #: category -> number of raters
    tie: bool


@dataclass
class ConsensusResult:
    config: dict
    kind: str
    labels: list[ConsensusLabel] = field(default_factory=list)
    review: list[ReviewItem] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"config": json_safe(self.config), "kind": self.kind, "labels": _plain(self.labels),
                "review": _plain(self.review)}

    def to_coco(self, dataset: MultiRaterDataset) -> dict:
        """Plain COCO: each annotation with ``score`` = confidence, ``unit``, ``support``, ``raters``,
        ``tie``; the review queue under ``review``."""
        with paused_gc():   # one dict per label, no cycles among them
            anns = self._coco_annotations()
        images = [{"id": im.id, "width": im.width, "height": im.height, "file_name": im.file_name}
                  for im in dataset.images]
        cats = [{"id": c, "name": n} for c, n in sorted(dataset.categories.items())]
        return {"images": json_safe(images), "annotations": anns, "categories": json_safe(cats),
                "review": _plain(self.review)}

    def _coco_annotations(self) -> list[dict]:
        labels, box = self.labels, self.kind == "box"
        names = ("image_id", "category", "bbox", "confidence", "unit", "support", "raters", "tie",
                 "tied_categories") + (() if box else ("geometry",))
        with paused_gc():
            cols = [_safe_column([getattr(x, name) for x in labels]) for name in names]
        anns = []
        for k, (lab, row) in enumerate(zip(labels, zip(*cols)), start=1):
            a = {"id": k, "image_id": row[0], "category_id": row[1], "bbox": row[2], "score": row[3],
                 "unit": row[4], "support": row[5], "raters": row[6], "tie": row[7], "iscrowd": 0}
            if lab.tie:
                a["tied_categories"] = row[8]
            if box:
                a["area"] = _safe(lab.bbox[2] * lab.bbox[3])
            else:
                a["segmentation"] = row[9]
                a["area"] = _safe(float(mask_utils.area(_rle_bytes(lab.geometry))))
            anns.append(a)
        return anns


_AS_IS = (str, int, bool, type(None))
_PLAIN = set(_AS_IS)


def _plain(items: list) -> list[dict]:
    """``json_safe(asdict(x))`` of each item, the same values without ``asdict``'s deep copy: field
    by field, a column of plain values (text, ints, finite floats, or tuples of them) converted at
    once, any other value by :func:`_safe` (tests/core/test_consensus_fast.py holds them equal)."""
    if not items:
        return []
    names = [f.name for f in fields(items[0])]
    with paused_gc():   # hundreds of thousands of new containers, no cycles among them
        cols = [_safe_column([getattr(x, name) for x in items]) for name in names]
        return [dict(zip(names, row)) for row in zip(*cols)]


def _safe_column(col: list) -> list:
    """``[_safe(v) for v in col]``."""
    if set(map(type, col)) == {tuple}:
        if _all_plain([e for v in col for e in v]):
            return [list(v) for v in col]
    elif _all_plain(col):
        return col
    return [_safe(v) for v in col]


def _all_plain(values: list) -> bool:
    """Whether every value is its own JSON form: text, an int, a bool, None or a finite float."""
    kinds = set(map(type, values))
    if float in kinds:
        kinds.discard(float)
        if not all(map(math.isfinite, [v for v in values if type(v) is float])):
            return False
    return kinds <= _PLAIN


def _safe(v: Any) -> Any:
    t = type(v)
    if t in _AS_IS:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if t is tuple or t is list:
        return [_safe(e) for e in v]
    return json_safe(v)


def _rle_bytes(rle: dict) -> dict:
    c = rle["counts"]
    return {"size": list(rle["size"]), "counts": c.encode("ascii") if isinstance(c, str) else c}


def _weighted_box(xywh: np.ndarray, w: np.ndarray) -> tuple:
    """Score-weighted mean of ``(x, y, w, h)`` rows as ``x1, y1, x2, y2`` (equal weights when the
    scores sum to 0), back as ``(x, y, w, h)``."""
    xyxy = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
    w = w if w.sum() > 0 else np.ones_like(w)
    f = (xyxy * w[:, None]).sum(0) / w.sum()
    return tuple(float(v) for v in (f[0], f[1], f[2] - f[0], f[3] - f[1]))


def _fuse_masks(anns: list[Annotation], image: ImageRecord, share: float) -> tuple[dict, tuple]:
    h, w = int(round(image.height)), int(round(image.width))
    count = np.zeros((h, w), np.int32)
    for a in anns:
        count += mask_utils.decode(to_rle(a.geometry, h, w)).astype(np.int32)
    keep = count >= share * len(anns) - 1e-9
    rle = mask_utils.encode(np.asfortranarray(keep.astype(np.uint8)))
    bbox = tuple(float(v) for v in mask_utils.toBbox(rle))
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}, bbox


def needed_support(n_assigned: int, share: float) -> int:
    """Raters a unit needs: more than ``share * n_assigned``, at most all of them."""
    return min(n_assigned, int(np.floor(share * n_assigned + 1e-9)) + 1)


def build_consensus(dataset: MultiRaterDataset, unit_of: Mapping[Any, str],
                    config: ConsensusConfig = ConsensusConfig()) -> ConsensusResult:
    """Fuse each unit of an agreement run into one label, or queue it for review.

    Parameters
    ----------
    dataset : the data set the agreement run was computed on (boxes, polygons or masks).
    unit_of : annotation id -> unit id, as :attr:`AgreementResult.unit_of`.
    config : support level and fusion options.
    """
    if dataset.kind not in ("box", "polygon", "rle"):
        raise ValueError(f"consensus supports box, polygon and rle geometry, not {dataset.kind!r}")
    with paused_gc():   # one label or review item per unit, no cycles among them
        return _build(dataset, unit_of, config)


def _build(dataset: MultiRaterDataset, unit_of: Mapping[Any, str], config: ConsensusConfig) -> ConsensusResult:
    out = ConsensusResult(config.to_dict(), dataset.kind)
    t = unit_table(dataset, unit_of)
    images = dataset.images
    n_of = [len(im.raters) for im in images]
    need_of = [needed_support(n, config.support) for n in n_of]
    start = t.start.tolist()
    ends = start[1:] + [len(t.ids)]
    agreeing = np.flatnonzero(t.agreeing)
    first = np.searchsorted(agreeing, t.start).tolist() + [len(agreeing)]     # each unit's first agreeing
    agree_raters = [t.rater_names[r] for r in t.rater[agreeing].tolist()]
    agreeing = agreeing.tolist()
    median = median_boxes(t).tolist() if dataset.kind == "box" and config.box_fusion == "median" else None
    for u, (s, e, img, top, winners) in enumerate(zip(start, ends, t.unit_image.tolist(), t.top.tolist(),
                                                      t.winners)):
        n, tie = n_of[img], len(winners) > 1
        raters, ids = tuple(agree_raters[first[u]:first[u + 1]]), tuple(t.ids[s:e])
        agree = agreeing[first[u]:first[u + 1]]
        if top < need_of[img]:
            out.review.append(ReviewItem(t.names[u], images[img].id, top, n, raters, ids, t.votes[u], tie))
            continue
        if median is not None:
            f = median[u]
            geometry = bbox = (f[0], f[1], f[2] - f[0], f[3] - f[1])
        elif dataset.kind == "box":
            geometry = bbox = _weighted_box(t.xywh[agree], t.weight[agree])
        else:
            geometry, bbox = _fuse_masks([t.objects[k] for k in agree], images[img], config.pixel_share)
        out.labels.append(ConsensusLabel(t.names[u], images[img].id, None if tie else winners[0], geometry, bbox,
                                         top / n, top, n, raters, ids, tie, tuple(winners) if tie else ()))
    return out


def compute_consensus(dataset: MultiRaterDataset, agreement: AgreementConfig | None = None,
                      config: ConsensusConfig = ConsensusConfig()) -> ConsensusResult:
    """Run agreement (no diagnostics) to get the units, then :func:`build_consensus`.

    Parameters
    ----------
    dataset : the raters' labels (boxes, polygons or masks).
    agreement : the matching's settings; None: the matching parameters of ``config``. When
        given, they replace those of ``config`` (the result's ``config`` records them).
    config : matching, support level and fusion options.
    """
    return run_steps(consensus_steps(dataset, config, agreement))


def consensus_steps(dataset: MultiRaterDataset, config: ConsensusConfig = ConsensusConfig(),
                    agreement: AgreementConfig | None = None, workers: int = 1, executor: str | None = None):
    """:func:`compute_consensus` as a generator of ``(fraction, message)`` steps; returns the result.
    The matching's chunks of images run on ``executor`` with ``workers`` (:mod:`kalos_core.agreement.executors`;
    the result does not depend on them)."""
    if agreement is None:
        agreement = AgreementConfig(**{name: getattr(config, name) for name in MATCHING_PARAMS})
    else:
        config = replace(config, **{name: getattr(agreement, name) for name in MATCHING_PARAMS})
    quick = AgreementConfig(**{**asdict(agreement), "vitality": False, "class_difficulty": False,
                               "collaboration": False, "intra_rater": False, "bootstrap": 0,
                               "lsa_thresholds": ()})
    units = yield from rescale(agreement_steps(dataset, quick, workers, executor=executor), 0.0, 0.8)
    yield 0.8, "fusing the units"
    result = build_consensus(dataset, units.unit_of, config)
    yield 1.0, "consensus done"
    return result
