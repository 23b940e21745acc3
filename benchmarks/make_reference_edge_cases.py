#!/usr/bin/env python3
"""Hand-made multi-rater COCO files that expose the known differences to the reference.

Opt-in development helper for benchmarks/compare_reference.py (needs nothing but
the standard library). Usage:

    python3 benchmarks/make_reference_edge_cases.py OUT_FOLDER
    python3 benchmarks/compare_reference.py OUT_FOLDER/edge_valid.json --task bbox [--cost neg]
    python3 benchmarks/compare_reference.py OUT_FOLDER/edge_invalid.json --task segm --skip-invalid

edge_valid.json: images 1 and 3 hold an exact Greedy cost tie whose winner the
reference takes from file order (kalos_core: canonical order); image 10 the same
for the neg cost; images 4-9 (IoU exactly 0.5, empty image, silent rater,
single rater, bow-tie / multi-ring / zero-area polygons) agree.
edge_invalid.json: an annotation by a rater not in rater_list and a polygon whose
bbox has zero width (both kept or dropped silently by the reference).
edge_duprater.json: a rater listed twice in rater_list (global alpha differs).
"""
import json
import sys
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
OUT.mkdir(parents=True, exist_ok=True)
images, anns = [], []
def im(i, raters, w=200, h=100):
    images.append({"id": i, "file_name": f"{i}.jpg", "width": w, "height": h, "rater_list": raters})
def rect(x, y, w, h): return [[x, y, x + w, y, x + w, y + h, x, y + h]]
def add(img, rater, cat, b, seg=None, aid=None, **kw):
    a = {"id": aid if aid is not None else len(anns) + 1, "image_id": img, "category_id": cat, "rater_id": rater,
         "bbox": list(b), "segmentation": seg if seg is not None else rect(*b), "area": b[2] * b[3], "iscrowd": 0}
    a.update(kw); anns.append(a)

# image 1: exact cost tie (soft cost), file order a2 before a1 -> tie-break decides the units
im(1, ["A", "B", "C"], 128, 128)
add(1, "A", 1, (32, 0, 64, 64))   # a2
add(1, "A", 1, (0, 0, 64, 64))    # a1
add(1, "B", 1, (16, 0, 64, 64))   # b1: IoU 48/80 with both a1 and a2 (exact in binary)
add(1, "C", 2, (32, 0, 64, 64))   # c1 = a2 geometry, other class
# image 2: same tie but a1 listed first
im(2, ["A", "B", "C"], 128, 128)
add(2, "A", 1, (0, 0, 64, 64))
add(2, "A", 1, (32, 0, 64, 64))
add(2, "B", 1, (16, 0, 64, 64))
add(2, "C", 2, (32, 0, 64, 64))
# image 3: raters appear in the file in non-sorted order (C, B, A) with the tie
im(3, ["A", "B", "C"], 128, 128)
add(3, "C", 2, (32, 0, 64, 64))
add(3, "B", 1, (16, 0, 64, 64))
add(3, "A", 1, (32, 0, 64, 64))
add(3, "A", 1, (0, 0, 64, 64))
# image 4: IoU exactly 0.5 (box), inclusive threshold
im(4, ["A", "B"])
add(4, "A", 3, (0, 0, 100, 100))
add(4, "B", 3, (0, 0, 100, 50))
# image 5: nobody drew anything
im(5, ["A", "B", "C"])
# image 6: one assigned rater drew nothing, the others agree
im(6, ["A", "B", "C"])
add(6, "A", 1, (10, 10, 50, 50)); add(6, "B", 1, (12, 10, 50, 50))
# image 7: single assigned rater
im(7, ["A"])
add(7, "A", 1, (10, 10, 50, 50)); add(7, "A", 2, (100, 10, 50, 50))
# image 8: bow-tie (self-intersecting) polygon, multi-ring polygon, zero-area (collinear) polygon
im(8, ["A", "B"])
add(8, "A", 1, (0, 0, 100, 100), seg=[[0, 0, 100, 100, 100, 0, 0, 100]])   # bow-tie
add(8, "B", 1, (0, 0, 100, 100), seg=[[0, 0, 100, 0, 50, 50]])             # the upper triangle
add(8, "A", 2, (120, 0, 60, 60), seg=rect(120, 0, 30, 60) + rect(150, 0, 30, 60))  # two touching rings
add(8, "B", 2, (120, 0, 60, 60))
add(8, "A", 3, (10, 80, 50, 10), seg=[[10, 80, 35, 85, 60, 90]])  # collinear -> zero area
add(8, "B", 3, (10, 80, 50, 10))
# image 9: an annotation that is identical for two raters but classes differ and exact duplicates within a rater
im(9, ["A", "B"])
add(9, "A", 4, (10, 10, 40, 40)); add(9, "A", 5, (10, 10, 40, 40)); add(9, "B", 5, (10, 10, 40, 40))
# image 10: same, other file order
im(10, ["A", "B"])
add(10, "A", 5, (10, 10, 40, 40)); add(10, "A", 4, (10, 10, 40, 40)); add(10, "B", 4, (10, 10, 40, 40))
cats = [{"id": k, "name": f"c{k}"} for k in range(1, 6)]
json.dump({"images": images, "annotations": anns, "categories": cats}, open(OUT / "edge_valid.json", "w"))

# invalid-for-us cases (the reference accepts them)
images, anns = [], []
im(1, ["A", "B"])
add(1, "A", 1, (10, 10, 40, 40)); add(1, "B", 1, (12, 10, 40, 40))
add(1, "Z", 1, (100, 10, 40, 40))                 # rater not in rater_list
im(2, ["A", "B"])
add(2, "A", 1, (10, 10, 40, 40)); add(2, "B", 1, (12, 10, 40, 40))
add(2, "B", 2, (100, 10, 0, 40), seg=[[100, 10, 100, 50, 101, 30]])   # bbox width 0, polygon fine
im(3, ["A", "B"])
add(3, "A", 1, (10, 10, 40, 40)); add(3, "B", 1, (12, 10, 40, 40))
json.dump({"images": images, "annotations": anns, "categories": cats}, open(OUT / "edge_invalid.json", "w"))

# duplicated rater in rater_list
images, anns = [], []
im(1, ["A", "A", "B"])
add(1, "A", 1, (10, 10, 40, 40)); add(1, "B", 1, (12, 10, 40, 40)); add(1, "B", 2, (100, 10, 40, 40))
im(2, ["A", "B"])
add(2, "A", 1, (10, 10, 40, 40)); add(2, "B", 2, (12, 10, 40, 40))
json.dump({"images": images, "annotations": anns, "categories": cats}, open(OUT / "edge_duprater.json", "w"))
