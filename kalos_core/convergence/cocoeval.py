"""One COCOeval run per direction (boxes: :mod:`kalos_core.coco_eval`, bit-identical), and its per-image
results as flat arrays.

Conventions (docs/convergence.md):

* every rater label is a detection with score 0.99 (a model's predictions keep their scores);
* ``maxDets`` is one above the largest count per (image, category) on the detection side, so
  COCOeval truncates nothing; one ``areaRng`` ("all");
* detections reach ``loadRes`` in the canonical order (image id, annotation id) and ground
  truth gets ids 1..n in the same order: with tied scores the order decides the ranking, so
  the number is reproducible;
* AP is read from the accumulated precision array, never from ``summarize()``.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from ..coco_eval import ALL_AREAS, IOU_THRESHOLDS, REC_THRESHOLDS, Boxes, BoxEval
from ..data import MultiRaterDataset, order_key
from ..dataset_boxes import box_columns, reference_boxes

#: the score every rater label gets when it plays the detections (the paper's 0.99)
RATER_SCORE = 0.99


def label_columns(dataset: MultiRaterDataset, task: str):
    """Every box of the data set as columns (:func:`~kalos_core.dataset_boxes.box_columns`) when
    its boxes are evaluated as boxes, for :func:`side_labels`; None otherwise."""
    if task != "bbox" or dataset.kind != "box":
        return None
    return box_columns(dataset)


def side_labels(dataset: MultiRaterDataset, rater: str, image_ids: Sequence[Any], columns):
    """A rater's labels as detections or ground truth: :func:`rater_boxes` given the data set's
    :func:`label_columns`, else :func:`rater_labels`' dicts."""
    if columns is None:
        return rater_labels(dataset, rater, image_ids)
    return rater_boxes(dataset, rater, image_ids, columns)


def rater_labels(dataset: MultiRaterDataset, rater: str, image_ids: Sequence[Any]) -> list[dict]:
    """A rater's annotations on ``image_ids`` as COCO dicts in canonical (image id, annotation id)
    order; ``score`` is :data:`RATER_SCORE`."""
    wanted = set(image_ids)
    out = []
    for im in sorted((im for im in dataset.images if im.id in wanted), key=lambda im: order_key(im.id)):
        names = getattr(im.annotations, "names", None)
        if names is not None and dataset.kind == "box":   # column-held boxes: no Annotation objects
            out.extend(_column_labels(im, rater))
            continue
        for a in sorted((a for a in im.annotations if a.rater == rater), key=lambda a: order_key(a.id)):
            d = {"image_id": im.id, "category_id": a.category, "score": RATER_SCORE, "source_id": a.id}
            if dataset.kind == "box":
                d["bbox"] = [float(v) for v in a.geometry]
            else:
                d["segmentation"] = a.geometry
            out.append(d)
    return out


def _column_labels(im, rater: str) -> list[dict]:
    """:func:`rater_labels` of one image whose boxes are held as columns."""
    cols = im.annotations
    if rater not in cols.names:
        return []
    rows = np.flatnonzero(cols.rater == cols.names.index(rater)).tolist()
    rows.sort(key=lambda k: order_key(cols.ids[k]))
    cats, boxes = cols.category[rows].tolist(), cols.boxes[rows].tolist()
    return [{"image_id": im.id, "category_id": c, "score": RATER_SCORE, "source_id": cols.ids[k], "bbox": b}
            for k, c, b in zip(rows, cats, boxes)]


@dataclass
class BoxLabels:
    """A rater's boxes as columns, in :func:`rater_labels`' order (what its dicts hold, without making
    them): image ``images[img[k]]``, class id, xywh and own annotation id of each; score :data:`RATER_SCORE`."""

    images: list
    img: np.ndarray
    category: np.ndarray
    xywh: np.ndarray
    source: list

    def __len__(self) -> int:
        return len(self.source)

    def on_images(self, image_ids) -> BoxLabels:
        keep = set(image_ids)
        sel = np.flatnonzero(np.array([i in keep for i in self.images], dtype=bool)[self.img])
        return BoxLabels(self.images, self.img[sel], self.category[sel], self.xywh[sel], [self.source[k] for k in sel])

    def as_dicts(self) -> list[dict]:
        return [{"image_id": self.images[i], "category_id": c, "score": RATER_SCORE, "source_id": a, "bbox": b}
                for i, c, a, b in zip(self.img.tolist(), self.category.tolist(), self.source, self.xywh.tolist())]


def rater_boxes(dataset: MultiRaterDataset, rater: str, image_ids: Sequence[Any], columns) -> BoxLabels:
    """:func:`rater_labels` of a box data set as :class:`BoxLabels` (``columns``: its :func:`label_columns`)."""
    images = sorted(set(image_ids), key=order_key)
    xywh, img, cat, rows = reference_boxes(dataset, rater, images, columns)
    return BoxLabels(images, img, cat, xywh, [columns.ids[k] for k in rows])


def _as_dicts(labels) -> list[dict]:
    return labels.as_dicts() if isinstance(labels, BoxLabels) else labels


def _category_ids(labels) -> set:
    return set(labels.category.tolist()) if isinstance(labels, BoxLabels) else {d["category_id"] for d in labels}


def _coco_gt(dataset: MultiRaterDataset, image_ids: Sequence[Any], labels: list[dict], task: str) -> COCO:
    from pycocotools import mask as mask_utils

    images = [{"id": im.id, "width": im.width, "height": im.height} for im in dataset.images if im.id in set(image_ids)]
    anns = []
    for n, d in enumerate(labels, start=1):   # ids 1..n: a match id of 0 would read as "unmatched"
        a = dict(d, id=n, iscrowd=0)
        a.pop("score", None)
        if task == "bbox":
            a["area"] = float(a["bbox"][2] * a["bbox"][3])
        anns.append(a)
    gt = COCO()
    gt.dataset = {"images": images, "annotations": anns,
                  "categories": [{"id": c} for c in sorted(dataset.categories or {d["category_id"] for d in labels})]}
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
    if task == "segm":
        for a in gt.anns.values():
            a["area"] = float(mask_utils.area(gt.annToRLE(a)))
    return gt


def _as_rle(segm, image: dict) -> dict:
    """A polygon list (or uncompressed RLE) as compressed RLE: ``loadRes`` reads RLE only."""
    from pycocotools import mask as mask_utils

    if isinstance(segm, dict) and isinstance(segm.get("counts"), (str, bytes)):
        return segm
    h, w = int(image["height"]), int(image["width"])
    rles = mask_utils.frPyObjects(segm, h, w)
    return mask_utils.merge(rles) if isinstance(rles, list) else rles


@dataclass
class DirectionTable:
    """Per-image COCOeval results of one direction, flattened for fast re-accumulation.

    Detections are in accumulation order (category, then score descending, then image order,
    then in-image order), exactly the order ``COCOeval.accumulate`` gives them.

    Attributes
    ----------
    cat_ids : (K,) category ids evaluated.
    image_ids : (I,) image ids evaluated.
    det_cat, det_img : (N,) category index and image index of each detection.
    det_source : (N,) the detection's own annotation id (``source_id``).
    matched, ignored : (T, N) bool, per IoU threshold.
    npig : (K, I) int, non-ignored ground truth per category and image.
    precision : (T, R, K) the accumulated precision array of the full set (-1 = no ground truth).
    """

    cat_ids: np.ndarray
    image_ids: list
    det_cat: np.ndarray
    det_img: np.ndarray
    det_source: list
    matched: np.ndarray
    ignored: np.ndarray
    npig: np.ndarray
    precision: np.ndarray


def evaluate_direction(dataset: MultiRaterDataset, gt_labels: list[dict], dt_labels: list[dict],
                       image_ids: Sequence[Any], task: str, pycocotools: bool = False) -> DirectionTable:
    """Run COCOeval once (``gt_labels`` as ground truth, ``dt_labels`` as detections); boxes take
    :mod:`kalos_core.coco_eval`'s bit-identical vectorised path unless ``pycocotools``."""
    image_ids = sorted(set(image_ids), key=order_key)
    T = len(IOU_THRESHOLDS)
    cats = sorted(_category_ids(gt_labels) | _category_ids(dt_labels))
    if task == "bbox" and not pycocotools and cats and len(gt_labels) and len(dt_labels):
        return _box_table(gt_labels, dt_labels, image_ids, cats)
    gt_labels, dt_labels = _as_dicts(gt_labels), _as_dicts(dt_labels)
    if not cats or not gt_labels or not dt_labels:   # loadRes([]) fails: build the table directly
        return _one_sided_table(gt_labels, dt_labels, image_ids, cats)
    gt = _coco_gt(dataset, image_ids, gt_labels, task)
    key = "bbox" if task == "bbox" else "segmentation"
    results = [{"image_id": d["image_id"], "category_id": d["category_id"], "score": d["score"],
                key: d[key] if task == "bbox" else _as_rle(d[key], gt.imgs[d["image_id"]])} for d in dt_labels]
    counts: dict = {}
    for d in dt_labels:
        counts[d["image_id"], d["category_id"]] = counts.get((d["image_id"], d["category_id"]), 0) + 1
    with contextlib.redirect_stdout(io.StringIO()):
        dt = gt.loadRes(results)
        ev = COCOeval(gt, dt, task)
        ev.params.imgIds = image_ids
        ev.params.catIds = cats
        ev.params.iouThrs = IOU_THRESHOLDS.copy()
        ev.params.recThrs = REC_THRESHOLDS.copy()
        ev.params.areaRng = [list(ALL_AREAS)]
        ev.params.areaRngLbl = ["all"]
        ev.params.maxDets = [max(counts.values()) + 1]
        ev.evaluate()
        ev.accumulate()
    img_index = {i: n for n, i in enumerate(image_ids)}
    cat_index = {c: n for n, c in enumerate(cats)}
    cat_list, img_list, score_list, m_list, ig_list, src = [], [], [], [], [], []
    npig = np.zeros((len(cats), len(image_ids)), dtype=np.int64)
    source_of = {n: d["source_id"] for n, d in enumerate(dt_labels, start=1)}
    for e in ev.evalImgs:
        if e is None:
            continue
        k, i = cat_index[e["category_id"]], img_index[e["image_id"]]
        npig[k, i] = int(np.count_nonzero(np.asarray(e["gtIgnore"]) == 0))
        D = len(e["dtIds"])
        if D:
            cat_list.append(np.full(D, k))
            img_list.append(np.full(D, i))
            score_list.append(np.asarray(e["dtScores"], dtype=float))
            m_list.append(np.asarray(e["dtMatches"]) > 0)
            ig_list.append(np.asarray(e["dtIgnore"], dtype=bool))
            src.extend(source_of[j] for j in e["dtIds"])
    if cat_list:
        det_cat, det_img = np.concatenate(cat_list), np.concatenate(img_list)
        order = np.lexsort((-np.concatenate(score_list), det_cat))   # stable: image order kept within ties
        matched, ignored = np.concatenate(m_list, axis=1)[:, order], np.concatenate(ig_list, axis=1)[:, order]
        det_cat, det_img, src = det_cat[order], det_img[order], [src[j] for j in order]
    else:
        det_cat = det_img = np.zeros(0, dtype=np.int64)
        matched = ignored = np.zeros((T, 0), dtype=bool)
    precision = ev.eval["precision"][:, :, :, 0, 0]
    return DirectionTable(np.asarray(cats), list(image_ids), det_cat, det_img, src, matched, ignored, npig, precision)


def _box_table(gt_labels, dt_labels, image_ids, cats) -> DirectionTable:
    """Boxes: COCOeval's per-image matching and accumulation, vectorised (:class:`kalos_core.coco_eval.BoxEval`);
    image index = position in ``image_ids``."""
    img_at, cat_at = {i: n for n, i in enumerate(image_ids)}, {c: n for n, c in enumerate(cats)}
    gt, dt = _boxes(gt_labels, img_at, cat_at), _boxes(dt_labels, img_at, cat_at)
    if isinstance(dt_labels, BoxLabels):
        scores, source = np.full(len(dt_labels), RATER_SCORE), dt_labels.source
    else:
        scores, source = np.array([d["score"] for d in dt_labels], float), [d["source_id"] for d in dt_labels]
    ev = BoxEval(gt, dt, scores, len(cats))
    matched, ignored, gt_ig = ev.match()
    I, K, order = len(image_ids), len(cats), ev.acc_order
    npig = np.bincount((gt.img * K + gt.cat)[~gt_ig], minlength=I * K).reshape(I, K).T
    return DirectionTable(np.asarray(cats), list(image_ids), ev.dt.cat[order], ev.dt.img[order],
                          [source[j] for j in order.tolist()], matched[:, order], ignored[:, order], npig,
                          ev.accumulate(matched, ignored, gt_ig))


def _boxes(labels, img_at: dict, cat_at: dict) -> Boxes:
    """A side's :class:`Boxes`: indices ``img_at[image id]``, ``cat_at[class id]``."""
    if not isinstance(labels, BoxLabels):
        return Boxes.from_dicts(labels, img_at, cat_at)
    classes, which = np.unique(labels.category, return_inverse=True)
    return Boxes(np.asarray(labels.xywh, dtype=float).reshape(-1, 4),
                 np.array([img_at.get(i, -1) for i in labels.images], dtype=np.int64)[labels.img],
                 np.array([cat_at[c] for c in classes.tolist()], dtype=np.int64)[which.reshape(-1)])


def _one_sided_table(gt_labels, dt_labels, image_ids, cats) -> DirectionTable:
    """A direction where one side is empty: every detection is a false positive, every ground
    truth is missed (AP 0 where there is ground truth, -1 elsewhere)."""
    T, R = len(IOU_THRESHOLDS), len(REC_THRESHOLDS)
    img_index = {i: n for n, i in enumerate(image_ids)}
    cat_index = {c: n for n, c in enumerate(cats)}
    npig = np.zeros((len(cats), len(image_ids)), dtype=np.int64)
    for d in gt_labels:
        npig[cat_index[d["category_id"]], img_index[d["image_id"]]] += 1
    det_cat = np.array([cat_index[d["category_id"]] for d in dt_labels], dtype=np.int64)
    det_img = np.array([img_index[d["image_id"]] for d in dt_labels], dtype=np.int64)
    order = np.lexsort((-np.array([d["score"] for d in dt_labels], dtype=float), det_cat))
    precision = -np.ones((T, R, len(cats)))
    precision[:, :, npig.sum(axis=1) > 0] = 0.0
    n = len(dt_labels)
    return DirectionTable(np.asarray(cats), list(image_ids), det_cat[order], det_img[order],
                          [dt_labels[j]["source_id"] for j in order], np.zeros((T, n), bool), np.zeros((T, n), bool),
                          npig, precision)
