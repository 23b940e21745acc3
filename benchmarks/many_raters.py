#!/usr/bin/env python3
"""A box file with many raters on few images: agreement's many-rater case (issue 23).

``make_many_raters(n_images=3, n_raters=1000, objects=10, seed=0)``: every rater draws each of the
image's ``objects`` reference boxes with edges jittered by ``N(0, 0.05 * size)``, misses 5 % and
flips 3 % of the classes. ``python benchmarks/many_raters.py OUT.json [--raters N]`` writes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def make_many_raters(n_images: int = 3, n_raters: int = 1000, objects: int = 10, seed: int = 0,
                     width: int = 640, height: int = 480, n_categories: int = 5) -> dict:
    """The COCO dict (``rater_id`` per annotation, ``rater_list`` per image)."""
    rng = np.random.default_rng(seed)
    names = [f"r{r:04d}" for r in range(n_raters)]
    annotations = []
    for image in range(1, n_images + 1):
        size = rng.uniform(20, 150, (objects, 2))
        xy = rng.uniform(0, 1, (objects, 2)) * (np.array([width, height]) - size)
        cat = rng.integers(1, n_categories + 1, objects)
        for r, name in enumerate(names):
            keep = rng.random(objects) >= 0.05
            jit = rng.normal(0, 0.05, (objects, 4)) * np.concatenate([size, size], 1)
            x0y0 = np.clip(xy + jit[:, :2], 0, None)
            wh = np.maximum(size + jit[:, 2:] - jit[:, :2], 2)
            flip = rng.random(objects) < 0.03
            c = np.where(flip, cat % n_categories + 1, cat)
            for k in np.flatnonzero(keep).tolist():
                annotations.append({"id": len(annotations) + 1, "image_id": image, "category_id": int(c[k]),
                                    "bbox": [round(float(v), 2) for v in (*x0y0[k], *wh[k])],
                                    "area": round(float(wh[k, 0] * wh[k, 1]), 2), "iscrowd": 0, "rater_id": name})
    images = [{"id": i, "file_name": f"many_{i}.jpg", "width": width, "height": height, "rater_list": names}
              for i in range(1, n_images + 1)]
    return {"images": images, "annotations": annotations,
            "categories": [{"id": k, "name": f"class_{k}"} for k in range(1, n_categories + 1)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--images", type=int, default=3)
    ap.add_argument("--raters", type=int, default=1000)
    ap.add_argument("--objects", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.out.write_text(json.dumps(make_many_raters(args.images, args.raters, args.objects, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
