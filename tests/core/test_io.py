"""Reading multi-rater COCO and YOLO; invalid input names the ids at fault."""

import json

import pytest

from kalos_core.io import InvalidInputError, dataset_to_coco, load_coco, load_yolo


def coco():
    return {
        "images": [{"id": 1, "width": 100, "height": 50, "rater_list": ["a", "b"]},
                   {"id": 2, "width": 100, "height": 50, "rater_list": ["a", "b"]}],
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10],
             "segmentation": [[0, 0, 10, 0, 10, 10, 0, 10]]},
            {"id": 11, "image_id": 1, "category_id": 1, "rater_id": "b", "bbox": [1, 0, 10, 10],
             "segmentation": [[1, 0, 11, 0, 11, 10, 1, 10]]},
        ],
        "categories": [{"id": 1, "name": "cat"}],
    }


def test_loads_boxes_and_polygons():
    ds = load_coco(coco(), "bbox")
    assert ds.kind == "box" and ds.n_annotations == 2 and ds.raters == ["a", "b"]
    assert ds.images[1].annotations == []          # assigned, drew nothing
    seg = load_coco(coco(), "segm")
    assert seg.kind == "polygon" and seg.images[0].annotations[0].geometry[0][2] == 10


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["images"][0].pop("rater_list"), "image 1: image has no 'rater_list'"),
    (lambda d: d["annotations"][1].update(rater_id="zed"), "annotation 11, rater 'zed': rater is not in"),
    (lambda d: d["annotations"][0].update(bbox=[0, 0, float("nan"), 3]), "annotation 10, rater 'a': bbox has a non-finite"),
    (lambda d: d["annotations"][0].update(bbox=[0, 0, 0, 3]), "annotation 10, rater 'a': bbox has non-positive size"),
    (lambda d: d["annotations"][1].update(category_id=99), "annotation 11, rater 'b': unknown category_id 99"),
])
def test_invalid_input_names_the_culprit(mutate, fragment):
    d = coco()
    mutate(d)
    with pytest.raises(InvalidInputError) as err:
        load_coco(d, "bbox")
    assert fragment in str(err.value)


def test_short_polygon_is_rejected_and_skip_invalid_counts_it():
    d = coco()
    d["annotations"][0]["segmentation"] = [[0, 0, 10, 0]]
    with pytest.raises(InvalidInputError, match="annotation 10.*fewer than 3 points"):
        load_coco(d, "segm")
    ds = load_coco(d, "segm", skip_invalid=True)
    assert ds.n_annotations == 1 and len(ds.skipped) == 1 and ds.skipped[0]["annotation_id"] == 10


def test_sessions_become_rows_and_open_world_classes_are_read():
    d = coco()
    d["images"][0]["rater_list"] = {"a": [0, 1], "b": [0]}
    d["images"][0]["rater_categories"] = {"b (S0)": [1]}
    for a in d["annotations"]:
        a["session_id"] = 0
    ds = load_coco(d, "bbox")
    im = ds.images[0]
    assert im.raters == ("a (S0)", "a (S1)", "b (S0)")
    assert im.base_rater("a (S1)") == "a"
    assert im.rater_classes == {"b (S0)": frozenset({1})}


def test_roundtrip_to_coco(tmp_path):
    ds = load_coco(coco(), "bbox")
    path = tmp_path / "x.json"
    path.write_text(json.dumps(dataset_to_coco(ds)))
    again = load_coco(path, "bbox")
    assert [a.geometry for a in again.images[0].annotations] == [a.geometry for a in ds.images[0].annotations]


def test_yolo_folders(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "bob").mkdir()
    (tmp_path / "classes.txt").write_text("cat\ndog\n")
    (tmp_path / "alice" / "img1.txt").write_text("0 0.5 0.5 0.2 0.2\n1 0.1 0.1 0.1 0.1\n")
    (tmp_path / "bob" / "img1.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (tmp_path / "bob" / "img2.txt").write_text("")
    ds = load_yolo(tmp_path)
    assert ds.categories == {0: "cat", 1: "dog"}
    assert [im.raters for im in ds.images] == [("alice", "bob"), ("bob",)]
    assert ds.images[0].annotations[0].geometry == pytest.approx((0.4, 0.4, 0.2, 0.2))
    (tmp_path / "bob" / "img2.txt").write_text("5 0.5 0.5 0.2 0.2\n")
    with pytest.raises(InvalidInputError, match="image img2, annotation bob/img2:0"):
        load_yolo(tmp_path)


def test_degenerate_bbox_does_not_reject_a_polygon():
    d = coco()
    d["annotations"][0]["bbox"] = [0, 0, 0, 0]     # the polygon is what counts for segm
    ds = load_coco(d, "segm")
    assert ds.n_annotations == 2
    assert ds.images[0].annotations[0].bbox == (0, 0, 10, 10)   # taken from the polygon instead


def test_rater_listed_twice_is_one_row():
    d = coco()
    d["images"][0]["rater_list"] = ["a", "b", "a"]
    assert load_coco(d, "bbox").images[0].raters == ("a", "b")
