"""Seeded synthetic *reference* sets for tests and the validation script.

``lvis_like_reference`` draws scenes loosely shaped like LVIS v1 val (about 12
objects per image, log-uniform relative areas from 1e-4 to 0.3 so that many are
small, a long-tailed class distribution). It is a stand-in for real reference
annotations, not a claim about LVIS beyond those coarse facts.
"""

from __future__ import annotations

import math

import numpy as np

from ..data import KIND_TASKS
from .channels import RefObject
from .generator import RefImage, Reference

N_JOINTS = 5  # head, two hands, two feet of a toy skeleton


def _objects(rng: np.random.Generator, n: int, n_classes: int, kind: str, width: float, height: float,
             start_id: int) -> list[RefObject]:
    area = np.exp(rng.uniform(math.log(1e-4), math.log(0.3), n))
    aspect = np.exp(rng.normal(0, 0.4, n))
    wh = np.clip(np.stack([np.sqrt(area * aspect), np.sqrt(area / aspect)], 1), 0.005, 0.95)
    lo = rng.uniform(0, 1, (n, 2)) * (1 - wh)
    zipf = 1.0 / np.arange(1, n_classes + 1)
    cats = rng.choice(n_classes, size=n, p=zipf / zipf.sum()) + 1
    out = []
    for k in range(n):
        box = np.round(np.concatenate([lo[k], lo[k] + wh[k]]) * [width, height, width, height], 2)
        box[2:] = np.maximum(box[2:], box[:2] + 1.0)
        bbox = (float(box[0]), float(box[1]), float(box[2] - box[0]), float(box[3] - box[1]))
        rel = box / [width, height, width, height]
        shape, geometry = None, bbox
        if kind == "polygon":
            t = np.linspace(0, 2 * math.pi, 16, endpoint=False)
            ring = np.stack([(1 + np.cos(t)) / 2, (1 + np.sin(t)) / 2], 1) * (rel[2:] - rel[:2]) + rel[:2]
            shape = [ring]
            geometry = [[round(float(v), 2) for v in (ring * [width, height]).ravel()]]
        elif kind == "keypoints":
            u = np.array([[0.5, 0.0], [0.0, 0.45], [1.0, 0.45], [0.25, 1.0], [0.75, 1.0]])
            xy = u * (rel[2:] - rel[:2]) + rel[:2]
            shape = np.concatenate([xy, np.full((N_JOINTS, 1), 2.0)], 1)
            geometry = [round(float(v), 2) for v in (shape * [width, height, 1.0]).ravel()]
            shape = np.concatenate([np.array(geometry).reshape(-1, 3)[:, :2] / [width, height],
                                    np.full((N_JOINTS, 1), 2.0)], 1)
        out.append(RefObject(start_id + k, int(cats[k]), rel, shape, geometry, bbox))
    return out


def lvis_like_reference(n_images: int = 100, seed: int = 0, kind: str = "box", n_classes: int = 40,
                        mean_objects: float = 12.0, width: float = 640, height: float = 480) -> Reference:
    """A seeded reference set (``kind``: ``box``, ``polygon`` or ``keypoints``)."""
    task = KIND_TASKS[kind]
    rng = np.random.default_rng([int(seed), 17])
    images, next_id = [], 1
    for i in range(1, n_images + 1):
        n = 1 + int(rng.negative_binomial(2, 2 / (2 + mean_objects - 1)))
        objs = _objects(rng, n, n_classes, kind, width, height, next_id)
        next_id += n
        images.append(RefImage(i, width, height, f"synthetic_{i:05d}.jpg", objs))
    return Reference(images, {k: f"class_{k}" for k in range(1, n_classes + 1)}, task)


def reference_to_coco(reference: Reference) -> dict:
    """The reference as a plain COCO dict (no rater keys)."""
    anns = []
    for im in reference.images:
        for o in im.objects:
            d = {"id": o.id, "image_id": im.id, "category_id": o.category, "bbox": list(o.bbox),
                 "area": round(o.bbox[2] * o.bbox[3], 2), "iscrowd": 0}
            if reference.task == "segm":
                d["segmentation"] = o.geometry
            elif reference.task == "keypoints":
                d["keypoints"], d["num_keypoints"] = list(o.geometry), int(sum(v > 0 for v in o.geometry[2::3]))
            anns.append(d)
    return {"images": [{"id": im.id, "width": im.width, "height": im.height, "file_name": im.file_name}
                       for im in reference.images],
            "annotations": anns, "categories": [{"id": k, "name": v} for k, v in sorted(reference.categories.items())]}
