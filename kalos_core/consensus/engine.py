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

from dataclasses import asdict, dataclass, replace
from functools import cache, partial
from typing import Any, Mapping

import numpy as np

from ..agreement.pipeline import AgreementConfig, agreement_steps
from ..data import Annotation, ImageRecord, MultiRaterDataset
from ..gcpause import paused_gc
from ..geometry.masks import mask_utils, to_rle
from ..io.jsonrecords import dumps_with, records_parts
from ..jsonsafe import json_safe
from ..progress import rescale, run_steps
from ..matching.params import MATCHING_PARAMS, MatchingConfig
from ..params import Config, param, same_param
from .labels import ConsensusLabel, LabelColumns, coco_columns, plain, plain_rows, records
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


class ConsensusResult:
    """A consensus run: ``labels`` (:class:`ConsensusLabel`, made from the run's columns when first
    asked) and the ``review`` queue (:class:`ReviewItem`)."""

    def __init__(self, config: dict, kind: str, labels: list[ConsensusLabel] | None = None,
                 review: list[ReviewItem] | None = None, columns: LabelColumns | None = None,
                 boxes: np.ndarray | None = None, later: dict | None = None) -> None:
        self.config, self.kind = config, kind
        self.review = [] if review is None else review
        self._columns, self._boxes = columns, boxes     # boxes: the columns' bbox as one array
        self._later = {} if later is None else later    # field -> () -> its column, made when first asked
        self._labels = labels if labels is not None or columns is not None else []

    @property
    def labels(self) -> list[ConsensusLabel]:
        if self._labels is None:
            self._labels = self.label_columns().objects()
        return self._labels

    @labels.setter
    def labels(self, labels: list[ConsensusLabel]) -> None:
        self._labels = labels

    def label_columns(self, fields: tuple | None = None) -> LabelColumns:
        """The labels as columns: the run's own while ``labels`` was never asked for (then the
        objects', which a caller may have changed). ``fields``: only these are needed (a column
        of the run's own not yet made may be left None)."""
        if self._labels is not None:
            return LabelColumns.of(self._labels)
        todo = [f for f in self._later if fields is None or f in fields]
        if todo:
            self._columns = self._columns._replace(**{f: self._later.pop(f)() for f in todo})
        return self._columns

    def __getstate__(self) -> dict:
        """Pickled with every column made: the makers of those not yet asked for are closures."""
        if self._labels is None:
            self.label_columns()
        return {**self.__dict__, "_later": {}}

    def __repr__(self) -> str:
        return f"ConsensusResult({self.kind}, {len(self.label_columns(('unit',)).unit)} labels, " \
               f"{len(self.review)} for review)"

    def to_dict(self) -> dict:
        return {"config": json_safe(self.config), "kind": self.kind,
                "labels": plain_rows(LabelColumns._fields, self.label_columns()), "review": plain(self.review)}

    def to_coco(self, dataset: MultiRaterDataset) -> dict:
        """Plain COCO: each annotation with ``score`` = confidence, ``unit``, ``support``, ``raters``,
        ``tie``; the review queue under ``review``."""
        return {**self._coco_head(dataset), "annotations": records(self._coco_columns())}

    def coco_text(self, dataset: MultiRaterDataset) -> str:
        """``json.dumps(self.to_coco(dataset), indent=1)``, written from the columns."""
        return dumps_with(self._coco_head(dataset), {"annotations": records_parts(self._coco_columns(text=True), 1)})

    def _coco_columns(self, text: bool = False) -> list[tuple[str, list]]:
        """:func:`coco_columns` of the labels; the run's own finite boxes as their array."""
        boxes = self._boxes if self._labels is None and self.kind == "box" else None
        if boxes is not None and not np.isfinite(boxes).all():
            boxes = None
        fields = set(LabelColumns._fields) - {"members"} - ({"bbox", "geometry"} if boxes is not None else set())
        return coco_columns(self.label_columns(tuple(fields)), self.kind == "box", boxes, text)

    def _coco_head(self, dataset: MultiRaterDataset) -> dict:
        """Every key of the COCO file, ``annotations`` (left empty here) in its place."""
        images = dataset.images
        columns = [[im.id for im in images], [im.width for im in images], [im.height for im in images],
                   [im.file_name for im in images]]
        images = plain_rows(("id", "width", "height", "file_name"), columns)
        cats = [{"id": c, "name": n} for c, n in sorted(dataset.categories.items())]
        return {"images": images, "annotations": [], "categories": json_safe(cats), "review": plain(self.review)}


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
    t = unit_table(dataset, unit_of)
    images, ids = dataset.images, t.ids
    image_ids = [im.id for im in images]
    n_of = np.array([len(im.raters) for im in images], np.int64)
    need_of = np.array([needed_support(n, config.support) for n in n_of.tolist()], np.int64)
    kept = t.top >= need_of[t.unit_image]
    agreeing = np.flatnonzero(t.agreeing)
    first = np.append(np.searchsorted(agreeing, t.start), len(agreeing))     # each unit's first agreeing
    ends = np.append(t.start[1:], len(ids))
    raters_of = _agreeing_raters(t, agreeing, first)

    def units(which: np.ndarray) -> tuple:
        """Of the units ``which``: names, image indices, support, assigned raters, agreeing raters."""
        img = t.unit_image[which].tolist()
        return [t.names[k] for k in which.tolist()], img, t.top[which].tolist(), n_of[t.unit_image[which]].tolist(), \
            raters_of(which)

    def members(which: np.ndarray) -> list[tuple]:
        return [tuple(ids[s:e]) for s, e in zip(t.start[which].tolist(), ends[which].tolist())]

    def spans(which: np.ndarray) -> list[tuple]:
        return list(zip(first[which].tolist(), first[which + 1].tolist()))

    queued = np.flatnonzero(~kept)
    review = [ReviewItem(name, image_ids[img], top, n, raters, m, t.votes(u), tie)
              for u, tie, name, img, top, n, raters, m in zip(queued.tolist(), (t.n_winners[queued] > 1).tolist(),
                                                              *units(queued), members(queued))]
    which = np.flatnonzero(kept)
    names, img, support, n, raters = units(which)
    tie = (t.n_winners[which] > 1).tolist()
    category = [None if x else c for c, x in zip(t.first_winners(which), tie)]
    boxes, later = None, {"members": partial(members, which)}    # columns made when first asked
    if dataset.kind == "box" and config.box_fusion == "median":
        f = median_boxes(t)[which]
        boxes = np.stack([f[:, 0], f[:, 1], f[:, 2] - f[:, 0], f[:, 3] - f[:, 1]], 1)
        later["geometry"] = later["bbox"] = cache(lambda: list(map(tuple, boxes.tolist())))   # one list, both fields
        geometry = bbox = None
    elif dataset.kind == "box":
        geometry = bbox = [_weighted_box(t.xywh[agreeing[a:b]], t.weight[agreeing[a:b]]) for a, b in spans(which)]
    else:
        fused = [_fuse_masks([t.objects[k] for k in agreeing[a:b].tolist()], images[i], config.pixel_share)
                 for (a, b), i in zip(spans(which), img)]
        geometry, bbox = [g for g, _ in fused], [b for _, b in fused]
    columns = LabelColumns(names, [image_ids[i] for i in img], category, geometry, bbox,
                           [s / k for s, k in zip(support, n)], support, n, raters, None, tie,
                           [tuple(t.winners(u)) if x else () for u, x in zip(which.tolist(), tie)] if any(tie)
                           else [()] * len(tie))
    return ConsensusResult(config.to_dict(), dataset.kind, review=review, columns=columns, boxes=boxes, later=later)


def _agreeing_raters(t, agreeing: np.ndarray, first: np.ndarray):
    """``raters_of(units)``: each unit's agreeing raters (a tuple, by name). Where no rater is twice
    in a unit and there are at most 62 raters, a unit's raters are a bit mask, and the units of one
    mask share its tuple; else slices of the names."""
    codes = t.rater[agreeing]
    unit = np.repeat(np.arange(len(first) - 1), np.diff(first))
    if len(t.rater_names) <= 62 and len(codes) and \
            not ((unit[1:] == unit[:-1]) & (codes[1:] == codes[:-1])).any():
        masks = np.bitwise_or.reduceat(np.left_shift(1, codes.astype(np.int64)), first[:-1])   # units >= 1

        def raters_of(which: np.ndarray) -> list[tuple]:
            distinct, inverse = np.unique(masks[which], return_inverse=True)
            tuples = [tuple(name for k, name in enumerate(t.rater_names) if m >> k & 1) for m in distinct.tolist()]
            return [tuples[k] for k in inverse.reshape(-1).tolist()]
        return raters_of
    names = [t.rater_names[r] for r in codes.tolist()]
    return lambda which: [tuple(names[a:b]) for a, b in zip(first[which].tolist(), first[which + 1].tolist())]


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
    The matching's chunks of images run on ``executor`` with ``workers`` (:mod:`kalos_core.executors`;
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
