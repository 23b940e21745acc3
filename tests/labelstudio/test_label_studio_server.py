"""A real Label Studio server (``make ls-setup``: its own venv, ``.venv-ls``, or ``KALOS_LS_VENV``): two
annotators draw the LVIS r1/r2 boxes of 20 images through the REST API, the project's JSON export comes
back through the API, and ``import_label_studio`` gives the per-image α of the multi-rater COCO file.

Skipped (with the reason) without the Label Studio venv or ../shared/data; the server: conftest.py."""

import json

import pytest

from tests.fiftyone.helpers import agreement_of as agreement, label_studio_tasks, lvis_subset, new_name as name, reference
from tests.labelstudio.server import LABEL_CONFIG, USERS

pytestmark = [pytest.mark.labelstudio, pytest.mark.realdata]
N_IMAGES = 20


def test_two_annotators_through_the_api_give_the_multirater_alpha(lvis_subset_path, rex, label_studio,
                                                                  tmp_path):
    data = lvis_subset(lvis_subset_path, N_IMAGES)
    user_ids = {r: label_studio.api("GET", "/api/current-user/whoami", user=r)["id"] for r in USERS}
    names = sorted({c["name"] for c in data["categories"]})
    project = label_studio.api("POST", "/api/projects/", body={
        "title": "KaLOS LVIS r1/r2", "label_config": LABEL_CONFIG.format("".join(f'<Label value="{n}"/>'
                                                                                  for n in names))})
    # the images as URLs (never fetched): the task's file name is what the import matches on
    tasks = label_studio_tasks(data, users=user_ids)
    imported = label_studio.api("POST", f"/api/projects/{project['id']}/import?return_task_ids=true",
                                body=[{"data": {"image": f"http://127.0.0.1/lvis/{im['file_name']}"}}
                                      for im in data["images"]])
    assert len(imported["task_ids"]) == N_IMAGES
    by_user = {uid: r for r, uid in user_ids.items()}
    for task_id, task in zip(imported["task_ids"], tasks):
        for ann in task["annotations"]:   # each rater's boxes, posted by that rater's own account
            label_studio.api("POST", f"/api/tasks/{task_id}/annotations/", user=by_user[ann["completed_by"]],
                             body={"result": ann["result"], "was_cancelled": False})

    export = label_studio.api("GET", f"/api/projects/{project['id']}/export?exportType=JSON&download_all_tasks=true")
    assert sorted(len(t["annotations"]) for t in export) == sorted(len(im["rater_list"]) for im in data["images"])
    path = tmp_path / "project.json"
    path.write_text(json.dumps(export))
    ds = rex.import_label_studio(name(), str(path), placeholders=False)
    fields = {f"raters_user_{i}": f"user {i}" for i in user_ids.values()}   # the export names users by id
    assert ds.info["kalos_import"]["rater_fields"] == fields
    assert sum(ds.count(f"{f}.detections") for f in fields) == len(data["annotations"])

    alpha, ref = reference(data)
    res = agreement(ds, sorted(fields))
    got = dict(zip(ds.values("file_key"), ds.values("kalos_alpha")))
    assert len(got) == N_IMAGES and got == pytest.approx(alpha, nan_ok=True)
    assert round(res.mean_alpha, 4) == round(ref.mean_alpha, 4) == 0.7096   # 20 images, both raters on each
