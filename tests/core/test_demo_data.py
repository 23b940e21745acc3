"""Tests for :mod:`kalos_core.demo_data`, the embedded deterministic demo data set."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shapely
from PIL import Image, ImageDraw

from kalos_core import demo_data as dd
from kalos_core.demo_raters import generator_raters

REPO_ROOT = Path(__file__).resolve().parents[2]
EPS = 1e-6


@pytest.fixture(scope="module")
def scenes():
    return dd.make_scenes()  # the default demo: 40 images, seed 0


@pytest.fixture(scope="module")
def coco(scenes):
    return generator_raters(dd.reference_coco(scenes), seed=0)  # what build_demo writes


# ----------------------------------------------------------------------------- scenes
def test_scenes_have_the_promised_structure(scenes):
    assert [s.image_id for s in scenes] == list(range(1, 41))
    assert scenes[0].file_name == "scene_0001.jpg"
    areas, cats, overlapping = [], set(), 0
    for s in scenes:
        assert (s.width, s.height) == (640, 480)
        assert 3 <= len(s.objects) <= 12
        polys = [shapely.Polygon(o.polygon) for o in s.objects]
        for o, p in zip(s.objects, polys, strict=True):
            assert o.polygon.ndim == 2 and o.polygon.shape[1] == 2 and len(o.polygon) >= 3
            assert p.is_valid
            x, y, w, h = o.bbox
            assert x >= 0 and y >= 0 and x + w <= s.width + EPS and y + h <= s.height + EPS
            assert np.allclose([x, y, x + w, y + h], p.bounds, atol=0.02)
            areas.append(o.area)
            cats.add(o.category_id)
        overlapping += any(polys[i].intersects(polys[j]) for i in range(len(polys)) for j in range(i))
    areas = np.array(areas)
    assert cats == {c["id"] for c in dd.CATEGORIES}
    for fraction in ((areas < dd.SMALL_AREA).mean(), (areas > dd.LARGE_AREA).mean(),
                     ((areas >= dd.SMALL_AREA) & (areas <= dd.LARGE_AREA)).mean()):
        assert fraction > 0.15
    assert overlapping >= 5  # some scenes have overlapping objects


def test_shape_outline_has_the_requested_area():
    rng = np.random.default_rng(0)
    for cat in range(1, 6):
        pts = dd.shape_outline(cat, 2500.0, 0.7, rng)
        assert dd.polygon_area(pts) == pytest.approx(2500.0)
        assert shapely.Polygon(pts).is_valid


# ----------------------------------------------------------------------------- determinism
def test_same_seed_same_dict_different_seed_different():
    def raters(n, seed):
        return generator_raters(dd.reference_coco(dd.make_scenes(n, seed=seed)), seed=seed)

    a = raters(8, 5)
    assert json.dumps(a) == json.dumps(raters(8, 5))
    assert a != raters(8, 6)
    assert a != generator_raters(dd.reference_coco(dd.make_scenes(8, seed=5)), seed=6)  # raters alone
    assert dd.reference_coco(dd.make_scenes(8, seed=5)) != dd.reference_coco(dd.make_scenes(8, seed=6))


def test_build_demo_is_byte_identical(tmp_path):
    paths = [dd.build_demo(tmp_path / name, n_images=6, seed=2, with_images=False) for name in ("a", "b")]
    assert paths[0] == tmp_path / "a" / "multirater.json"
    for name in ("multirater.json", "reference.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert not (tmp_path / "a" / "images").exists()


def test_build_demo_writes_images_named_in_the_json(tmp_path):
    path = dd.build_demo(tmp_path, n_images=3, seed=1)
    data = json.loads(path.read_text())
    assert json.loads((tmp_path / "reference.json").read_text())["images"][0]["file_name"] == "scene_0001.jpg"
    for im in data["images"]:
        with Image.open(tmp_path / "images" / im["file_name"]) as img:
            assert img.format == "JPEG" and img.size == (im["width"], im["height"]) and img.mode == "RGB"


# ----------------------------------------------------------------------------- COCO format
def test_coco_keys(scenes, coco):
    names = ["careful", "sloppy", "misses_small", "confuser"]
    assert set(coco) >= {"images", "annotations", "categories"}
    assert coco["categories"] == dd.CATEGORIES
    for im in coco["images"]:
        assert {"id", "file_name", "width", "height", "rater_list"} <= set(im)
        assert im["rater_list"] == names
    ids = [a["id"] for a in coco["annotations"]]
    assert all(type(i) is int for i in ids) and len(set(ids)) == len(ids)
    keys = {"id", "image_id", "category_id", "bbox", "area", "iscrowd", "segmentation", "rater_id", "ref_index"}
    assert all(keys <= set(a) and a["iscrowd"] == 0 for a in coco["annotations"])
    assert {a["rater_id"] for a in coco["annotations"]} == set(names)
    ref = dd.reference_coco(scenes)
    assert len(ref["annotations"]) == sum(len(s.objects) for s in scenes)
    assert all("rater_list" not in im for im in ref["images"])
    assert all(not ({"rater_id", "ref_index"} & set(a)) for a in ref["annotations"])
    assert json.loads(json.dumps(coco)) == coco  # plain JSON types only, survives a round trip


def test_every_rater_annotation_is_valid(coco):
    sizes = {im["id"]: (im["width"], im["height"]) for im in coco["images"]}
    for a in coco["annotations"]:
        width, height = sizes[a["image_id"]]
        x, y, w, h = a["bbox"]
        assert w > 0 and h > 0 and x >= -EPS and y >= -EPS
        assert x + w <= width + 0.02 and y + h <= height + 0.02
        for ring in a["segmentation"]:
            assert len(ring) % 2 == 0 and len(ring) >= 6
        assert a["area"] > 0


def test_each_reference_object_is_annotated_at_most_once_per_rater_outside_fragments(scenes, coco):
    seen = set()
    for a in coco["annotations"]:
        if a["ref_index"] >= 0:
            assert 0 <= a["ref_index"] < len(scenes[a["image_id"] - 1].objects)
            if "fragment" in a["truth_errors"]:
                continue  # a fragmented object is drawn as two pieces
            key = (a["image_id"], a["rater_id"], a["ref_index"])
            assert key not in seen
            seen.add(key)


# ----------------------------------------------------------------------------- rendering
def test_render_scene(scenes):
    scene = scenes[0]
    img = dd.render_scene(scene, seed=0)
    assert img.size == (scene.width, scene.height) and img.mode == "RGB"
    assert np.array_equal(np.asarray(img), np.asarray(dd.render_scene(scene, seed=0)))
    pixels = np.asarray(img, dtype=float)
    bare = np.asarray(dd.render_scene(dd.Scene(scene.image_id, scene.file_name, scene.width, scene.height, []), 0),
                      dtype=float)
    # away from the objects (and their shadows, < 12 px) the image is exactly the background
    near = Image.new("L", img.size, 0)
    for o in scene.objects:
        ImageDraw.Draw(near).polygon([tuple(p) for p in shapely.Polygon(o.polygon).buffer(12).exterior.coords], fill=1)
    far = np.asarray(near) == 0
    assert far.mean() > 0.2 and np.array_equal(pixels[far], bare[far])
    # inside the top-most object the pixels are clearly not the background
    top = shapely.Polygon(scene.objects[-1].polygon).buffer(-1.5)
    inside = Image.new("L", img.size, 0)
    ImageDraw.Draw(inside).polygon([tuple(p) for p in top.exterior.coords], fill=1)
    inside = np.asarray(inside) == 1
    assert inside.sum() > 10
    assert np.abs(pixels[inside] - bare[inside]).sum(axis=1).mean() > 30
    # and at a representative point of (nearly) every object
    diffs = []
    for s in scenes[:5]:
        pixels = np.asarray(dd.render_scene(s), dtype=float)
        bare = np.asarray(dd.render_scene(dd.Scene(s.image_id, "", s.width, s.height, [])), dtype=float)
        for o in s.objects:
            p = shapely.Polygon(o.polygon).representative_point()
            diffs.append(np.abs(pixels[int(p.y), int(p.x)] - bare[int(p.y), int(p.x)]).sum())
    assert np.mean(np.array(diffs) > 20) > 0.9


# ----------------------------------------------------------------------------- benchmark data
def test_make_synthetic_boxes_small():
    data = dd.make_synthetic_boxes(n_images=200, n_raters=4, objects_per_image=10, seed=1)
    assert data == dd.make_synthetic_boxes(n_images=200, n_raters=4, objects_per_image=10, seed=1)
    assert len(data["images"]) == 200 and len(data["categories"]) == 10
    assert data["images"][0]["rater_list"] == ["rater_1", "rater_2", "rater_3", "rater_4"]
    anns = data["annotations"]
    assert 0.8 * 200 * 4 * 10 < len(anns) < 1.2 * 200 * 4 * 10
    assert [a["id"] for a in anns] == list(range(1, len(anns) + 1))
    keys = {"id", "image_id", "category_id", "bbox", "area", "iscrowd", "rater_id", "ref_index"}
    assert all(set(a) == keys for a in anns)
    b = np.array([a["bbox"] for a in anns])
    assert (b[:, 2:] > 0).all() and (b[:, :2] >= 0).all()
    assert (b[:, 0] + b[:, 2] <= 640 + EPS).all() and (b[:, 1] + b[:, 3] <= 480 + EPS).all()
    assert {a["category_id"] for a in anns} == set(range(1, 11))
    assert any(a["ref_index"] == -1 for a in anns)
    keys = [(a["image_id"], a["rater_id"], a["ref_index"]) for a in anns if a["ref_index"] >= 0]
    assert len(keys) == len(set(keys))
    order = [(a["image_id"], a["rater_id"]) for a in anns]
    assert order == sorted(order)


def test_make_synthetic_boxes_benchmark_size():
    data = dd.make_synthetic_boxes()  # vectorised: about half a second
    assert len(data["images"]) == 5000
    assert 250_000 < len(data["annotations"]) < 350_000
    assert "segmentation" not in data["annotations"][0]


def test_kalos_core_demo_data_does_not_import_fiftyone():
    code = "import sys, kalos_core.demo_data; assert 'fiftyone' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)
