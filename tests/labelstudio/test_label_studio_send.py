"""Sending a review queue to a real Label Studio server (conftest.py), the cases a new user meets: a queue
of more than Label Studio's 100 files per request (its default DATA_UPLOAD_MAX_NUMBER_FILES), a send that
fails half-way (it must leave no annotation run and no project behind), and the key the next form proposes."""

import uuid

import pytest
from PIL import Image

from tests.fiftyone.helpers import form_errors, resolved_form
from tests.labelstudio.server import USERS

pytestmark = [pytest.mark.labelstudio]
TOKEN = USERS["r1"][1]


def _dataset(fo, folder, n, missing=()):
    """``n`` samples with real 8x6 PNG files (the ``missing`` indices: no file), all in saved view "queue"."""
    folder.mkdir(parents=True, exist_ok=True)
    samples = []
    for i in range(n):
        path = folder / f"img{i:04d}.png"
        if i not in missing:
            Image.new("RGB", (8, 6), (i % 256, 0, 0)).save(path)
        samples.append(fo.Sample(filepath=str(path)))
    ds = fo.Dataset(f"kalos-ls-send-{uuid.uuid4().hex[:8]}")
    ds.add_samples(samples)
    ds.save_view("queue", ds.view())
    return ds


def _titles(server) -> list[str]:
    projects = server.api("GET", "/api/projects/?page_size=1000")
    return [p["title"] for p in (projects["results"] if isinstance(projects, dict) else projects)]


def test_a_queue_of_more_than_100_images_is_sent_whole(fo_isolated, label_studio, label_studio_sdk, tmp_path):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr

    ds = _dataset(fo_isolated, tmp_path / "images", 130)
    results = lsr.send_review_to_label_studio(ds, "queue", "round2", label_studio.url, TOKEN, ["cat"])
    assert sorted(results.uploaded_tasks.values()) == sorted(ds.values("id"))
    assert label_studio.api("GET", f"/api/projects/{results.project_id}")["task_number"] == 130
    task_id, sample_id = max(results.uploaded_tasks.items())   # the last batch's tasks map to their samples
    image = label_studio.api("GET", f"/api/tasks/{task_id}")["data"]["image"]
    assert image.endswith(f"img{ds[sample_id].filepath[-8:-4]}.png")
    form = resolved_form("send_to_label_studio", ds)   # the next send proposes a free key
    assert form["anno_key"].default == "round3" and not form_errors(form)


def test_a_failed_send_leaves_nothing_behind(fo_isolated, label_studio, label_studio_sdk, tmp_path, monkeypatch):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    monkeypatch.delenv("FIFTYONE_LABELSTUDIO_API_KEY", raising=False)
    ds = _dataset(fo_isolated, tmp_path / "images", 3, missing={2})   # the project is made, then a file fails
    before = _titles(label_studio)
    with pytest.raises(SetupError, match=r"^1 of the 3 image files to send do not exist \(.*img0002.png\)"):
        lsr.send_review_to_label_studio(ds, "queue", "round2", label_studio.url, TOKEN, ["cat"])
    assert ds.list_annotation_runs() == [] and _titles(label_studio) == before
    form = resolved_form("send_to_label_studio", ds, api_key=TOKEN)   # the form says so when it opens
    assert "img0002.png" in form_errors(form).get("view_name", ""), form_errors(form)
    Image.new("RGB", (8, 6)).save(ds.values("filepath")[2])
    with pytest.raises(SetupError, match=f"^Label Studio at {label_studio.url} refused the API token \\(HTTP 401\\): "
                                         "copy the token from Account & Settings"):   # nothing made either
        lsr.send_review_to_label_studio(ds, "queue", "round2", label_studio.url, "not-a-token", ["cat"])
    assert ds.list_annotation_runs() == [] and _titles(label_studio) == before
    assert not ds.has_sample_field("round2" + lsr.UPLOAD_SUFFIX)
    form = resolved_form("send_to_label_studio", ds, api_key=TOKEN)
    assert form["anno_key"].default == "round2" and not form_errors(form)
