"""The embedded demo data set: procedural toy scenes rated by simulated raters.

Scenes (reference objects) -> rendered JPEGs -> raters drawn by the empirical noise
generator (:mod:`kalos_core.demo_raters`, the one way demo raters are made) -> multi-rater
COCO (``rater_list`` per image, ``rater_id`` per annotation), plus a
fast vectorised box-only generator for benchmarks.  Every image and rater draws from
its own random stream keyed by ``(seed, image id, ...)``: same seed, same bytes.
Coordinates are pixels, ``bbox`` is COCO ``[x, y, w, h]``, polygons are flat rings.
"""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import shapely
from PIL import Image, ImageDraw, ImageFilter

_NAMES = ("circle", "square", "triangle", "star", "ellipse")
CATEGORIES: list[dict[str, Any]] = [{"id": i, "name": n} for i, n in enumerate(_NAMES, start=1)]
#: COCO size strata: "small" objects have an area below 32^2 px, "large" ones above 96^2 px.
SMALL_AREA, LARGE_AREA = 32.0**2, 96.0**2
#: Fill colours; circle and ellipse are deliberately similar (the confusable pair).
CLASS_COLOURS = {1: (210, 60, 50), 2: (45, 100, 210), 3: (50, 165, 75), 4: (240, 190, 35), 5: (220, 85, 65)}
_AREA_RANGES = ((120.0, 900.0), (1300.0, 8500.0), (10000.0, 36000.0))  # small / medium / large
_SIZE_PROBS = (0.35, 0.40, 0.25)


@dataclass(eq=False)
class SceneObject:
    """One reference object: class, exact outline ``(N, 2)`` and bbox ``(x, y, w, h)``."""

    category_id: int
    polygon: np.ndarray
    bbox: tuple[float, float, float, float]

    @property
    def area(self) -> float:
        return polygon_area(self.polygon)


@dataclass(eq=False)
class Scene:
    """One image with its reference objects (in drawing order, largest first)."""

    image_id: int
    file_name: str
    width: int
    height: int
    objects: list[SceneObject] = field(default_factory=list)

    def coco_image(self) -> dict[str, Any]:
        return {"id": self.image_id, "file_name": self.file_name, "width": self.width, "height": self.height}


def _rng(seed: int, *keys: int) -> np.random.Generator:
    """Independent random stream for ``(seed, *keys)`` (all non-negative ints)."""
    return np.random.default_rng([int(seed), *map(int, keys)])


def polygon_area(points: np.ndarray) -> float:
    """Shoelace area of a simple polygon ``(N, 2)``."""
    x, y = points[:, 0], points[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2.0)


def polygon_bbox(points: np.ndarray) -> tuple[float, float, float, float]:
    """COCO bbox ``(x, y, w, h)`` of a polygon, rounded to 0.01 px."""
    (x0, y0), (x1, y1) = points.min(axis=0), points.max(axis=0)
    return round(float(x0), 2), round(float(y0), 2), round(float(x1 - x0), 2), round(float(y1 - y0), 2)


def shape_outline(category_id: int, area: float, angle: float, rng: np.random.Generator) -> np.ndarray:
    """Outline ``(N, 2)`` of a shape of the given class and area, centred on the origin, rotated."""
    q = rng.uniform(1.45, 2.0) if category_id == 5 else 1.0  # ellipse aspect ratio
    if category_id in (1, 5):  # regular 16- to 64-gon, stretched by q for the ellipse
        radius = np.ones(int(np.clip(math.sqrt(area * q / math.pi) * math.pi / 2, 16, 64)))
    else:  # square, equilateral triangle, five-pointed star (inner radius 0.45)
        radius = {2: np.ones(4), 3: np.ones(3), 4: np.tile([1.0, 0.45], 5)}[category_id]
    t = 2 * math.pi * np.arange(len(radius)) / len(radius) + (math.pi / 4 if category_id == 2 else -math.pi / 2)
    pts = np.stack([q * radius * np.cos(t), radius * np.sin(t)], axis=1)
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    return pts @ rot.T * math.sqrt(area / polygon_area(pts))


def _place(outline: np.ndarray, width: int, height: int, placed: list, rng: np.random.Generator,
           max_overlap: float = 0.45, tries: int = 30) -> np.ndarray | None:
    """Translate ``outline`` fully into the image; it may cover < ``max_overlap`` of any placed
    shape, and the placed shapes together < ``max_overlap`` of it.  Appends it to ``placed``."""
    ext = np.abs(outline).max(axis=0) + 1.0
    if 2 * ext[0] >= width or 2 * ext[1] >= height:
        return None
    union = shapely.union_all(placed) if placed else shapely.Polygon()
    for _ in range(tries):
        pts = outline + rng.uniform(ext, np.array([width, height]) - ext)
        poly = shapely.Polygon(pts)
        if poly.intersection(union).area < max_overlap * poly.area and all(
                poly.intersection(p).area < max_overlap * p.area for p in placed):
            placed.append(poly)
            return pts
    return None


def _make_scene(image_id: int, seed: int, width: int, height: int) -> Scene:
    rng = _rng(seed, image_id, 0)
    placed: list = []
    objects: list[SceneObject] = []
    for _ in range(int(rng.integers(3, 13))):
        cat = int(rng.integers(1, len(CATEGORIES) + 1))
        lo, hi = _AREA_RANGES[rng.choice(3, p=_SIZE_PROBS)]
        area, pts = rng.uniform(lo, hi), None
        while pts is None and area > 40:  # shrink until it fits
            pts = _place(shape_outline(cat, area, rng.uniform(0, 2 * math.pi), rng), width, height, placed, rng)
            area /= 2
        if pts is not None:
            objects.append(SceneObject(cat, np.round(pts, 2), polygon_bbox(np.round(pts, 2))))
    objects.sort(key=lambda o: -o.area)
    return Scene(image_id, f"scene_{image_id:04d}.jpg", width, height, objects)


def make_scenes(n_images: int = 40, seed: int = 0, width: int = 640, height: int = 480) -> list[Scene]:
    """Procedural scenes (image ids ``1..n_images``) with 3-12 reference objects each.

    Scene ``i`` depends only on ``(seed, i)`` (seed >= 0).  Objects are ~35 % small (< 32^2 px),
    40 % medium, 25 % large, fully inside the image, overlapping a little (see :func:`_place`).
    """
    return [_make_scene(i, seed, width, height) for i in range(1, n_images + 1)]


def _smooth_noise(height: int, width: int, grid: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Low-frequency noise (unit-ish s.d.): a random grid upsampled bicubically."""
    coarse = Image.fromarray(rng.normal(0.0, 1.0, grid).astype(np.float32))
    return np.asarray(coarse.resize((width, height), Image.Resampling.BICUBIC), dtype=np.float32)


def _background(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Gradient between two muted colours plus blotchy colour texture and paper grain."""
    c0, c1 = rng.uniform(70, 190, size=(2, 3))
    theta = rng.uniform(0, 2 * math.pi)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    t = xx * math.cos(theta) + yy * math.sin(theta)
    img = c0 + ((t - t.min()) / max(float(np.ptp(t)), 1e-6))[..., None] * (c1 - c0)
    img += np.stack([_smooth_noise(height, width, (5, 7), rng) for _ in range(3)], axis=-1) * 12
    img += _smooth_noise(height, width, (height // 3, width // 3), rng)[..., None] * 6
    return img.astype(np.float32)


def _soft_mask(points: np.ndarray, size: tuple[int, int], blur: float = 0.0, ss: int = 4) -> np.ndarray:
    """Anti-aliased (optionally blurred) coverage in [0, 1] of a polygon on a ``(w, h)`` raster."""
    mask = Image.new("L", (size[0] * ss, size[1] * ss), 0)
    ImageDraw.Draw(mask).polygon([(float(x) * ss, float(y) * ss) for x, y in points], fill=255)
    mask = mask.resize(size, Image.Resampling.BOX)
    mask = mask.filter(ImageFilter.GaussianBlur(blur)) if blur > 0 else mask
    return np.asarray(mask, dtype=np.float32) / 255.0


def _paint_object(canvas: np.ndarray, obj: SceneObject, rng: np.random.Generator) -> None:
    """Paint one object (drop shadow, shaded noisy fill, dark rim) into ``canvas`` in place."""
    x, y, w, h = obj.bbox
    x0, y0 = max(int(x) - 8, 0), max(int(y) - 8, 0)
    x1, y1 = min(math.ceil(x + w) + 9, canvas.shape[1]), min(math.ceil(y + h) + 9, canvas.shape[0])
    local, size = obj.polygon - (x0, y0), (x1 - x0, y1 - y0)
    alpha = _soft_mask(local, size)[..., None]
    shadow = _soft_mask(local + 3.0, size, blur=2.0)[..., None]
    colour = np.array(CLASS_COLOURS[obj.category_id]) * rng.uniform(0.85, 1.1) + rng.normal(0, 8, 3)
    yy, xx = np.mgrid[0:size[1], 0:size[0]].astype(np.float32)
    d = rng.normal(size=2)
    ramp = (xx * d[0] + yy * d[1]) / (np.hypot(*d) * max(w, h, 1.0))
    fill = colour + (ramp[..., None] - 0.5) * 40 + rng.normal(0, 4, (size[1], size[0], 1))
    fill *= 1.0 - 1.2 * (alpha * (1 - alpha))  # darker anti-aliased rim
    canvas[y0:y1, x0:x1] = canvas[y0:y1, x0:x1] * (1.0 - 0.35 * shadow) * (1 - alpha) + fill * alpha


def render_scene(scene: Scene, seed: int = 0) -> Image.Image:
    """RGB image of the scene; the background alone depends only on ``(seed, image_id)``."""
    canvas = _background(scene.width, scene.height, _rng(seed, scene.image_id, 1))
    rng = _rng(seed, scene.image_id, 2)
    for obj in scene.objects:
        _paint_object(canvas, obj, rng)
    canvas += _rng(seed, scene.image_id, 3).normal(0, 2.5, canvas.shape).astype(np.float32)
    return Image.fromarray(np.clip(canvas + 0.5, 0, 255).astype(np.uint8))


def write_images(scenes: Sequence[Scene], folder: str | pathlib.Path, seed: int = 0,
                 quality: int = 90) -> list[pathlib.Path]:
    """Render every scene to ``folder/<file_name>`` (JPEG); return the paths."""
    pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
    paths = [pathlib.Path(folder) / scene.file_name for scene in scenes]
    for scene, path in zip(scenes, paths, strict=True):
        render_scene(scene, seed).save(path, quality=quality)
    return paths


def _annotation(ann_id: int, image_id: int, category_id: int, pts: np.ndarray) -> dict[str, Any]:
    return {"id": ann_id, "image_id": image_id, "category_id": int(category_id),
            "bbox": list(polygon_bbox(pts)), "area": round(polygon_area(pts), 2), "iscrowd": 0,
            "segmentation": [[round(float(v), 2) for v in pts.ravel()]]}


def reference_coco(scenes: Sequence[Scene]) -> dict[str, Any]:
    """The reference objects of ``scenes`` as a plain COCO dict (no rater keys)."""
    objects = [(s.image_id, o) for s in scenes for o in s.objects]
    annotations = [_annotation(i, im, o.category_id, o.polygon) for i, (im, o) in enumerate(objects, start=1)]
    return {"info": {"description": "KaLOS demo: reference"}, "images": [s.coco_image() for s in scenes],
            "annotations": annotations, "categories": list(CATEGORIES)}


def build_demo(folder: str | pathlib.Path, n_images: int = 40, seed: int = 0,
               with_images: bool = True) -> pathlib.Path:
    """Write ``images/*.jpg``, ``multirater.json`` and ``reference.json`` into ``folder``.

    The raters are drawn by the empirical noise generator from the shipped profile fitted on
    LVIS, one habit each (:mod:`kalos_core.demo_raters`). Returns ``folder/multirater.json``;
    image ``file_name`` are relative to ``folder/images``.
    """
    from .demo_raters import generator_raters  # the generator imports scipy: only when used

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    scenes = make_scenes(n_images, seed)
    if with_images:
        write_images(scenes, folder / "images", seed)
    out = folder / "multirater.json"
    reference = reference_coco(scenes)
    multirater = generator_raters(reference, seed=seed)
    for path, data in ((out, multirater), (folder / "reference.json", reference)):
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return out


def _random_boxes(n: int, lo: float, hi: float, width: int, height: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` boxes ``(x0, y0, x1, y1)`` in the image, log-uniform size in [lo, hi]; and their sizes."""
    side = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
    aspect = np.sqrt(np.exp(rng.normal(0, 0.35, n)))
    wh = np.minimum(np.stack([side * aspect, side / aspect], 1), [width - 2, height - 2])
    xy = rng.uniform(0, 1, (n, 2)) * (np.array([width, height]) - wh)
    return np.concatenate([xy, xy + wh], 1), side


def _synthetic_rater(ref: dict[str, np.ndarray], sd: float, n_images: int, n_categories: int, width: int,
                     height: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One rater's boxes: 5 % missed, edges jittered by ``N(0, sd * size)``, 3 % flipped, 2 % FPs."""
    n = len(ref["image"])
    keep = rng.random(n) >= 0.05
    shift = rng.integers(0, max(n_categories - 1, 1), n)  # a flip goes to a different class
    cat = np.where(rng.random(n) < 0.03, (ref["category"] + shift) % n_categories + 1, ref["category"])[keep]
    xyxy = ref["xyxy"][keep] + rng.normal(0.0, 1.0, (int(keep.sum()), 4)) * (sd * ref["size"][keep])[:, None]
    xyxy[:, :2] = np.clip(xyxy[:, :2], 0, [width - 1, height - 1])
    xyxy[:, 2:] = np.clip(xyxy[:, 2:], xyxy[:, :2] + 1, [width, height])
    n_fp = int(rng.binomial(n, 0.02))
    fp, _ = _random_boxes(n_fp, 6, 120, width, height, rng)
    return {"image": np.concatenate([ref["image"][keep], rng.integers(1, n_images + 1, n_fp)]),
            "category": np.concatenate([cat, rng.integers(1, n_categories + 1, n_fp)]),
            "xyxy": np.concatenate([xyxy, fp]), "ref": np.concatenate([ref["ref"][keep], np.full(n_fp, -1)])}


def make_synthetic_boxes(n_images: int = 5000, n_raters: int = 3, objects_per_image: int = 20, seed: int = 0,
                         width: int = 640, height: int = 480, n_categories: int = 10,
                         decimals: int | None = 2) -> dict[str, Any]:
    """Large box-only multi-rater COCO dict for benchmarks (vectorised, no drawing).

    ``objects_per_image // 2 .. 3 * objects_per_image // 2`` reference boxes per image
    (6-200 px); ``rater_<r>`` (r = 1..) jitters edges by ``(0.01 + 0.02 r) * size`` (see
    :func:`_synthetic_rater`).  No ``segmentation``; ``ref_index`` as in :func:`kalos_core.demo_raters.generator_raters`.
    ``decimals=None`` keeps every coordinate at full float precision, as real exports write them
    (``json.dump`` of computed floats: about 17 significant digits each).
    """
    rng = np.random.default_rng(seed)
    counts = rng.integers(objects_per_image // 2, objects_per_image * 3 // 2 + 1, n_images)
    xyxy, size = _random_boxes(int(counts.sum()), 6, 200, width, height, rng)
    ref = {"image": np.repeat(np.arange(1, n_images + 1), counts), "xyxy": xyxy, "size": size,
           "category": rng.integers(1, n_categories + 1, len(size)),
           "ref": np.arange(len(size)) - np.repeat(np.cumsum(counts) - counts, counts)}
    parts = [_synthetic_rater(ref, 0.01 + 0.02 * (r + 1), n_images, n_categories, width, height, rng)
             for r in range(n_raters)]
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    rater = np.concatenate([np.full(len(p["ref"]), r) for r, p in enumerate(parts)])
    order = np.lexsort((rater, cols["image"]))
    def rounded(a):
        return a if decimals is None else np.round(a, decimals)

    xyxy = rounded(cols["xyxy"][order])
    bbox = rounded(np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], 1))
    names = [f"rater_{r + 1}" for r in range(n_raters)]
    rows = zip(cols["image"][order].tolist(), cols["category"][order].tolist(), bbox.tolist(),
               rounded(bbox[:, 2] * bbox[:, 3]).tolist(), rater[order].tolist(), cols["ref"][order].tolist(),
               strict=True)
    annotations = [{"id": i, "image_id": im, "category_id": c, "bbox": b, "area": a, "iscrowd": 0,
                    "rater_id": names[r], "ref_index": k} for i, (im, c, b, a, r, k) in enumerate(rows, start=1)]
    images = [{"id": i, "file_name": f"synthetic_{i:06d}.jpg", "width": width, "height": height,
               "rater_list": list(names)} for i in range(1, n_images + 1)]
    categories = [{"id": k, "name": f"class_{k}"} for k in range(1, n_categories + 1)]
    return {"info": {"description": "KaLOS synthetic boxes", "seed": int(seed)}, "images": images,
            "annotations": annotations, "categories": categories}


def demo_example(task: str = "bbox", n_images: int = 8, seed: int = 1):
    """A small seeded :class:`kalos_core.measure.MeasureData`: procedurally drawn scenes and four
    raters with one habit each, read for ``task`` (the registry-wide tests run every measure on it)."""
    from .demo_raters import generator_raters
    from .io.coco import load_coco
    from .measure import MeasureData

    return MeasureData(load_coco(generator_raters(reference_coco(make_scenes(n_images, seed)), seed=seed), task))
