"""Rater exports as the annotation tools write them (COCO, CVAT, Label Studio) and what the import tests share."""

import copy
import json
import uuid

import numpy as np
import pytest

from .constants import COMPUTE


# -- rater exports as the annotation tools write them ------------------------------------------------

def new_name():
    return f"kalos-rex-{uuid.uuid4().hex[:8]}"


def coco_per_rater(data, rater):
    """One rater's plain COCO export of a multi-rater COCO dict (the images assigned to the rater)."""
    images = [{k: v for k, v in im.items() if k != "rater_list"} for im in data["images"] if rater in im["rater_list"]]
    anns = [{k: v for k, v in a.items() if k != "rater_id"} for a in data["annotations"] if a["rater_id"] == rater]
    return {"images": images, "annotations": anns, "categories": data["categories"]}


def dump(folder, name_, data):
    path = folder / name_
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def agreement_of(ds, fields):
    """The results of an agreement run ``kalos`` at threshold 0.5 over ``fields``."""
    import fiftyone.operators as foo

    res = foo.execute_operator(COMPUTE, dataset=ds.name, params={"rater_fields": fields, "run_key": "kalos",
                                                              "threshold": 0.5})
    assert res.error is None, res.error
    return ds.load_run_results("kalos")


def reference(data):
    """Per-image α (keyed by file name) and the run results of the multi-rater COCO import of ``data``."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_multirater_coco,
    )

    ds = import_multirater_coco(new_name(), data, placeholders=False)
    res = agreement_of(ds, ["raters_r1", "raters_r2"])
    files = {im["id"]: im["file_name"] for im in data["images"]}
    return {files[i]: a for i, a in zip(ds.values("coco_id"), ds.values("kalos_alpha"))}, res


def check_same_alpha(ds, lvis_reference, mean=0.6889, global_=0.6483):
    alpha, ref = lvis_reference
    res = agreement_of(ds, sorted(ds.info["kalos_import"]["rater_fields"]))
    got = dict(zip(ds.values("file_key"), ds.values("kalos_alpha")))
    assert got == pytest.approx(alpha, nan_ok=True)
    assert round(res.mean_alpha, 4) == round(ref.mean_alpha, 4) == mean
    assert round(res.global_alpha, 4) == round(ref.global_alpha, 4) == global_


def lvis_subset(path, n):
    """The multi-rater COCO dict of the first ``n`` images of the LVIS r1/r2 file."""
    data = json.loads(path.read_text())
    images = data["images"][:n]
    ids = {im["id"] for im in images}
    return {**data, "images": images, "annotations": [a for a in data["annotations"] if a["image_id"] in ids]}


def cvat_labels(data) -> str:
    """The ``<labels>`` of a CVAT meta: the categories of a COCO dict."""
    names = sorted({c["name"] for c in data["categories"]})
    return "<labels>" + "".join(f"<label><name>{n}</name><attributes/></label>" for n in names) + "</labels>"


def cvat_images(data, rater, first_id=0, extra="") -> list[str]:
    """The ``<image>`` elements of one rater's labels of a multi-rater COCO dict (boxes in pixels);
    ``extra``: more attributes of each image (a project export's ``subset`` and ``task_id``)."""
    from xml.sax.saxutils import quoteattr

    names = {c["id"]: c["name"] for c in data["categories"]}
    by_image: dict = {}
    for a in data["annotations"]:
        if a["rater_id"] == rater:
            by_image.setdefault(a["image_id"], []).append(a)
    lines = []
    for k, im in enumerate(i for i in data["images"] if rater in i["rater_list"]):
        lines.append(f'<image id="{first_id + k}" name={quoteattr(im["file_name"])}{extra} width="{im["width"]}" '
                     f'height="{im["height"]}">')
        for a in by_image.get(im["id"], []):
            x, y, w, h = a["bbox"]
            lines.append(f'<box label={quoteattr(names[a["category_id"]])} source="manual" occluded="0" '
                         f'xtl="{x!r}" ytl="{y!r}" xbr="{x + w!r}" ybr="{y + h!r}" z_order="0"></box>')
        lines.append("</image>")
    return lines


HEAD = ['<?xml version="1.0" encoding="utf-8"?>', "<annotations>", "<version>1.1</version>"]


DUMPED = "<dumped>2026-11-26 00:00:00+00:00</dumped>"


def whole_pixels(data):
    """``data`` with its box corners rounded to whole pixels, as FiftyOne's CVAT importer reads them
    (``CVATImageBox.from_box_dict``: ``int(round(float(xtl)))``)."""
    out = copy.deepcopy(data)
    for a in out["annotations"]:
        x, y, w, h = a["bbox"]
        a["bbox"] = [round(x), round(y), round(x + w) - round(x), round(y + h) - round(y)]
    return out


def label_studio_tasks(data, users=None):
    """A Label Studio JSON export of a multi-rater COCO dict: one task per image, one annotation per rater
    (``completed_by`` the user id, ``users`` {rater: id}), rectangles in percent of the image."""
    users = users or {r: k + 1 for k, r in enumerate(sorted({r for im in data["images"] for r in im["rater_list"]}))}
    names = {c["id"]: c["name"] for c in data["categories"]}
    tasks = []
    for t, im in enumerate(data["images"]):
        w, h = im["width"], im["height"]
        anns = []
        for r in im["rater_list"]:
            result = [{"id": f"{a['id']}", "type": "rectanglelabels", "from_name": "label", "to_name": "image",
                       "original_width": w, "original_height": h, "image_rotation": 0,
                       "value": {"x": a["bbox"][0] / w * 100, "y": a["bbox"][1] / h * 100,
                                 "width": a["bbox"][2] / w * 100, "height": a["bbox"][3] / h * 100,
                                 "rotation": 0, "rectanglelabels": [names[a["category_id"]]]}}
                      for a in data["annotations"] if a["image_id"] == im["id"] and a["rater_id"] == r]
            anns.append({"id": 1000 * t + users[r], "completed_by": users[r], "result": result,
                         "was_cancelled": False, "ground_truth": False})
        tasks.append({"id": t + 1, "data": {"image": f"/data/local-files/?d=lvis/{im['file_name']}"},
                      "annotations": anns, "drafts": [], "predictions": []})
    return tasks


def brush_rle(mask: np.ndarray) -> list[int]:
    """A mask as Label Studio's brush RLE (its RGBA pixels): by Label Studio's own encoder where it is
    installed (tests/labelstudio runs this with the Label Studio venv's SDK), else by the tests' writer
    of the same code (tests/core/test_masks_label_studio.py, checked against Label Studio's there)."""
    import importlib

    for module in ("label_studio_converter.brush", "label_studio_sdk.converter.brush"):
        try:
            brush = importlib.import_module(module)
        except ImportError:
            continue
        return brush.encode_rle(np.repeat(mask.ravel(), 4))
    from tests.core.helpers import ls_rle

    return ls_rle(mask > 0)


def check_label_studio_cancelled_polygons_and_brush_masks(rex, tmp_path):
    """A cancelled annotation is not an assignment; rectangles, polygons and brush masks read as
    detections, polylines and segmentations (``rex``: the rater-import module)."""
    mask = np.zeros((20, 40), np.uint8)
    mask[5:9, 10:16] = 255
    res = {"original_width": 40, "original_height": 20}
    rect = {**res, "type": "rectanglelabels",
            "value": {"x": 25, "y": 25, "width": 15, "height": 20, "rotation": 0, "rectanglelabels": ["cat"]}}
    poly = {**res, "type": "polygonlabels", "value": {"points": [[25, 25], [40, 25], [40, 45]],
                                                      "polygonlabels": ["cat"]}}
    paint = {**res, "type": "brushlabels", "value": {"format": "rle", "rle": brush_rle(mask),
                                                    "brushlabels": ["cat"]}}
    tasks = [{"id": 1, "data": {"image": "/data/upload/1/a.jpg"}, "annotations": [
        {"id": 1, "completed_by": {"id": 1, "email": "ann@x"}, "result": [rect, poly, paint]},
        {"id": 2, "completed_by": {"id": 2, "email": "bob@x"}, "result": [], "was_cancelled": True}]},
        {"id": 2, "data": {"image": "/data/upload/1/b.jpg"}, "annotations": [
            {"id": 3, "completed_by": {"id": 2, "email": "bob@x"}, "result": []}]},
        {"id": 3, "data": {"image": "/data/upload/1/c.jpg"}, "annotations": [   # an image both labelled
            {"id": 4, "completed_by": {"id": 1, "email": "ann@x"}, "result": []},
            {"id": 5, "completed_by": {"id": 2, "email": "bob@x"}, "result": []}]}]
    path = dump(tmp_path, "ls.json", tasks)
    with pytest.raises(ValueError, match="several kinds of labels .*detections, polylines, segmentations"):
        rex.import_label_studio(new_name(), path)
    got = {}
    for kind in ("detections", "polylines", "segmentations"):
        ds = rex.import_label_studio(new_name(), path, label_key=kind)
        a, b = (ds.match({"file_key": k}).first() for k in ("a.jpg", "b.jpg"))
        assert a.rater_list == ["ann@x"] and b.rater_list == ["bob@x"]   # bob skipped a.jpg: not assigned
        assert a["raters_bob_x"] is None and ds.info["kalos_import"]["left_out"]["cancelled"] == 1
        got[kind] = a["raters_ann_x"]
    assert got["detections"].detections[0].bounding_box == pytest.approx([0.25, 0.25, 0.15, 0.2])
    assert np.array(got["polylines"].polylines[0].points[0]) == pytest.approx(
        np.array([[0.25, 0.25], [0.4, 0.25], [0.4, 0.45]]))
    seg = got["segmentations"].detections[0]
    assert seg.bounding_box == pytest.approx([10 / 40, 5 / 20, 6 / 40, 4 / 20])
    assert seg.mask.shape == (4, 6) and seg.mask.all()
