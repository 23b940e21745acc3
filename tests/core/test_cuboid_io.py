"""3D cuboids from COCO-style files (``--task cuboids``): reading, refusals naming the
annotation, and the command line end to end on a file with full-precision floats."""

import copy
import json
import math

import numpy as np
import pytest

from kalos_core.cli import main
from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.geometry.cuboids import rotation_matrices
from kalos_core.io import InvalidInputError, dataset_to_coco, load_coco, validate_dataset


def cuboid(location, dimensions, rotation):
    return {"location": [float(v) for v in location], "dimensions": [float(v) for v in dimensions],
            "rotation": [float(v) for v in rotation]}


def ann(aid, image, rater, cat, box):
    return {"id": aid, "image_id": image, "rater_id": rater, "category_id": cat, "cuboid": box}


def along(location, rotation, local):
    """``location`` moved by ``local`` in the frame of a box turned by ``rotation``."""
    return np.asarray(location) + rotation_matrices(np.array(rotation))[0] @ np.asarray(local)


def scenes():
    """Three scenes, raters a and b; IoU by hand at each pair (threshold 0.5):

    1. a car, b's copy moved a quarter of its length along its own x -> IoU 0.75 / 1.25 = 0.6;
       a pedestrian, b's turned a quarter turn about z (a square footprint) -> IoU 1: alpha 1;
    2. a car, b's copy moved half its length along its own x -> IoU 1/3: two units, alpha -0.5;
    3. a box turned about every axis inside b's upright cube of side 1.2 -> IoU 0.125 / 1.728
       = 0.0723 (the general path): two units, alpha -0.5.
    """
    car_loc, car_dim, car_rot = (12.345678901234567, -3.0000000000000004, 0.85), (4.5, 1.9, 1.6), (0.0, 0.0, 0.3)
    ped_loc, ped_dim, ped_rot = (2.2, 7.123456789, 0.9), (0.6, 0.6, 1.8), (0.0, 0.0, -1.2345678901234)
    turned = (0.3, 0.5, 0.7)
    return {
        "images": [{"id": k, "file_name": f"scene{k}.pcd", "rater_list": ["a", "b"]} for k in (1, 2, 3)],
        "categories": [{"id": 1, "name": "car"}, {"id": 2, "name": "pedestrian"}],
        "annotations": [
            ann(1, 1, "a", 1, cuboid(car_loc, car_dim, car_rot)),
            ann(2, 1, "b", 1, cuboid(along(car_loc, car_rot, (4.5 / 4, 0, 0)), car_dim, car_rot)),
            ann(3, 1, "a", 2, cuboid(ped_loc, ped_dim, ped_rot)),
            ann(4, 1, "b", 2, cuboid(ped_loc, ped_dim, (0.0, 0.0, ped_rot[2] + math.pi / 2))),
            ann(5, 2, "a", 1, cuboid(car_loc, car_dim, car_rot)),
            ann(6, 2, "b", 1, cuboid(along(car_loc, car_rot, (4.5 / 2, 0, 0)), car_dim, car_rot)),
            ann(7, 3, "a", 1, cuboid((5.0, 5.0, 1.0), (1.0, 0.5, 0.25), turned)),
            ann(8, 3, "b", 1, cuboid((5.0, 5.0, 1.0), (1.2, 1.2, 1.2), (0.0, 0.0, 0.0))),
        ],
    }


def test_reads_cuboids_in_scene_units():
    ds = load_coco(scenes(), "cuboids")
    assert ds.kind == "cuboids" and ds.n_annotations == 8 and ds.warnings == []
    a = ds.images[0].annotations[0]
    assert a.geometry == (12.345678901234567, -3.0000000000000004, 0.85, 4.5, 1.9, 1.6, 0.0, 0.0, 0.3)
    assert (ds.images[0].width, ds.images[0].height) == (1.0, 1.0)   # no image size needed
    back = load_coco(dataset_to_coco(ds), "cuboids")
    assert [x.geometry for im in back.images for x in im.annotations] == \
        [x.geometry for im in ds.images for x in im.annotations]


BAD = [
    ("no cuboid", lambda a: a.pop("cuboid"), "has no 'cuboid'"),
    ("not an object", lambda a: a.__setitem__("cuboid", [1, 2, 3]), "must be an object"),
    ("no rotation", lambda a: a["cuboid"].pop("rotation"), "has no 'rotation'"),
    ("no dimensions", lambda a: a["cuboid"].pop("dimensions"), "has no 'dimensions'"),
    ("two numbers", lambda a: a["cuboid"].__setitem__("location", [1.0, 2.0]), "location must be 3"),
    ("NaN dimension", lambda a: a["cuboid"]["dimensions"].__setitem__(0, float("nan")), "non-finite"),
    ("inf location", lambda a: a["cuboid"]["location"].__setitem__(2, float("inf")), "non-finite"),
    ("a word", lambda a: a["cuboid"]["rotation"].__setitem__(1, "up"), "rotation must be 3"),
    ("negative dimension", lambda a: a["cuboid"]["dimensions"].__setitem__(1, -1.9), "must be positive"),
    ("zero dimension", lambda a: a["cuboid"]["dimensions"].__setitem__(2, 0.0), "without volume"),
    ("volume underflows", lambda a: a["cuboid"].__setitem__("dimensions", [1e-200, 1e-200, 1.0]), "no usable volume"),
]


@pytest.mark.parametrize("what,mutate,message", BAD, ids=[b[0] for b in BAD])
def test_bad_cuboids_are_refused_naming_the_annotation(what, mutate, message):
    doc = scenes()
    mutate(doc["annotations"][3])
    with pytest.raises(InvalidInputError, match=message) as err:
        load_coco(doc, "cuboids")
    assert err.value.annotation_ids == [4]
    ds = load_coco(doc, "cuboids", skip_invalid=True)
    assert ds.n_annotations == 7 and [s["annotation_id"] for s in ds.skipped] == [4]


def test_numbers_written_as_strings_are_read_with_a_warning():
    doc = scenes()
    doc["annotations"][0]["cuboid"]["location"][0] = "12.5"
    ds = load_coco(doc, "cuboids")
    assert ds.images[0].annotations[0].geometry[0] == 12.5
    assert ds.warnings[0]["examples"] == ["annotation 1"]


def test_records_built_without_a_reader_are_checked_too():
    flat = Annotation(1, "a", 1, (0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0))
    ds = MultiRaterDataset([make_image(1, 1, 1, ["a", "b"], [flat])], {1: "car"}, "cuboids")
    with pytest.raises(InvalidInputError, match="must be positive"):
        validate_dataset(ds)


def test_cli_agreement_on_cuboids_end_to_end(tmp_path, capsys):
    path, out = tmp_path / "scenes.json", tmp_path / "out.json"
    path.write_text(json.dumps(scenes()))       # floats at full precision, as an export writes them
    rc = main(["agreement", str(path), "--task", "cuboids", "--lsa", "0.05,0.2,0.5", "--bootstrap", "0",
               "--output", str(out)])
    assert rc == 0, capsys.readouterr()
    res = json.loads(out.read_text())
    assert res["config"]["kind"] == "cuboids" and res["config"]["distance"] == "iou3d"
    assert res["per_image_alpha"] == {"1": 1.0, "2": pytest.approx(-0.5), "3": pytest.approx(-0.5)}
    assert res["mean_alpha"] == pytest.approx(0.0) and res["global_alpha"] == pytest.approx(0.0)
    # at 0.2 scene 2 (IoU 1/3) matches, scene 3 (0.0723) does not; at 0.05 both do
    assert res["lsa"] == {"0.05": pytest.approx(1.0), "0.2": pytest.approx(0.5), "0.5": pytest.approx(0.0)}
    assert main(["agreement", str(path), "--task", "cuboids", "--distance", "centroid_box", "--bootstrap", "0"]) == 0


def test_cli_refuses_a_distance_of_another_task(tmp_path, capsys):
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps(scenes()))
    with pytest.raises(SystemExit) as stop:
        main(["agreement", str(path), "--task", "cuboids", "--distance", "giou"])
    assert stop.value.code == 2 and "known: centroid_box, iou3d" in capsys.readouterr().err


def test_cli_names_a_degenerate_cuboid(tmp_path, capsys):
    doc = copy.deepcopy(scenes())
    doc["annotations"][5]["cuboid"]["dimensions"] = [4.5, 0.0, 1.6]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["agreement", str(path), "--task", "cuboids"]) == 2
    assert "annotation 6" in capsys.readouterr().err


def test_cli_calibrates_cuboids(tmp_path, capsys):
    path, out = tmp_path / "scenes.json", tmp_path / "cal.json"
    path.write_text(json.dumps(scenes()))
    assert main(["calibrate", str(path), "--task", "cuboids", "--bootstrap", "5", "--stratify",
                 "--output", str(out)]) == 0
    res = json.loads(out.read_text())
    assert set(res["distances"]) == {"iou3d", "centroid_box"} and res["kind"] == "cuboids"
