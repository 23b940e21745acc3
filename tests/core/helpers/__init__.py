"""Helpers shared by the tests of tests/core (tests/core's one helpers package, not collected):
comparisons of two paths' results, a small hand-made multi-rater COCO dict, columnar copies of data
sets and their hypothesis strategy; ``agreement_reference`` beside this file is the one-``alpha``-call-
per-image reference path of the agreement."""

import json
import math
from dataclasses import replace

import numpy as np
from hypothesis import strategies as st
from PIL import Image

from kalos_core import Annotation, MultiRaterDataset, make_image
from kalos_core.cli import main as kalos_main
from kalos_core.columns import AnnotationColumns

# -- comparing results -----------------------------------------------------------------------------


def assert_same(fast, ref, path="result"):
    """Equal structure, equal keys, numbers equal to 1e-12."""
    if isinstance(ref, dict):
        assert isinstance(fast, dict) and set(fast) == set(ref), f"{path}: keys {set(fast) ^ set(ref)}"
        for k in ref:
            assert_same(fast[k], ref[k], f"{path}[{k!r}]")
    elif isinstance(ref, (list, tuple)):
        assert len(fast) == len(ref), path
        for k, (a, b) in enumerate(zip(fast, ref)):
            assert_same(a, b, f"{path}[{k}]")
    elif isinstance(ref, float) and not isinstance(fast, bool):
        assert (math.isnan(ref) and math.isnan(fast)) or abs(fast - ref) <= 1e-12, f"{path}: {fast} != {ref}"
    else:
        assert fast == ref, f"{path}: {fast!r} != {ref!r}"


def columnar(ds: MultiRaterDataset) -> MultiRaterDataset:
    """The same data set with every image's boxes held as columns (rater codes in reverse
    name order, so the kernel has to map codes to sorted rows)."""
    images = []
    for im in ds.images:
        names = tuple(sorted(im.raters, reverse=True))
        anns = list(im.annotations)
        cols = AnnotationColumns([a.id for a in anns], names,
                                 np.array([names.index(a.rater) for a in anns], np.int64),
                                 np.array([a.category for a in anns], np.int64),
                                 np.array([a.geometry for a in anns], float).reshape(-1, 4))
        images.append(replace(im, annotations=cols))
    return MultiRaterDataset(images, ds.categories, ds.kind)


def same(a, b, path="partial"):
    """Exactly equal: dict keys in the same order, floats bit for bit (NaN = NaN)."""
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{k}]")
    elif isinstance(a, float):
        assert a == b or (math.isnan(a) and math.isnan(b)), f"{path}: {a!r} != {b!r}"
    elif hasattr(a, "__dataclass_fields__"):
        same(vars(a), vars(b), path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


box = st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(1, 30), st.integers(1, 30), st.integers(1, 3))


@st.composite
def datasets(draw):
    images = []
    for i in range(draw(st.integers(1, 6))):
        raters = [f"r{k}" for k in draw(st.sets(st.integers(0, 4), min_size=0 if i else 2, max_size=5))]
        anns = []
        for r in raters:
            drawn = draw(st.lists(box, max_size=5))
            if drawn and draw(st.booleans()):
                drawn.append(drawn[0])               # an exact duplicate: ids decide the order
            for x, y, w, h, c in drawn:
                anns.append(Annotation(draw(st.sampled_from([f"{i}-{len(anns)}", 1000 * i + len(anns)])), r, c,
                                       (x, y, w, h)))
        images.append(make_image(i, 100, 90, raters, anns))
    return MultiRaterDataset(images, {1: "a", 2: "b", 3: "c"}, "box")


def assert_same_dataset(col, ref):
    assert [type(im.annotations) for im in col.images] == [AnnotationColumns] * len(col.images)
    assert col.images == ref.images
    for a, b in zip(col.images, ref.images):
        assert list(a.annotations) == b.annotations
    assert (col.categories, col.kind, col.meta, col.warnings, col.skipped) == \
           (ref.categories, ref.kind, ref.meta, ref.warnings, ref.skipped)


# -- data -----------------------------------------------------------------------------------------


def small():
    """Two images, raters a/b, boxes + polygons, ids chosen to be easy to find in messages."""
    sq = lambda x: [[x, 0, x + 10, 0, x + 10, 10, x, 10]]
    return {
        "images": [{"id": 1, "width": 100, "height": 50, "rater_list": ["a", "b"]},
                   {"id": 2, "width": 100, "height": 50, "rater_list": ["a", "b"]}],
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10], "segmentation": sq(0)},
            {"id": 11, "image_id": 1, "category_id": 1, "rater_id": "b", "bbox": [1, 0, 10, 10], "segmentation": sq(1)},
            {"id": 12, "image_id": 2, "category_id": 2, "rater_id": "a", "bbox": [50, 0, 10, 10], "segmentation": sq(50)},
            {"id": 13, "image_id": 2, "category_id": 2, "rater_id": "b", "bbox": [50, 1, 10, 10], "segmentation": sq(50)},
        ],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    }


# --- semantic masks: class-map files as the tools write them ---

def write_png(path, arr):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(arr, np.uint8), mode="L").save(path)


def truth_mask(shift=0):
    """A 40 x 48 class map (0 background, 1 a box, 2 a patch in it), the box shifted right by ``shift``."""
    m = np.zeros((40, 48), np.uint8)
    m[5:25, 8 + shift:30 + shift] = 1
    m[10:15, 12:18] = 2
    return m


def run_masks(argv, capsys):
    """``python -m kalos_core masks ARGV``: (exit code, captured output), never a traceback."""
    try:
        rc = kalos_main(["masks", *map(str, argv)])
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out


SIZES = (3, 4, 8, 16)   # Label Studio brush RLE: the run-length fields' bit widths


def ls_rle(painted: np.ndarray, value: int = 255) -> list[int]:
    """Label Studio's brush RLE of a painted-pixel mask (RGBA, 8-bit words, run fields of 3/4/8/16 bits):
    runs of one value longer than one are repeat blocks, lone values are gathered into literal blocks."""
    flat = np.repeat(np.where(painted.ravel(), value, 0), 4)
    bits = [f"{flat.size:032b}", f"{7:05b}", *(f"{s - 1:04b}" for s in SIZES)]
    edges = np.flatnonzero(np.diff(flat)) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, flat.size]
    literal = []

    def block(repeat, n, words):
        k = next(i for i, s in enumerate(SIZES) if n <= 1 << s)
        bits.append(f"{int(repeat)}{k:02b}{n - 1:0{SIZES[k]}b}" + "".join(f"{w:08b}" for w in words))

    def flush():
        while literal:
            chunk = literal[:8]
            del literal[:8]
            block(False, len(chunk), chunk)

    for s, e in zip(starts, ends):
        if e - s == 1:
            literal.append(int(flat[s]))
            continue
        flush()
        for a in range(s, e, 1 << 16):
            block(True, min(e, a + (1 << 16)) - a, [int(flat[s])])
    flush()
    stream = "".join(bits)
    stream += "0" * (-len(stream) % 8)
    return [int(stream[i:i + 8], 2) for i in range(0, len(stream), 8)]


def painted(seed, shape=(40, 48)):
    rng = np.random.default_rng(seed)
    return rng.random(shape) < 0.3


LABELMAP = "# label:color_rgb:parts:actions\nbackground:0,0,0::\nroad:128,0,0::\ncar:0,128,0::\n"
COLOURS = np.array([[0, 0, 0], [128, 0, 0], [0, 128, 0]], np.uint8)


def cvat_export(root, rater, maps, labelmap=LABELMAP):
    """A rater's CVAT "Segmentation mask" export, unzipped: labelmap.txt, colour-coded class PNGs."""
    (root / rater / "SegmentationClass").mkdir(parents=True)
    (root / rater / "ImageSets" / "Segmentation").mkdir(parents=True)
    (root / rater / "labelmap.txt").write_text(labelmap)
    (root / rater / "ImageSets" / "Segmentation" / "default.txt").write_text("\n".join(maps))
    for name, m in maps.items():
        Image.fromarray(COLOURS[m]).save(root / rater / "SegmentationClass" / f"{name}.png")
    return root / rater


def brush(mask, label, w=48, h=40, rid="r"):
    return {"id": rid, "type": "brushlabels", "from_name": "tag", "to_name": "image", "origin": "manual",
            "original_width": w, "original_height": h, "image_rotation": 0,
            "value": {"format": "rle", "rle": ls_rle(mask), "brushlabels": [label]}}


def ls_export(tmp_path, maps, names=("background", "car", "road")):
    """Label Studio's JSON export of ``{image: {annotator id: class map}}``: one brush region per class,
    each painting its class and every later one (so each region overlaps the ones after it)."""
    tasks = []
    for t, (image, by_user) in enumerate(maps.items(), 1):
        anns = [{"id": 10 * t + u, "completed_by": u, "was_cancelled": False, "ground_truth": False,
                 "result": [brush(m >= k, names[k], rid=f"{t}{u}{k}") for k in range(1, len(names)) if (m == k).any()]}
                for u, m in by_user.items()]
        tasks.append({"id": t, "data": {"image": f"/data/upload/1/{image}.jpg"}, "annotations": anns,
                      "drafts": [], "predictions": []})
    path = tmp_path / "project.json"
    path.write_text(json.dumps(tasks))
    return path


# --- scorecards: an expert ``e`` and a rater ``s``, objects A-E (id, class, x, y, side) ---

E = {"A": (1, 1, 0, 0, 10), "B": (2, 1, 100, 0, 40), "C": (3, 2, 200, 200, 100), "E": (5, 2, 0, 100, 10)}
S = {"A": (11, 1, 0, 0, 10), "B": (12, 2, 100, 0, 40), "C": (13, 2, 200, 200, 100), "D": (14, 1, 400, 400, 10)}


def scorecard_anns(image=1, shift=0):
    """An expert ``e`` and a rater ``s`` on a 500×500 image: objects A-E as tests/core/test_scorecard_subsets.py
    tabulates them (a TP, a class swap, a large TP, an extra, a miss); ids shifted by ``shift``."""
    return [Annotation(aid + shift, r, c, (x, y, w, w)) for r, objs in (("e", E), ("s", S))
            for aid, c, x, y, w in objs.values()]
