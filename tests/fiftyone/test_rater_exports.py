"""One export per rater in formats FiftyOne reads (COCO, CVAT image XML, VOC), without the images:
the same α as the multi-rater COCO import on LVIS r1/r2 (skipped without ../shared/data), not
assigned vs nothing drawn, and the refusals, checked before anything is written."""

import json
import os
import uuid

import pytest

URI = "@kalos/agreement/compute_agreement"


@pytest.fixture(scope="module")
def rex(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.operators import rater_import

    return rater_import


def name():
    return f"kalos-rex-{uuid.uuid4().hex[:8]}"


def coco_per_rater(data, rater):
    """One rater's plain COCO export of a multi-rater COCO dict (the images assigned to the rater)."""
    images = [{k: v for k, v in im.items() if k != "rater_list"} for im in data["images"] if rater in im["rater_list"]]
    anns = [{k: v for k, v in a.items() if k != "rater_id"} for a in data["annotations"] if a["rater_id"] == rater]
    return {"images": images, "annotations": anns, "categories": data["categories"]}


def small(rater_boxes, images=(("a.jpg", 100, 200), ("b.jpg", 100, 200))):
    """A tiny COCO export: ``rater_boxes`` {file name: [[x, y, w, h], ...]} over ``images``."""
    ims = [{"id": i + 1, "file_name": f, "width": w, "height": h} for i, (f, w, h) in enumerate(images)]
    ids = {f: i + 1 for i, (f, _, _) in enumerate(images)}
    anns = [{"id": k + 1, "image_id": ids[f], "category_id": 1, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for k, (f, b) in enumerate((f, b) for f, boxes in rater_boxes.items() for b in boxes)]
    return {"images": ims, "annotations": anns, "categories": [{"id": 1, "name": "cat"}]}


def dump(folder, name_, data):
    path = folder / name_
    path.write_text(json.dumps(data))
    return str(path)


def agreement(ds, fields):
    import fiftyone.operators as foo

    res = foo.execute_operator(URI, dataset=ds.name, params={"rater_fields": fields, "run_key": "kalos",
                                                              "threshold": 0.5})
    assert res.error is None, res.error
    return ds.load_run_results("kalos")


@pytest.fixture(scope="module")
def lvis_reference(fo_isolated, lvis_subset_path):
    """Per-image α of the multi-rater COCO import of LVIS r1/r2, keyed by file name."""
    from fiftyone.plugins.orgs.kalos.agreement.operators.importing import (
        import_multirater_coco,
    )

    ds = import_multirater_coco(name(), str(lvis_subset_path), placeholders=False)
    res = agreement(ds, ["raters_r1", "raters_r2"])
    files = {im["id"]: im["file_name"] for im in json.loads(lvis_subset_path.read_text())["images"]}
    alpha = {files[i]: a for i, a in zip(ds.values("coco_id"), ds.values("kalos_alpha"))}
    return alpha, res


def check_same_alpha(ds, lvis_reference):
    alpha, ref = lvis_reference
    res = agreement(ds, sorted(ds.info["kalos_import"]["rater_fields"]))
    got = dict(zip(ds.values("file_key"), ds.values("kalos_alpha")))
    assert got == pytest.approx(alpha, nan_ok=True)
    assert round(res.mean_alpha, 4) == round(ref.mean_alpha, 4) == 0.6889
    assert round(res.global_alpha, 4) == round(ref.global_alpha, 4) == 0.6483


@pytest.mark.realdata
def test_lvis_as_two_coco_exports_gives_the_multirater_alpha(rex, lvis_subset_path, lvis_reference, tmp_path):
    data = json.loads(lvis_subset_path.read_text())
    exports = [(r, dump(tmp_path, f"{r}.json", coco_per_rater(data, r)), "COCODetectionDataset") for r in ("r1", "r2")]
    ds = rex.import_rater_exports(name(), exports, placeholders=False)
    assert len(ds) == 200 and ds.info["kalos_import"]["rater_fields"] == {"raters_r1": "r1", "raters_r2": "r2"}
    assert ds.count("raters_r1.detections") + ds.count("raters_r2.detections") == len(data["annotations"])
    assert ds.first().metadata.width == next(im["width"] for im in data["images"]
                                            if im["file_name"] == ds.first().file_key)
    check_same_alpha(ds, lvis_reference)


def test_a_rater_without_the_image_is_not_assigned_and_an_empty_one_drew_nothing(rex, tmp_path):
    ann = dump(tmp_path, "ann.json", small({"a.jpg": [[10, 20, 30, 40]], "b.jpg": []}))
    bob = dump(tmp_path, "bob.json", small({"a.jpg": [[12, 20, 30, 40], [50, 50, 10, 10]]},
                                           images=(("a.jpg", 100, 200),)))
    ds = rex.import_rater_exports(name(), [("ann", ann, "COCODetectionDataset"),
                                           ("bob", bob, "fiftyone.types.COCODetectionDataset")])
    a, b = (ds.match({"file_key": k}).first() for k in ("a.jpg", "b.jpg"))
    assert a.rater_list == ["ann", "bob"] and b.rater_list == ["ann"]
    assert b.raters_bob is None and b.raters_ann.detections == []   # not assigned vs nothing drawn
    got = [v for d in a.raters_bob.detections for v in d.bounding_box]
    assert got == pytest.approx([0.12, 0.1, 0.3, 0.2, 0.5, 0.25, 0.1, 0.05])
    assert a.raters_ann.detections[0].rater_id == "ann" and (a.metadata.width, a.metadata.height) == (100, 200)
    assert os.path.isfile(a.filepath)   # a blank image of the export's size stands in


def test_refusals_name_the_fault_and_write_nothing(rex, tmp_path, fo_isolated):
    ok = dump(tmp_path, "ok.json", small({"a.jpg": [[1, 1, 5, 5]]}))
    seg = small({"a.jpg": [[1, 1, 5, 5]]})
    seg["annotations"][0]["segmentation"] = [[1, 1, 6, 1, 6, 6]]
    seg = dump(tmp_path, "seg.json", seg)
    other = dump(tmp_path, "big.json", small({"a.jpg": []}, images=(("a.jpg", 300, 200), ("b.jpg", 100, 200))))
    cases = [([("a", ok, "COCODetectionDataset"), ("a", ok, "COCODetectionDataset")], "named for two exports"),
             ([("a", ok, "COCODetectionDataset"), ("b", other, "COCODetectionDataset")], "'a.jpg' has different sizes"),
             ([("a", ok, "NoSuchDataset")], "is not a labelled image format"),
             ([("a", str(tmp_path / "missing.json"), "COCODetectionDataset")], "no export at"),
             ([("a", seg, "COCODetectionDataset")], "several kinds of labels")]
    for exports, message in cases:
        target = name()
        kwargs = {"label_types": ["detections", "segmentations"]} if "several" in message else {}
        with pytest.raises(ValueError, match=message):
            rex.import_rater_exports(target, exports, **kwargs)
        assert not fo_isolated.dataset_exists(target)
    ds = rex.import_rater_exports(name(), [("a", ok, "COCODetectionDataset")])
    with pytest.raises(ValueError, match=r"already in dataset .*file_key \['a.jpg'"):
        rex.import_rater_exports(ds, [("a", ok, "COCODetectionDataset")])
    assert len(ds) == 2
    rex.import_rater_exports(ds, [("a", ok, "COCODetectionDataset")], on_existing="skip")
    assert len(ds) == 2


def test_the_operator_imports_into_a_new_dataset(rex, tmp_path, fo_isolated):
    import fiftyone.operators as foo

    ann = dump(tmp_path, "ann.json", small({"a.jpg": [[10, 20, 30, 40]], "b.jpg": []}))
    target = name()
    res = foo.execute_operator("@kalos/agreement/import_rater_exports", params={
        "exports": [{"rater": "ann", "path": ann, "format": "COCODetectionDataset"}],
        "target": "new", "new_dataset": target})
    assert res.error is None, res.error
    assert fo_isolated.load_dataset(target).count("raters_ann.detections") == 1
