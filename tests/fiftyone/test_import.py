"""Multi-rater COCO / YOLO import into a real (private) FiftyOne database: both layouts,
empty-vs-unassigned, masks/polylines/keypoints, validation before writing, the operator."""

import json
import math
import os
import uuid
from collections import Counter

import numpy as np
import pytest

from kalos_core.demo_data import build_demo

URI = "@kalos/agreement/import_multirater_coco"


@pytest.fixture(scope="module")
def imp(fo_isolated):
    """The package under test (imported after the database is isolated)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports

    return imports


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    path = build_demo(folder, n_images=8, seed=0, with_images=True)
    return path, folder / "images", json.loads(path.read_text())


def name():
    return f"kalos-import-{uuid.uuid4().hex[:8]}"


def write(tmp_path, data):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(data))
    return path


def rel_box(ann, image):
    x, y, w, h = ann["bbox"]
    return [x / image["width"], y / image["height"], w / image["width"], h / image["height"]]


def expected_boxes(data):
    """{(coco image id, rater): sorted relative boxes}"""
    images = {im["id"]: im for im in data["images"]}
    out = {(im["id"], r): [] for im in data["images"] for r in im["rater_list"]}
    for a in data["annotations"]:
        out[(a["image_id"], a["rater_id"])].append(rel_box(a, images[a["image_id"]]))
    return {k: sorted(v) for k, v in out.items()}


def small_coco(annotations, images=None, categories=({"id": 1, "name": "cat"},)):
    images = images or [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 200, "rater_list": ["ann", "bob"]},
                        {"id": 2, "file_name": "b.jpg", "width": 100, "height": 200, "rater_list": ["ann"]}]
    return {"images": images, "annotations": annotations, "categories": list(categories)}


def test_rater_fields_layout_matches_the_json(imp, demo):
    path, images, data = demo
    ds = imp.import_multirater_coco(name(), path, data_path=images)
    raters = ["careful", "sloppy", "misses_small", "confuser"]
    assert len(ds) == len(data["images"])
    assert ds.info["kalos_import"]["rater_fields"] == {f"raters_{r}": r for r in raters}
    per_rater = Counter(a["rater_id"] for a in data["annotations"])
    for r in raters:
        assert ds.count(f"raters_{r}.detections") == per_rater[r]
        assert ds.distinct(f"raters_{r}.detections.rater_id") == [r]
    want = expected_boxes(data)
    for s in ds.iter_samples():
        assert os.path.isfile(s.filepath)
        assert (s.metadata.width, s.metadata.height) == (640, 480)
        assert s.rater_list == raters
        for r in raters:
            got = sorted(d.bounding_box for d in s[f"raters_{r}"].detections)
            assert np.allclose(got, want[(s.coco_id, r)])
    ann = {a["id"]: a for a in data["annotations"]}
    det = ds.first()["raters_sloppy"].detections[0]
    assert det.label == data["categories"][ann[det.coco_annotation_id]["category_id"] - 1]["name"]
    assert "raters_careful.detections.rater_id" in ds.get_field_schema(flat=True)  # declared for the App


def test_rater_attribute_layout_matches_the_json(imp, demo):
    path, images, data = demo
    ds = imp.import_multirater_coco(name(), path, data_path=images, layout="rater_attribute")
    assert ds.count("raters.detections") == len(data["annotations"])
    assert ds.count_values("raters.detections.rater_id") == Counter(a["rater_id"] for a in data["annotations"])
    want = expected_boxes(data)
    for s in ds.iter_samples():
        for r in s.rater_list:
            got = sorted(d.bounding_box for d in s.raters.detections if d.rater_id == r)
            assert np.allclose(got, want[(s.coco_id, r)])
    assert ds.info["kalos_import"]["attribute_fields"] == {"raters": "rater_id"}


def test_assigned_but_empty_is_an_empty_list_and_unassigned_is_none(imp, tmp_path, fo_isolated):
    anns = [{"id": 10, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40], "rater_id": "ann"}]
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns)))
    one, two = ds.sort_by("coco_id")
    assert len(one.raters_ann.detections) == 1 and one.raters_bob.detections == []
    assert isinstance(one.raters_bob, fo_isolated.Detections)
    assert len(two.raters_ann.detections) == 0 and two.raters_bob is None
    assert (two.rater_list, one.rater_list) == (["ann"], ["ann", "bob"])
    assert one.raters_ann.detections[0].bounding_box == pytest.approx([0.1, 0.1, 0.3, 0.2])
    assert one.raters_ann.detections[0].coco_annotation_id == 10
    assert one.filepath.endswith(".png") and os.path.exists(one.filepath)  # a blank stand-in of the image's size
    assert (one.metadata.width, one.metadata.height) == (100, 200)


def test_rater_names_are_made_field_safe_and_kept_on_the_labels(imp, tmp_path):
    raters = ["Dr. Who", "Dr_Who", "x"]
    images = [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10, "rater_list": raters}]
    anns = [{"id": i, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "rater_id": r}
            for i, r in enumerate(raters)]
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns, images)))
    mapping = ds.info["kalos_import"]["rater_fields"]
    assert mapping == {"raters_Dr_Who": "Dr. Who", "raters_Dr_Who_2": "Dr_Who", "raters_x": "x"}
    for field, rater in mapping.items():
        assert ds.values(f"{field}.detections.rater_id") == [[rater]]
    # importing more (another image) into the same dataset reuses the same fields
    more = [{**a, "image_id": 2, "id": a["id"] + 10} for a in anns]
    imp.import_multirater_coco(ds, write(tmp_path, small_coco(more, [{**images[0], "id": 2}])))
    assert len(ds) == 2 and ds.info["kalos_import"]["rater_fields"] == mapping
    assert ds.count("raters_Dr_Who_2.detections") == 2


def test_segmentations_as_masks_and_polylines(imp, demo, fo_isolated):
    fo = fo_isolated
    path, _, data = demo
    ds = imp.import_multirater_coco(name(), path, label_types=["detections", "segmentations"])
    assert ds.has_sample_field("raters_detections_careful") and ds.has_sample_field("raters_segmentations_careful")
    ann = {a["id"]: a for a in data["annotations"]}
    dets = ds.values("raters_segmentations_careful.detections", unwind=True)
    assert len(dets) == sum(a["rater_id"] == "careful" for a in data["annotations"])
    for d in dets[:20]:
        a = ann[d.coco_annotation_id]
        assert d.mask.dtype == bool
        assert abs(d.mask.shape[0] - a["bbox"][3]) <= 1.5 and abs(d.mask.shape[1] - a["bbox"][2]) <= 1.5
        assert d.mask.sum() == pytest.approx(a["area"], rel=0.15, abs=15)
    pl = imp.import_multirater_coco(name(), path, label_types=["segmentations"], use_polylines=True)
    assert pl.get_field("raters_sloppy").document_type is fo.Polylines
    poly = pl.values("raters_sloppy.polylines", unwind=True)[0]
    a = ann[poly.coco_annotation_id]
    ring = a["segmentation"][0]
    assert poly.closed and not poly.filled and poly.rater_id == "sloppy"  # outlines: the image stays visible
    assert np.allclose(poly.points[0], np.reshape(ring, (-1, 2)) / [640, 480])


def test_rle_segmentation(imp, tmp_path):
    from pycocotools import mask as mask_utils

    full = np.zeros((20, 30), dtype=np.uint8, order="F")
    full[5:15, 10:20] = 1
    rle = mask_utils.encode(full)
    rle["counts"] = rle["counts"].decode()
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": rle, "rater_id": "ann"}]
    images = [{"id": 1, "file_name": "a.jpg", "width": 30, "height": 20, "rater_list": ["ann", "bob"]}]
    path = write(tmp_path, small_coco(anns, images))
    ds = imp.import_multirater_coco(name(), path, label_types=["segmentations"])
    d = ds.first().raters_ann.detections[0]
    assert d.mask.shape == (10, 10) and d.mask.all()
    assert d.bounding_box == pytest.approx([10 / 30, 5 / 20, 10 / 30, 10 / 20])
    pl = imp.import_multirater_coco(name(), path, label_types=["segmentations"], use_polylines=True)
    pts = np.array(pl.first().raters_ann.polylines[0].points[0])
    assert pts[:, 0].min() == pytest.approx(10 / 30, abs=0.05) and pts[:, 1].max() == pytest.approx(15 / 20, abs=0.05)


def test_keypoints(imp, tmp_path):
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "rater_id": "ann", "bbox": [0, 0, 50, 50],
             "keypoints": [10, 20, 2, 0, 0, 0, 30, 40, 1]},
            {"id": 2, "image_id": 1, "category_id": 1, "rater_id": "bob", "keypoints": [12, 22, 2, 5, 5, 2, 0, 0, 0]}]
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns)), label_types=["keypoints"])
    one = ds.sort_by("coco_id").first()
    kp = one.raters_ann.keypoints[0]
    assert kp.points[0] == pytest.approx([0.1, 0.1]) and kp.points[2] == pytest.approx([0.3, 0.2])
    assert all(math.isnan(v) for v in kp.points[1])
    assert kp.visible == [2, 0, 1] and kp.label == "cat" and kp.rater_id == "ann"
    assert one.raters_bob.keypoints[0].visible == [2, 2, 0]


def test_invalid_json_names_the_annotation_and_writes_nothing(imp, tmp_path, fo_isolated, caplog):
    fo = fo_isolated
    anns = [{"id": 10, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40], "rater_id": "ann"},
            {"id": 77, "image_id": 2, "category_id": 1, "bbox": [10, 20, 30, 40], "rater_id": "bob"}]
    path = write(tmp_path, small_coco(anns))
    new = name()
    with pytest.raises(ValueError, match=r"annotation 77.*'bob'.*not in the image's rater_list") as err:
        imp.import_multirater_coco(new, path)
    assert "image 2" in str(err.value) and str(path) in str(err.value)
    assert not fo.dataset_exists(new)
    existing = fo.Dataset(name())
    with pytest.raises(ValueError, match="annotation 77"):
        imp.import_multirater_coco(existing, path)
    assert len(existing) == 0 and not existing.has_sample_field("raters_ann")
    skipped = imp.import_multirater_coco(existing, path, skip_invalid=True)
    assert len(skipped) == 2 and skipped.count("raters_ann.detections") == 1
    assert "skipped 1 invalid item(s)" in caplog.text


def test_yolo_folders(imp, tmp_path):
    root = tmp_path / "yolo"
    for rater, files in {"ann": {"img1": "0 0.5 0.5 0.2 0.4\n1 0.1 0.1 0.1 0.1\n", "img2": ""},
                         "bob": {"img1": "0 0.52 0.5 0.2 0.4\n"}}.items():
        (root / rater).mkdir(parents=True)
        for stem, text in files.items():
            (root / rater / f"{stem}.txt").write_text(text)
    (root / "classes.txt").write_text("cat\ndog\n")
    ds = imp.import_multirater_yolo(name(), root, image_sizes={"img1": (100, 50), "img2": (100, 50)})
    one, two = ds.sort_by("yolo_stem")
    assert one.rater_list == ["ann", "bob"] and two.rater_list == ["ann"]
    assert [d.label for d in one.raters_ann.detections] == ["cat", "dog"]
    assert one.raters_ann.detections[0].bounding_box == pytest.approx([0.4, 0.3, 0.2, 0.4])
    assert two.raters_ann.detections == [] and two.raters_bob is None
    assert one.metadata.width == 100
    attr = imp.import_multirater_yolo(name(), root, layout="rater_attribute")
    assert attr.count_values("raters.detections.rater_id") == {"ann": 2, "bob": 1}


def _requests(result):
    return [r["operator_uri"].split("/")[-1] for r in result.executor.to_json()["requests"]]


def test_operator_imports_into_the_dataset(demo, fo_isolated):
    import fiftyone.operators as foo

    fo = fo_isolated
    path, images, data = demo
    ds = fo.Dataset(name())
    res = foo.execute_operator(URI, dataset=ds.name, params={
        "labels_path": str(path), "data_path": str(images), "layout": "rater_attribute",
        "label_field": "gt", "label_types": ["detections", "keypoints"][:1]})
    assert res.error is None
    ds.reload()
    assert len(ds) == len(data["images"]) and ds.count("gt.detections") == len(data["annotations"])
    ops = _requests(res)
    assert "set_progress" in ops and "reload_dataset" in ops


def test_operator_form_errors(tmp_path, fo_isolated):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    ds = fo_isolated.Dataset(name())
    with pytest.raises(ExecutionError, match="no file at"):
        foo.execute_operator(URI, dataset=ds.name, params={"labels_path": str(tmp_path / "missing.json")})
    anns = [{"id": 77, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "bob"}]
    with pytest.raises(ExecutionError, match="annotation 77"):
        foo.execute_operator(URI, dataset=ds.name, params={"labels_path": str(write(tmp_path, small_coco(anns)))})
    good = tmp_path / "good.json"
    good.write_text(json.dumps(small_coco([])))
    with pytest.raises(ExecutionError, match="letters, digits"):
        foo.execute_operator(URI, dataset=ds.name, params={"labels_path": str(good), "label_field": "bad.name"})
    assert len(ds) == 0


def test_operator_raises_the_engine_message_for_big_files(tmp_path, fo_isolated, monkeypatch):
    """Files above the form-check size are validated in execute: a ValueError naming the ids."""
    import sys

    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    operator_module = type(foo.get_operator(URI)).__module__   # the plugin's own copy of the package:
    module = sys.modules[operator_module.replace("operators.importing", "fiftyone_layer.imports.coco")]
    monkeypatch.setattr(module, "VALIDATE_MAX_BYTES", 0)
    ds = fo_isolated.Dataset(name())
    anns = [{"id": 77, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "bob"}]
    with pytest.raises(ExecutionError, match="annotation 77"):
        foo.execute_operator(URI, dataset=ds.name, params={"labels_path": str(write(tmp_path, small_coco(anns)))})
    assert len(ds) == 0 and not ds.has_sample_field("raters_ann")


@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_imported_fields_feed_compute_agreement(imp, layout):
    """Contract with fiftyone_layer/adapter.py: rater names like ``rater_1`` (whose fields share the
    prefix ``raters_rater_``) come back unsanitised, and alpha equals the engine's on the json."""
    from kalos_core import AgreementConfig, compute_agreement, load_coco
    from kalos_core.demo_data import make_synthetic_boxes
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    data = make_synthetic_boxes(n_images=20, objects_per_image=6)
    ds = imp.import_multirater_coco(name(), data, layout=layout)
    if layout == "rater_fields":
        res = compute_agreement_run(ds, rater_fields=sorted(ds.info["kalos_import"]["rater_fields"]), bootstrap=0)
    else:
        res = compute_agreement_run(ds, label_field="raters", bootstrap=0)
    expected = compute_agreement(load_coco(data, "bbox"), AgreementConfig(threshold=0.5, bootstrap=0))
    assert res.mean_alpha == pytest.approx(expected.mean_alpha)
    assert sorted(ds.values("kalos_alpha")) == pytest.approx(sorted(expected.per_image_alpha.values()))


def test_operator_delegated_run_reports_progress(demo, fo_isolated):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService

    path, _, data = demo
    ds = fo_isolated.Dataset(name())
    res = foo.execute_operator(URI, dataset=ds.name, params={"labels_path": str(path)}, request_delegation=True)
    assert res.delegated and len(ds) == 0
    service = DelegatedOperationService()
    service.execute_queued_operations(dataset_name=ds.name)
    (op,) = service.list_operations(dataset_name=ds.name)
    assert op.run_state == "completed" and op.status.progress > 0.9
    ds.reload()
    assert len(ds) == len(data["images"]) and ds.count("raters_careful.detections") > 0


def test_many_raters_need_the_attribute_layout_and_it_scales(imp, tmp_path, fo_isolated):
    n = imp.MAX_RATER_FIELDS + 1
    raters = [f"r{k}" for k in range(n)]
    images = [{"id": i, "width": 100, "height": 100, "file_name": f"{i}.jpg", "rater_list": raters} for i in (1, 2)]
    anns = [{"id": 1 + k + n * (i - 1), "image_id": i, "category_id": 1, "bbox": [10, 10, 30, 30], "rater_id": r}
            for i in (1, 2) for k, r in enumerate(raters)]
    path = write(tmp_path, small_coco(anns, images=images))
    new = name()
    with pytest.raises(ValueError, match=rf"{n} raters: .* limited to {n - 1}.*'rater_attribute'"):
        imp.import_multirater_coco(new, path)
    assert not fo_isolated.dataset_exists(new)                      # refused before anything was created
    ds = imp.import_multirater_coco(new, path, layout="rater_attribute")
    assert len(ds) == 2 and len(ds.distinct("raters.detections.rater_id")) == n
    assert ds.get_field("raters.detections.rater_id") is not None  # attributes declared for the App


def test_label_attributes_are_declared_for_every_rater_field(imp, tmp_path, fo_isolated):
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "ann"},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "bob"},
            {"id": 3, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "cy"}]
    images = [{"id": i, "width": 10, "height": 10, "file_name": f"{i}.jpg", "rater_list": ["ann", "bob", "cy"]}
              for i in (1, 2)]
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns, images=images)))
    for r in ("ann", "bob", "cy"):
        assert type(ds.get_field(f"raters_{r}.detections.rater_id")).__name__ == "StringField"
        assert type(ds.get_field(f"raters_{r}.detections.coco_annotation_id")).__name__ == "IntField"
    assert not ds.get_dynamic_field_schema()                       # nothing left undeclared


def test_without_images_each_sample_gets_a_blank_image_of_its_size(imp, tmp_path, fo_isolated):
    from PIL import Image

    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "ann"},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "ann"}]
    images = [{"id": 1, "width": 64, "height": 48, "file_name": "a/one.jpg", "rater_list": ["ann"]},
              {"id": 2, "width": 30, "height": 70, "file_name": "two.jpg", "rater_list": ["ann"]}]
    folder = tmp_path / "blank"
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns, images=images)), placeholders=str(folder))
    paths = dict(zip(ds.values("coco_id"), ds.values("filepath")))
    assert paths == {1: str(folder / "a" / "one.png"), 2: str(folder / "two.png")}
    assert Image.open(paths[1]).size == (64, 48) and Image.open(paths[2]).size == (30, 70)
    assert ds.values("metadata.width") == [64, 30]
    # the default folder lives under FiftyOne's dataset directory; a refused import writes none
    again, refused = name(), tmp_path / "refused.json"
    refused.write_text(json.dumps(small_coco(anns + [dict(anns[0], id=3, rater_id="zed")], images=images)))
    with pytest.raises(ValueError):
        imp.import_multirater_coco(again, str(refused))
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.placeholders import (
        default_folder,
    )

    assert not os.path.exists(default_folder("refused"))
    assert not fo_isolated.dataset_exists(again)
    none = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns, images=images)), placeholders=False)
    assert not any(os.path.exists(p) for p in none.values("filepath"))


def test_coco_attributes_become_label_attributes_of_the_same_names(imp, tmp_path, fo_isolated):
    """An annotation's ``attributes`` (as CVAT's COCO export writes them) on its label, per rater field;
    a name the label itself uses is refused before anything is written."""
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40], "rater_id": "ann",
             "attributes": {"occluded": True, "pose": "standing", "parts": ["head", "tail"]}},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [11, 20, 30, 40], "rater_id": "bob",
             "attributes": {"occluded": False, "truncated": 0.25}},
            {"id": 3, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "rater_id": "ann"}]
    ds = imp.import_multirater_coco(name(), write(tmp_path, small_coco(anns)), placeholders=False)
    a = ds.match({"coco_id": 1}).first()
    got = a.raters_ann.detections[0]
    assert (got["occluded"], got["pose"], got["parts"]) == (True, "standing", ["head", "tail"])
    assert (a.raters_bob.detections[0]["occluded"], a.raters_bob.detections[0]["truncated"]) == (False, 0.25)
    schema = ds.get_field_schema(flat=True)   # declared for every field, not only the first one's
    assert {"raters_ann.detections.pose", "raters_bob.detections.truncated"} <= set(schema)
    anns[1]["attributes"] = {"label": "dog"}
    target = name()
    with pytest.raises(imp.ImportRefused, match=r"annotation 2 of image 1: its attribute 'label' has the name of "
                                                r"the label's own field"):
        imp.import_multirater_coco(target, write(tmp_path, small_coco(anns)))
    assert not fo_isolated.dataset_exists(target)
