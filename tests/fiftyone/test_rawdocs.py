"""The importer's raw documents equal what FiftyOne's own add_samples() stores for the same labels.

The expected dataset is built here with FiftyOne's public API only (fo.Sample, fo.Detection,
fo.Polyline, fo.Keypoint, add_samples), independently of fiftyone_layer/imports.
"""

import json
import math
import uuid

import pytest

IMAGES = [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 200, "rater_list": ["ann", "bob"]},
          {"id": 2, "file_name": "b.jpg", "width": 50, "height": 40, "rater_list": ["ann", "bob"]},
          {"id": 3, "file_name": "c.jpg", "width": 64, "height": 64, "rater_list": ["bob"]}]
POLY = [[10, 10, 40, 12, 30, 44, 12, 30]]
ANNS = [
    {"id": 7, "image_id": 1, "category_id": 1, "rater_id": "ann", "bbox": [10, 10, 30, 34], "area": 700,
     "segmentation": POLY, "keypoints": [10, 20, 2, 0, 0, 0, 30, 40, 1]},
    {"id": 8, "image_id": 1, "category_id": 2, "rater_id": "bob", "bbox": [11, 9, 29, 35], "area": 700,
     "segmentation": POLY, "keypoints": [12, 22, 2, 5, 5, 2, 0, 0, 0]},
    {"id": 9, "image_id": 2, "category_id": 1, "rater_id": "bob", "bbox": [10, 10, 30, 20], "area": 300,
     "segmentation": [[10, 10, 40, 10, 40, 30, 10, 30]], "keypoints": [1, 2, 2, 3, 4, 2, 5, 6, 2]},
]
CATS = [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]
VOLATILE = {"_id", "_rand", "created_at", "last_modified_at", "_dataset_id"}


def expected_dataset(fo, layout):
    """What FiftyOne itself stores for the same json, built with its public API."""
    ds = fo.Dataset(f"kalos-expected-{uuid.uuid4().hex[:8]}")
    names = {c["id"]: c["name"] for c in CATS}
    samples = []
    for im in IMAGES:
        w, h = im["width"], im["height"]
        s = fo.Sample(filepath=f"/data/{im['file_name']}", rater_list=im["rater_list"], coco_id=im["id"],
                      metadata=fo.ImageMetadata(width=w, height=h))
        per = {t: {r: [] for r in im["rater_list"]} for t in ("detections", "segmentations", "keypoints")}
        for a in (a for a in ANNS if a["image_id"] == im["id"]):
            attrs = {"label": names[a["category_id"]], "rater_id": a["rater_id"], "coco_annotation_id": a["id"]}
            x, y, bw, bh = a["bbox"]
            per["detections"][a["rater_id"]].append(
                fo.Detection(bounding_box=[x / w, y / h, bw / w, bh / h], **attrs))
            rings = [[(r[i] / w, r[i + 1] / h) for i in range(0, len(r), 2)] for r in a["segmentation"]]
            per["segmentations"][a["rater_id"]].append(fo.Polyline(points=rings, closed=True, filled=False, **attrs))
            g = a["keypoints"]
            pts = [(g[i] / w, g[i + 1] / h) if g[i + 2] > 0 else (math.nan, math.nan) for i in range(0, len(g), 3)]
            per["keypoints"][a["rater_id"]].append(fo.Keypoint(points=pts, visible=list(g[2::3]), **attrs))
        for t, cls, lname in (("detections", fo.Detections, "detections"),
                              ("segmentations", fo.Polylines, "polylines"), ("keypoints", fo.Keypoints, "keypoints")):
            if layout == "rater_fields":
                for r, labels in per[t].items():
                    s[f"raters_{t}_{r}"] = cls(**{lname: labels})
            else:
                s[f"raters_{t}"] = cls(**{lname: [x for labels in per[t].values() for x in labels]})
        samples.append(s)
    ds.add_samples(samples)
    ds.add_dynamic_sample_fields()
    return ds


def _docs(fo, ds):
    import fiftyone.core.odm as foo
    coll = foo.get_db_conn()[ds._sample_collection_name]
    return {d["coco_id"]: _strip(d) for d in coll.find({})}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return x


def _schema(ds):
    flat = ds.get_field_schema(flat=True)
    return {k: (type(v).__name__, getattr(v, "document_type", None), type(getattr(v, "field", None)).__name__)
            for k, v in flat.items()}


@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_raw_documents_equal_fiftyones_own(fo_isolated, tmp_path, layout):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"images": IMAGES, "annotations": ANNS, "categories": CATS}))
    got = import_multirater_coco(f"kalos-raw-{uuid.uuid4().hex[:8]}", str(path), data_path="/data", layout=layout,
                                 label_types=["detections", "segmentations", "keypoints"], use_polylines=True)
    want = expected_dataset(fo_isolated, layout)
    assert _docs(fo_isolated, got) == _docs(fo_isolated, want)
    assert _schema(got) == _schema(want)
    assert got.media_type == "image" and len(got) == 3
    # FiftyOne reads them back as its own objects
    s = got.match({"coco_id": 1}).first()
    field = "raters_keypoints_ann" if layout == "rater_fields" else "raters_keypoints"
    assert isinstance(s[field], fo_isolated.Keypoints) and s[field].keypoints[0].visible == [2, 0, 1]
    if layout == "rater_fields":
        assert got.count_values("raters_detections_bob.detections.label") == {"dog": 1, "cat": 1}
    else:
        assert got.count_values("raters_detections.detections.rater_id") == {"ann": 1, "bob": 2}
