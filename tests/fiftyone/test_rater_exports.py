"""One export per rater in formats FiftyOne reads (COCO, CVAT image XML, VOC), without the images:
the same α as the multi-rater COCO import on LVIS r1/r2 (skipped without ../shared/data), not
assigned vs nothing drawn, and the refusals, checked before anything is written."""

import json
import os

import pytest

from tests.fiftyone.helpers import (
    check_label_studio_cancelled_polygons_and_brush_masks,
    check_same_alpha,
    coco_per_rater,
    DUMPED,
    HEAD,
    cvat_images,
    cvat_labels,
    dump,
    label_studio_tasks,
    new_name as name,
    reference,
    whole_pixels,
)


def small(rater_boxes, images=(("a.jpg", 100, 200), ("b.jpg", 100, 200))):
    """A tiny COCO export: ``rater_boxes`` {file name: [[x, y, w, h], ...]} over ``images``."""
    ims = [{"id": i + 1, "file_name": f, "width": w, "height": h} for i, (f, w, h) in enumerate(images)]
    ids = {f: i + 1 for i, (f, _, _) in enumerate(images)}
    anns = [{"id": k + 1, "image_id": ids[f], "category_id": 1, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for k, (f, b) in enumerate((f, b) for f, boxes in rater_boxes.items() for b in boxes)]
    return {"images": ims, "annotations": anns, "categories": [{"id": 1, "name": "cat"}]}


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


def cvat_xml(data, rater, job_id, assignee=True):
    """One rater's CVAT-for-images 1.1 job export of a multi-rater COCO dict (boxes in pixels)."""
    who = f"<assignee><username>{rater}</username><email/></assignee>" if assignee else ""
    n = len(data["images"])
    meta = (f"<meta><job><id>{job_id}</id><size>{n}</size><mode>annotation</mode><overlap>0</overlap>"
            f"<start_frame>0</start_frame><stop_frame>{n - 1}</stop_frame>{cvat_labels(data)}{who}</job>{DUMPED}"
            "</meta>")
    return "\n".join([*HEAD, meta, *cvat_images(data, rater), "</annotations>"])


@pytest.mark.realdata
def test_lvis_as_two_cvat_replica_jobs_gives_the_multirater_alpha_of_whole_pixel_boxes(rex, lvis_subset_path,
                                                                                      tmp_path):
    data = json.loads(lvis_subset_path.read_text())
    xmls = [dump(tmp_path, f"job_{j}.xml", cvat_xml(data, r, j)) for j, r in ((7, "r1"), (8, "r2"))]
    anonymous = dump(tmp_path, "job_9.xml", cvat_xml(data, "r2", 9, assignee=False))
    assert rex.cvat_rater(anonymous) == "job 9" and rex.cvat_rater(xmls[0]) == "r1"
    ds = rex.import_cvat_replicas(name(), xmls, placeholders=False)
    assert ds.info["kalos_import"]["rater_fields"] == {"raters_r1": "r1", "raters_r2": "r2"}   # the assignees
    assert ds.count("raters_r1.detections") + ds.count("raters_r2.detections") == len(data["annotations"])
    # FiftyOne reads CVAT boxes in whole pixels: the α of the LVIS boxes rounded so (9 of 200 images change;
    # mean 0.6889 -> 0.6861, global 0.6483 -> 0.6457)
    check_same_alpha(ds, reference(whole_pixels(data)), mean=0.6861, global_=0.6457)


@pytest.mark.realdata
def test_lvis_as_two_label_studio_annotations_per_task_gives_the_multirater_alpha(rex, lvis_subset_path,
                                                                                  lvis_reference, tmp_path):
    data = json.loads(lvis_subset_path.read_text())
    tasks = label_studio_tasks(data)
    tasks[0]["drafts"] = [{"id": 9, "result": [], "user": "x@y"}]   # a draft is not a rater's labels
    path = dump(tmp_path, "project.json", tasks)
    ds = rex.import_label_studio(name(), path, placeholders=False)
    assert ds.info["kalos_import"]["rater_fields"] == {"raters_user_1": "user 1", "raters_user_2": "user 2"}
    assert ds.info["kalos_import"]["left_out"] == {"drafts": 1, "cancelled": 0}
    assert ds.count("raters_user_1.detections") + ds.count("raters_user_2.detections") == len(data["annotations"])
    check_same_alpha(ds, lvis_reference)
    named = rex.import_label_studio(name(), path, placeholders=False, rater_names={"user 1": "r1", "user 2": "r2"})
    assert named.info["kalos_import"]["rater_fields"] == {"raters_r1": "r1", "raters_r2": "r2"}
    check_same_alpha(named, lvis_reference)


def test_label_studio_cancelled_is_not_assigned_polygons_and_brush_masks(rex, tmp_path):
    check_label_studio_cancelled_polygons_and_brush_masks(rex, tmp_path)


def test_a_voc_folder_and_a_coco_file_meet_on_the_file_stem_without_images(rex, tmp_path):
    """FiftyOne's VOC (KITTI, YOLO) importers name images by the labels file's stem: match by stem."""
    (tmp_path / "voc" / "labels").mkdir(parents=True)
    (tmp_path / "voc" / "labels" / "a.xml").write_text(
        "<annotation><filename>a.jpg</filename><size><width>100</width><height>200</height><depth>3</depth></size>"
        "<object><name>cat</name><bndbox><xmin>10</xmin><ymin>20</ymin><xmax>40</xmax><ymax>60</ymax></bndbox>"
        "</object></annotation>")
    ann = dump(tmp_path, "ann.json", small({"a.jpg": [[10, 20, 30, 40]], "b.jpg": []}))
    ds = rex.import_rater_exports(name(), [("bob", str(tmp_path / "voc"), "VOCDetectionDataset"),
                                           ("ann", ann, "COCODetectionDataset")], match_by="stem")
    a = ds.match({"file_key": "a"}).first()
    assert a.rater_list == ["bob", "ann"] and ds.match({"file_key": "b"}).first().rater_list == ["ann"]
    assert a.raters_bob.detections[0].bounding_box == pytest.approx(a.raters_ann.detections[0].bounding_box)
    assert a.raters_bob.detections[0].bounding_box == pytest.approx([0.1, 0.1, 0.3, 0.2])
