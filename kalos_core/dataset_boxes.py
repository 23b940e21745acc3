"""Every box of a data set as columns, and one rater's boxes in canonical order (image id, then
annotation id), without building a dict per box: what label convergence's COCOeval inputs and the
noise-aware evaluation both read (:mod:`kalos_core.convergence.cocoeval`,
:mod:`kalos_core.noise_aware`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .columns import AnnotationColumns
from .data import MultiRaterDataset, order_key


class BoxColumns(NamedTuple):
    """Every box of a data set: image index, rater name, class, xywh and annotation id."""

    img: np.ndarray
    rater: np.ndarray
    cat: np.ndarray
    boxes: np.ndarray
    ids: list


def box_columns(dataset: MultiRaterDataset) -> BoxColumns:
    """Every box, images in the data set's order and each image's boxes in its order (read straight
    from :class:`~kalos_core.columns.AnnotationColumns` where the reader made them)."""
    img, rater, cat, boxes, ids = [], [], [], [], []
    for i, im in enumerate(dataset.images):
        anns = im.annotations
        if isinstance(anns, AnnotationColumns):
            rater.append(np.asarray(anns.names, dtype=object)[anns.rater] if len(anns) else np.zeros(0, object))
            cat.append(np.asarray(anns.category, dtype=np.int64))
            boxes.append(np.asarray(anns.boxes, dtype=float).reshape(-1, 4))
            ids.extend(anns.ids)
        else:
            rater.append(np.array([a.rater for a in anns], dtype=object))
            cat.append(np.array([a.category for a in anns], dtype=np.int64))
            boxes.append(np.array([a.bbox or a.geometry for a in anns], dtype=float).reshape(-1, 4))
            ids.extend(a.id for a in anns)
        img.append(np.full(len(anns), i, dtype=np.int64))
    if not img:
        return BoxColumns(np.zeros(0, np.int64), np.zeros(0, object), np.zeros(0, np.int64), np.zeros((0, 4)), [])
    return BoxColumns(np.concatenate(img), np.concatenate(rater), np.concatenate(cat), np.concatenate(boxes), ids)


def id_order(image_ids: Sequence[Any], ids: Sequence[Any]) -> np.ndarray:
    """The stable order by (image id, id) as :func:`~kalos_core.data.order_key` sorts them (numpy's
    when every id is a plain int)."""
    if all(type(v) is int for v in image_ids) and all(type(v) is int for v in ids):
        try:
            return np.lexsort((np.array(ids, dtype=np.int64), np.array(image_ids, dtype=np.int64)))
        except OverflowError:
            pass
    keys = [(order_key(i), order_key(a)) for i, a in zip(image_ids, ids)]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def reference_boxes(dataset: MultiRaterDataset, reference: str, images: list, columns: BoxColumns) -> tuple:
    """``(xywh, image position in images, class, row in columns)`` of ``reference``'s boxes on
    ``images``, in canonical order (image id, then annotation id: what
    :func:`~kalos_core.convergence.cocoeval.rater_labels` lists)."""
    at = {im_id: n for n, im_id in enumerate(images)}
    where = np.array([at.get(im.id, -1) for im in dataset.images], dtype=np.int64)
    sel = np.flatnonzero((columns.rater == reference) & (where[columns.img] >= 0))
    order = sel[id_order(where[columns.img[sel]].tolist(), [columns.ids[k] for k in sel])]
    return columns.boxes[order], where[columns.img[order]], columns.cat[order], order
