"""One export per rater in each detection format FiftyOne writes and reads (KITTI, VOC, CVAT image XML,
FiftyOne image detections), written by FiftyOne's own exporters from a data set whose α is known,
imported back (without the images, but KITTI, whose labels hold no image size): the same per-image α
as the data set they came from."""

import os
import uuid

import pytest
from PIL import Image

URI = "@kalos/agreement/compute_agreement"
#: YOLOv5 without its images: every labels file read, images named by stem (fiftyone_layer/yolov5.py)
FORMATS = ["KITTIDetectionDataset", "VOCDetectionDataset", "CVATImageDataset", "FiftyOneImageDetectionDataset",
           "YOLOv5Dataset"]


def alpha_by_stem(ds, fields, stem_of, key="k"):
    import fiftyone.operators as foo

    res = foo.execute_operator(URI, dataset=ds.name, params={"rater_fields": fields, "run_key": key, "threshold": 0.5})
    assert res.error is None, res.error
    return {stem_of(v): a for v, a in zip(ds.values("filepath" if stem_of is not str else "file_key"),
                                          ds.values(f"{key}_alpha"))}


@pytest.fixture(scope="module")
def source(fo_isolated, tmp_path_factory):
    """Six 200x100 images, two raters; whole-pixel boxes (every format keeps them), r2 shifted by 0-9 px and
    missing a box on one image; two classes."""
    folder = tmp_path_factory.mktemp("formats")
    ds = fo_isolated.Dataset(f"kalos-formats-{uuid.uuid4().hex[:8]}")
    for i in range(6):
        path = folder / f"img{i}.png"
        Image.new("RGB", (200, 100)).save(path)
        s = fo_isolated.Sample(filepath=str(path), metadata=fo_isolated.ImageMetadata(width=200, height=100))
        for r, jit in (("r1", 0), ("r2", 3)):
            dets = [fo_isolated.Detection(label=["cat", "dog"][k % 2], bounding_box=[
                (10 + 50 * k + jit * (k + i % 3)) / 200, (10 + 5 * k) / 100, 30 / 200, 40 / 100])
                for k in range(3 + i % 2 - (r == "r2" and i == 2))]
            s[f"raters_{r}"] = fo_isolated.Detections(detections=dets)
        ds.add_sample(s)
    stem = lambda p: os.path.splitext(os.path.basename(p))[0]  # noqa: E731
    alpha = alpha_by_stem(ds, ["raters_r1", "raters_r2"], stem)
    assert len(set(alpha.values())) > 2          # the case has disagreement to find
    return ds, folder, alpha


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_written_by_fiftyone_gives_the_alpha_of_its_source(source, fmt):
    import fiftyone as fo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    ds, folder, alpha = source
    exports = []
    for r in ("r1", "r2"):
        out = folder / f"{fmt}_{r}"
        ds.export(export_dir=str(out), dataset_type=getattr(fo.types, fmt), label_field=f"raters_{r}",
                  export_media=False, **({"classes": ["cat", "dog"]} if fmt == "YOLOv5Dataset" else {}))
        # KITTI labels carry no image size: its boxes are placed with the images' own
        exports.append((r, str(out), fmt) + ((str(folder),) if fmt == "KITTIDetectionDataset" else ()))
    got = rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}", exports, match_by="stem")
    assert sorted(got.info["kalos_import"]["rater_fields"]) == ["raters_r1", "raters_r2"]
    assert got.count("raters_r1.detections") == ds.count("raters_r1.detections")
    # the exports carry the source run's label attributes (k_unit, ...): the plugin never overwrites them
    assert alpha_by_stem(got, ["raters_r1", "raters_r2"], str, key="again") == pytest.approx(alpha)


def test_kitti_without_its_images_is_refused_with_the_reason(source):
    import fiftyone as fo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    ds, folder, _ = source
    out = folder / "kitti_alone"
    ds.export(export_dir=str(out), dataset_type=fo.types.KITTIDetectionDataset, label_field="raters_r1",
              export_media=False)
    with pytest.raises(ValueError, match="kitti_alone: KITTI labels hold pixel boxes but no image size: give the "
                                         "images folder"):
        rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}",
                                          [("r1", str(out), "KITTIDetectionDataset")], match_by="stem")


def test_yolov5_with_its_images_is_read_by_fiftyones_importer(source):
    """A full YOLOv5 export (dataset.yaml, images/val, labels/val): FiftyOne's importer reads it, the
    class names from the YAML, the images matched by file name."""
    import fiftyone as fo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    ds, folder, alpha = source
    exports = []
    for r in ("r1", "r2"):
        out = folder / f"yolo_full_{r}"
        ds.export(export_dir=str(out), dataset_type=fo.types.YOLOv5Dataset, label_field=f"raters_{r}",
                  classes=["cat", "dog"])
        exports.append((r, str(out), "YOLOv5Dataset"))
    got = rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}", exports)
    assert sorted(got.distinct("raters_r1.detections.label")) == ["cat", "dog"]
    assert all(os.path.isfile(p) for p in got.values("filepath"))        # the export's own images
    stem = lambda p: os.path.splitext(os.path.basename(p))[0]  # noqa: E731
    assert alpha_by_stem(got, ["raters_r1", "raters_r2"], stem, key="again") == pytest.approx(alpha)


def test_yolov5_labels_alone_need_stems(source):
    import fiftyone as fo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    ds, folder, _ = source
    yolo = folder / "yolo_alone"
    ds.export(export_dir=str(yolo), dataset_type=fo.types.YOLOv5Dataset, label_field="raters_r1",
              export_media=False, classes=["cat", "dog"])
    with pytest.raises(ValueError, match="yolo_alone: the images of this YOLOv5 export are not here.*match by stem"):
        rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}", [("r1", str(yolo), "YOLOv5Dataset")])
    empty = folder / "yolo_empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="yolo_empty: no YOLOv5 labels files"):
        rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}", [("r1", str(empty), "YOLOv5Dataset")],
                                          match_by="stem")


def test_image_less_exports_match_by_path_whatever_the_export_is_called(tmp_path, fo_isolated):
    """Two COCO exports named differently whose images sit in sub-folders: matched by the path in the
    export, not by the export's own name."""
    import json

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    images = [{"id": i, "file_name": f"{d}/a.jpg", "width": 100, "height": 80} for i, d in ((1, "day"), (2, "night"))]
    exports = []
    for r, shift in (("ann", 0), ("bob", 40)):
        anns = [{"id": i, "image_id": i, "category_id": 1, "bbox": [10 + shift * (i == 2), 10, 30, 20], "area": 600,
                 "iscrowd": 0} for i in (1, 2)]
        path = tmp_path / f"{r}_export.json"
        path.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "c"}]}))
        exports.append((r, str(path), "COCODetectionDataset"))
    got = rater_import.import_rater_exports(f"kalos-fmt-{uuid.uuid4().hex[:8]}", exports, match_by="path")
    assert sorted(got.values("file_key")) == ["day/a.jpg", "night/a.jpg"]
    assert sorted(map(sorted, got.values("rater_list"))) == [["ann", "bob"], ["ann", "bob"]]
