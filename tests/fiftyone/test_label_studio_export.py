"""Label Studio JSON exports as Label Studio 1.x writes them, with what real projects hold: users
as objects, cancelled and per-region results, other region types, rotated and video regions.
Each figure is read off the file by hand (percent of a 640 x 480 image)."""

import copy
import json
import uuid

import pytest

from tests.fiftyone.helpers import import_tools

tools = import_tools()


def name():
    return f"kalos-ls-{uuid.uuid4().hex[:8]}"


def write(tmp_path, tasks):
    path = tmp_path / f"project-{uuid.uuid4().hex[:6]}-export.json"
    path.write_text(json.dumps(tasks, indent=2))
    return str(path)


def per_region(region_id, from_name, rtype, value):
    return {"id": region_id, "type": rtype, "from_name": from_name, "to_name": "image", "origin": "manual",
            "original_width": tools.W, "original_height": tools.H, "image_rotation": 0, "value": value}


def test_users_as_objects_and_per_region_results_become_named_attributes(imports, tmp_path):
    tasks = tools.label_studio()
    for t in tasks:   # newer exports: completed_by is the user object
        for a in t["annotations"]:
            a["completed_by"] = {"id": a["completed_by"], "first_name": "", "last_name": "",
                                 "email": ["alice@example.com", "bob@example.com"][a["completed_by"] - 1]}
    alice_a = tasks[0]["annotations"][0]["result"]
    rid = alice_a[0]["id"]
    alice_a += [per_region(rid, "occlusion", "choices", {"choices": ["partly"]}),
                per_region(rid, "plate", "textarea", {"text": ["AB 123"]}),
                per_region(rid, "quality", "rating", {"rating": 4}),
                per_region("whole-image", "scene", "choices", {"choices": ["indoor"]})]   # on no region
    ds = imports.import_label_studio(name(), write(tmp_path, tasks), placeholders=False)
    assert ds.info["kalos_import"]["rater_fields"] == {"raters_alice_example_com": "alice@example.com",
                                                       "raters_bob_example_com": "bob@example.com"}
    assert ds.info["kalos_import"]["left_out"] == {"drafts": 0, "cancelled": 0, "results on no region": 1}
    det = ds.match({"file_key": "3f2a9c1d-a.jpg"}).first().raters_alice_example_com.detections[0]
    assert (det.label, det["occlusion"], det["plate"], det["quality"]) == ("cat", "partly", "AB 123", 4)
    # alice's a.jpg box: x 10.5, y 20.25, 100 x 200 pixels of 640 x 480
    assert det.bounding_box == pytest.approx([10.5 / 640, 20.25 / 480, 100 / 640, 200 / 480])


def test_cancelled_ellipses_and_keypoints_are_counted_or_read(imports, tmp_path):
    tasks = tools.label_studio()
    tasks[1]["annotations"][1]["was_cancelled"] = True   # bob skipped b.jpg: not assigned there
    tasks[1]["annotations"][1]["result"] = []
    ellipse = per_region("e1", "shape", "ellipselabels", {"x": 50.0, "y": 50.0, "radiusX": 5.0, "radiusY": 3.0,
                                                          "rotation": 0, "ellipselabels": ["cat"]})
    tasks[0]["annotations"][1]["result"].append(ellipse)
    ds = imports.import_label_studio(name(), write(tmp_path, tasks), placeholders=False,
                                     rater_names={"1": "alice", "user 2": "bob"})
    assert ds.info["kalos_import"]["left_out"] == {"drafts": 0, "cancelled": 1, "ellipselabels results": 1}
    b = ds.match({"file_key": "3f2a9c1d-b.jpg"}).first()
    assert b.rater_list == ["alice"] and b.raters_bob is None
    a = ds.match({"file_key": "3f2a9c1d-a.jpg"}).first()
    assert len(a.raters_bob.detections) == 1   # the ellipse is counted, not drawn


@pytest.mark.parametrize("change, message", [
    (lambda r: r["value"].update(rotation=30), r"annotation 12 by user 2, region 'r0x9Qa' \(rectanglelabels\): "
                                               r"a rotated rectangle \(30 degrees\)"),
    (lambda r: r.update(type="videorectangle"), r"region 'r0x9Qa' \(videorectangle\): is a video region"),
    (lambda r: r["value"].pop("x"), r"region 'r0x9Qa' \(rectanglelabels\): lacks its 'x'"),
])
def test_regions_that_cannot_be_read_are_refused_naming_task_annotation_region(imports, tmp_path, fo_isolated,
                                                                              change, message):
    tasks = tools.label_studio()
    change(tasks[0]["annotations"][1]["result"][0])
    target, path = name(), write(tmp_path, tasks)
    with pytest.raises(imports.ImportRefused, match=r"task 1 \(3f2a9c1d-a.jpg\), " + message if "annotation" in
                       message else message) as e:
        imports.import_label_studio(target, path)
    assert path in str(e.value) and not fo_isolated.dataset_exists(target)


def test_rater_names_that_match_no_annotator_are_refused(imports, tmp_path, fo_isolated):
    target = name()
    with pytest.raises(imports.ImportRefused, match=r"rater_names names '3', which no export holds \(raters read: "
                                                    r"user 1, user 2\)"):
        imports.import_label_studio(target, write(tmp_path, tools.label_studio()), rater_names={"3": "carol"})
    assert not fo_isolated.dataset_exists(target)


def test_json_min_is_named_as_the_wrong_export(imports, tmp_path):
    rows = [{"image": "/data/upload/1/3f2a9c1d-a.jpg", "id": 1, "label": [copy.deepcopy(tools._ls_region(
        0, 0, 10.5, 20.25, 100.0, 200.0)["value"])], "annotator": "alice@example.com", "annotation_id": 11,
             "created_at": "2026-11-26T09:00:00.000000Z", "updated_at": "2026-11-26T09:00:00.000000Z",
             "lead_time": 12.5}]
    with pytest.raises(imports.ImportRefused, match="JSON-MIN export.*export the project as JSON"):
        imports.import_label_studio(name(), write(tmp_path, rows))


def test_the_import_operator_names_label_studio_users(imports, tmp_path, fo_isolated):
    import fiftyone.operators as foo

    path, target = write(tmp_path, tools.label_studio()), name()
    params = {"exports": [{"rater": "", "path": path, "format": "LabelStudioJSON"}], "target": "new",
              "new_dataset": target, "rater_names": "1=alice, 2=bob"}
    res = foo.execute_operator("@kalos/agreement/import_rater_exports", params=params)
    assert res.error is None, res.error
    assert fo_isolated.load_dataset(target).info["kalos_import"]["rater_fields"] == {"raters_alice": "alice",
                                                                                     "raters_bob": "bob"}
    from fiftyone.operators.executor import ExecutionError

    with pytest.raises(ExecutionError, match="Path: rater_names. Reason: rater names entry 'alice' is not KEY=NAME"):
        foo.execute_operator("@kalos/agreement/import_rater_exports",
                             params={**params, "new_dataset": name(), "rater_names": "alice"})   # a form error


def test_the_app_shows_a_region_without_width_in_words(imports, tmp_path, fo_isolated):
    """The operator fails with the refusal itself (its failure card shows ``str()`` of it), not a KeyError."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    tasks = tools.label_studio()
    tasks[0]["annotations"][1]["result"][0]["value"].pop("width")
    target = name()
    with pytest.raises(ExecutionError) as e:
        foo.execute_operator("@kalos/agreement/import_rater_exports", params={
            "exports": [{"rater": "", "path": write(tmp_path, tasks), "format": "LabelStudioJSON"}],
            "target": "new", "new_dataset": target})
    last = str(e.value).strip().splitlines()[-1]
    assert last.startswith("fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports.errors.ImportRefused: ")
    assert "region 'r0x9Qa' (rectanglelabels): lacks its 'width'" in last and "KeyError" not in str(e.value)
    assert not fo_isolated.dataset_exists(target)
