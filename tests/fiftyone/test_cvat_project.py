"""A CVAT project export (CVAT for images 1.1) whose tasks are replicas over the same frames: one
rater per task, each task read by FiftyOne's CVAT importer, image-less. LVIS r1/r2 as one project
export gives the α of the two job XMLs (skipped without ../shared/data); a small hand-checked
project runs without it; the refusals name the task at fault."""

import json

import pytest

from tests.fiftyone.helpers import (
    DUMPED,
    HEAD,
    agreement_of as agreement,
    check_same_alpha,
    cvat_images,
    cvat_labels,
    dump,
    new_name as name,
    reference,
    whole_pixels,
)


def renamed_copies(data, k):
    """``data`` with every file name as CVAT's project export writes the ``k``-th copy (0: the first,
    as uploaded) of an image uploaded to several tasks of one subset: ``a.jpg`` -> ``a_1.jpg``, ``a_2.jpg``."""
    if not k:
        return data
    images = [{**im, "file_name": "{}_{}.{}".format(*im["file_name"].rsplit(".", 1)[:1], k,
                                                    im["file_name"].rsplit(".", 1)[1])} for im in data["images"]]
    return {**data, "images": images}


def cvat_project_xml(data, tasks, renamed=True):
    """A project export of a multi-rater COCO dict as CVAT writes it: ``<meta><project>`` with its
    labels and ``<tasks>`` (``tasks``: ``(task id, rater, assignee?)``, one task per rater with one
    job), every image with its ``subset`` and ``task_id``, image ids running on across the tasks, and
    (``renamed``) the later tasks' copies of an image renamed as CVAT does (``_1``, ``_2``, ...)."""
    metas, images = [], []
    for k, (task_id, rater, assigned) in enumerate(tasks):
        n = sum(rater in im["rater_list"] for im in data["images"])
        who = f"<assignee><username>{rater}</username><email/></assignee>" if assigned else "<assignee></assignee>"
        metas.append(f"<task><id>{task_id}</id><name>replica {rater}</name><size>{n}</size><mode>annotation</mode>"
                     f"<overlap>0</overlap><bugtracker></bugtracker><subset>default</subset>"
                     f"<start_frame>0</start_frame><stop_frame>{n - 1}</stop_frame><frame_filter></frame_filter>"
                     f"<segments><segment><id>{task_id}</id><start>0</start><stop>{n - 1}</stop>"
                     f"<url>http://localhost:8080/api/jobs/{task_id}</url></segment></segments>"
                     f"<owner><username>admin</username><email></email></owner>{who}</task>")
        copies = renamed_copies(data, k if renamed else 0)
        images += cvat_images(copies, rater, len(images), f' subset="default" task_id="{task_id}"')
    meta = (f"<meta><project><id>3</id><name>replicas</name><bugtracker></bugtracker>{cvat_labels(data)}"
            f"<tasks>{''.join(metas)}</tasks><owner><username>admin</username><email></email></owner>"
            f"<assignee></assignee></project>{DUMPED}</meta>")
    return "\n".join([*HEAD, meta, *images, "</annotations>"])


def tiny():
    """a.jpg (100x200): both raters draw the same cat box; b.jpg: a cat box against a dog box in the
    same place; c.jpg: ann's only (task 2 not assigned), nothing drawn."""
    images = [{"id": i + 1, "file_name": f, "width": 100, "height": 200, "rater_list": r}
              for i, (f, r) in enumerate((("a.jpg", ["ann", "2"]), ("b.jpg", ["ann", "2"]), ("c.jpg", ["ann"])))]
    box = [10, 20, 30, 60]
    anns = [{"id": k + 1, "image_id": im, "category_id": c, "bbox": box, "rater_id": r}
            for k, (im, c, r) in enumerate(((1, 1, "ann"), (1, 1, "2"), (2, 1, "ann"), (2, 2, "2")))]
    return {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}


def test_a_project_export_is_one_rater_per_task_hand_checked(rex, tmp_path):
    path = dump(tmp_path, "annotations.xml", cvat_project_xml(tiny(), [(11, "ann", True), (12, "2", False)]))
    ds = rex.import_cvat_replicas(name(), [path], placeholders=False)
    # task 11's assignee; task 12 has none: its name
    assert ds.info["kalos_import"]["rater_fields"] == {"raters_ann": "ann", "raters_replica_2": "replica 2"}
    a, b, c = (ds.match({"file_key": k}).first() for k in ("a.jpg", "b.jpg", "c.jpg"))
    assert a.rater_list == ["ann", "replica 2"] and c.rater_list == ["ann"]
    assert c.raters_replica_2 is None and c.raters_ann.detections == []   # not assigned vs nothing drawn
    assert a.raters_ann.detections[0].bounding_box == pytest.approx([0.1, 0.1, 0.3, 0.3])
    assert [d.label for d in b.raters_replica_2.detections] == ["dog"]
    res = agreement(ds, ["raters_ann", "raters_replica_2"])
    # a: [[cat], [cat]] -> 1; b: [[cat], [dog]] -> 0; global over the units (cat, cat), (cat, dog):
    # n = 4, o_cat,cat = 2, n_cat = 3: ((4 - 1) * 2 - 3 * 2) / (4 * 3 - 3 * 2) = 0
    alpha = dict(zip(ds.values("file_key"), ds.values("kalos_alpha")))
    assert (alpha["a.jpg"], alpha["b.jpg"]) == (1.0, 0.0)
    assert res.global_alpha == pytest.approx(0.0)


def test_a_project_export_refusals_name_the_fault(rex, tmp_path, fo_isolated):
    data = tiny()
    one = dump(tmp_path, "one.xml", cvat_project_xml(data, [(11, "ann", True)]))
    split = {"images": [{**im, "rater_list": ["ann"]} for im in data["images"][:2]]
             + [{**im, "id": im["id"] + 10, "file_name": "other_" + im["file_name"], "rater_list": ["2"]}
                for im in data["images"][:2]],
             "annotations": [a for a in data["annotations"] if a["rater_id"] == "ann"]
             + [{**a, "image_id": a["image_id"] + 10} for a in data["annotations"] if a["rater_id"] == "2"],
             "categories": data["categories"]}
    disjoint = dump(tmp_path, "disjoint.xml", cvat_project_xml(split, [(11, "ann", True), (12, "2", True)]))
    both = dump(tmp_path, "both.xml", cvat_project_xml(data, [(11, "ann", True), (12, "2", True)]))
    cases = [([(None, one, "CVATImageDataset")], "holds 1 task with images: one rater"),
             ([(None, disjoint, "CVATImageDataset")], r"task 11 \('replica ann'\) .* shares no image"),
             ([("bob", both, "CVATImageDataset")], "is a CVAT project export: its raters are")]
    for exports, message in cases:
        target = name()
        with pytest.raises(ValueError, match=message):
            rex.import_rater_exports(target, exports)
        assert not fo_isolated.dataset_exists(target)


@pytest.mark.realdata
def test_lvis_as_one_cvat_project_export_gives_the_alpha_of_two_job_xmls(rex, lvis_subset_path, tmp_path):
    data = json.loads(lvis_subset_path.read_text())
    path = dump(tmp_path, "annotations.xml", cvat_project_xml(data, [(7, "r1", True), (8, "r2", True)]))
    ds = rex.import_rater_exports(name(), [(None, path, "CVATImageDataset")], placeholders=False)
    assert ds.info["kalos_import"]["rater_fields"] == {"raters_r1": "r1", "raters_r2": "r2"}
    assert ds.count("raters_r1.detections") + ds.count("raters_r2.detections") == len(data["annotations"])
    # the same whole-pixel boxes as the two job XMLs: mean 0.6861, global 0.6457
    check_same_alpha(ds, reference(whole_pixels(data)), mean=0.6861, global_=0.6457)
    # task 8's copies were written 000000000776_1.jpg, ...: matched back to task 7's frames
    assert sorted(ds.values("file_key")) == sorted(im["file_name"] for im in data["images"])


def test_cvat_renaming_is_undone_per_subset_with_its_collisions(rex, tmp_path):
    """Three replica tasks (ids 4, 9, 12) written as CVAT's project export names them: in task 9 the
    copy of ``a.jpg`` is ``a_1.jpg``; ``x_1.jpg`` is an upload of its own next to ``x.jpg``, so the copy
    of ``x.jpg`` is ``x_1_1.jpg`` and so is the copy of ``x_1.jpg`` (CVAT counts uploads, not the names
    it made: two images of one name); task 12 is in another subset: nothing renamed there. ``x`` holds
    a box at the top left, ``x_1`` one at the bottom right, in every task: no copy is swapped."""
    boxes = {"a": (10, 20, 40, 80), "x": (10, 20, 40, 80), "x_1": (50, 100, 90, 190)}
    uploads = {4: ("default", ["a.jpg", "x.jpg", "x_1.jpg"]), 9: ("default", ["a_1.jpg", "x_1_1.jpg", "x_1_1.jpg"]),
               12: ("Validation", ["a.jpg", "x.jpg", "x_1.jpg"])}
    metas, images = [], []
    for tid, (subset, names) in uploads.items():
        metas.append(f"<task><id>{tid}</id><name>replica {tid}</name><size>3</size><mode>annotation</mode>"
                     f"<overlap>0</overlap><bugtracker></bugtracker><subset>{subset}</subset><start_frame>0"
                     f"</start_frame><stop_frame>2</stop_frame><frame_filter></frame_filter><segments><segment>"
                     f"<id>{tid}</id><start>0</start><stop>2</stop><url>http://localhost:8080/api/jobs/{tid}</url>"
                     f"</segment></segments><owner><username>admin</username><email></email></owner>"
                     f"<assignee><username>u{tid}</username><email></email></assignee></task>")
        for i, (n, uploaded) in enumerate(zip(names, ("a", "x", "x_1"))):
            x0, y0, x1, y1 = boxes[uploaded]
            images.append(f'<image id="{len(images)}" name="{n}" subset="{subset}" task_id="{tid}" width="100" '
                          f'height="200"><box label="cat" source="manual" occluded="0" xtl="{x0:.2f}" '
                          f'ytl="{y0:.2f}" xbr="{x1:.2f}" ybr="{y1:.2f}" z_order="0"></box></image>')
    labels = "<labels><label><name>cat</name><color>#fa3253</color><type>any</type><attributes/></label></labels>"
    meta = (f"<meta><project><id>3</id><name>replicas</name><bugtracker></bugtracker>{labels}<tasks>{''.join(metas)}"
            f"</tasks><owner><username>admin</username><email></email></owner><assignee></assignee></project>"
            f"{DUMPED}</meta>")
    dump(tmp_path, "annotations.xml", "\n".join([*HEAD, meta, *images, "</annotations>"]))
    ds = rex.import_cvat_replicas(name(), [str(tmp_path)], placeholders=False)   # the unzipped export folder
    assert sorted(ds.values("file_key")) == ["a.jpg", "x.jpg", "x_1.jpg"]
    for s in ds:
        assert s.rater_list == ["u4", "u9", "u12"]
        x0, y0, x1, y1 = boxes[s.file_key[:-4]]
        want = pytest.approx([x0 / 100, y0 / 200, (x1 - x0) / 100, (y1 - y0) / 200])
        assert [s[f"raters_u{t}"].detections[0].bounding_box for t in (4, 9, 12)] == [want] * 3, s.file_key


def test_the_import_operator_reads_a_project_export_with_the_rater_left_empty(rex, tmp_path, fo_isolated):
    import fiftyone.operators as foo

    path = dump(tmp_path, "annotations.xml", cvat_project_xml(tiny(), [(11, "ann", True), (12, "2", False)]))
    target = name()
    res = foo.execute_operator("@kalos/agreement/import_rater_exports", params={
        "exports": [{"rater": "", "path": path, "format": "CVATImageDataset"}], "target": "new",
        "new_dataset": target})
    assert res.error is None, res.error
    ds = fo_isolated.load_dataset(target)
    assert sorted(ds.info["kalos_import"]["rater_fields"].values()) == ["ann", "replica 2"]
    assert ds.count("raters_ann.detections") == 2 and ds.count("raters_replica_2.detections") == 2
