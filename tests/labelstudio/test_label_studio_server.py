"""A real Label Studio server (``make ls-setup``: its own venv, ``.venv-ls``, or ``KALOS_LS_VENV``): two
annotators draw the LVIS r1/r2 boxes of 20 images through the REST API, the project's JSON export comes
back through the API, and ``import_label_studio`` gives the per-image α of the multi-rater COCO file.

Skipped (with the reason) without the Label Studio venv or ../shared/data. The data dir is a copy of a
template made once per venv (``label-studio init`` twice: the migrations, and two users with tokens),
kept under the venv dir, so only the first run pays the migrations."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.fiftyone.test_rater_exports import (  # noqa: F401
    agreement,
    label_studio_tasks,
    name,
    reference,
    rex,
)

pytestmark = [pytest.mark.labelstudio, pytest.mark.realdata]

#: throw-away accounts of a server that listens on 127.0.0.1 only, for the length of the test session
USERS = {"r1": ("rater1@kalos.test", "kalos-rater1-token"), "r2": ("rater2@kalos.test", "kalos-rater2-token")}
PASSWORD = "kalos-test-pw"
N_IMAGES = 20
LABEL_CONFIG = ('<View><Image name="image" value="$image"/><RectangleLabels name="label" toName="image">'
                '{}</RectangleLabels></View>')


def _venv() -> Path:
    venv = Path(os.environ.get("KALOS_LS_VENV") or REPO_ROOT / ".venv-ls")
    if not (venv / "bin" / "label-studio").exists():
        pytest.skip(f"no Label Studio at {venv}/bin/label-studio: run `make ls-setup` (or set KALOS_LS_VENV)")
    return venv


def _env(data_dir) -> dict:
    return {**os.environ, "DJANGO_DB": "sqlite", "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
            "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false",
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true"}


def _template(venv: Path) -> Path:
    """An initialised data dir (migrations applied, the two users and their tokens), made once per venv."""
    template = venv / "kalos-ls-template"
    if template.is_dir():
        return template
    partial = venv / f"kalos-ls-template.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for email, token in USERS.values():   # the first init migrates and makes the organisation; the second joins it
        with open(partial / "init.log", "a") as log:
            rc = subprocess.run([venv / "bin" / "label-studio", "init", "--quiet", "--data-dir", partial,
                                 "--username", email, "--password", PASSWORD, "--user-token", token,
                                 "--enable-legacy-api-token", "--agree-fix-sqlite"], check=False, env=_env(partial),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=3600).returncode
        assert rc == 0, f"label-studio init failed ({rc}); see {partial}/init.log"
    partial.rename(template)
    return template


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, url):
        self.url = url

    def api(self, method, path, user=None, body=None):
        """The JSON answer of one REST call as ``user`` (a key of USERS; default the first)."""
        token = USERS[user or "r1"][1]
        req = urllib.request.Request(self.url + path, method=method, headers={
            "Authorization": f"Token {token}", "Content-Type": "application/json"},
            data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path} as {user or 'r1'}: {e.code} {e.read()[:500]!r}") from None


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    venv = _venv()
    data_dir = tmp_path_factory.mktemp("label-studio") / "data"
    shutil.copytree(_template(venv), data_dir)
    port, log_path = _free_port(), data_dir.parent / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([venv / "bin" / "label-studio", "start", "--no-browser", "--host", "127.0.0.1",
                                 "--internal-host", "127.0.0.1", "--port", str(port), "--data-dir", data_dir],
                                env=_env(data_dir), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url, start = f"http://127.0.0.1:{port}", time.monotonic()
    try:
        while True:
            assert proc.poll() is None, f"label-studio exited with {proc.returncode}; see {log_path}"
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                    if json.loads(resp.read()).get("status") == "UP":
                        break
            except OSError:
                pass
            assert time.monotonic() - start < 300, f"label-studio not up within 300 s; see {log_path}"
            time.sleep(1)
        print(f"label-studio up in {time.monotonic() - start:.0f} s")
        yield Server(url)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def lvis_subset(path, n=N_IMAGES):
    """The multi-rater COCO dict of the first ``n`` images of the LVIS r1/r2 file."""
    data = json.loads(path.read_text())
    images = data["images"][:n]
    ids = {im["id"] for im in images}
    return {**data, "images": images, "annotations": [a for a in data["annotations"] if a["image_id"] in ids]}


def test_two_annotators_through_the_api_give_the_multirater_alpha(lvis_subset_path, rex, label_studio,  # noqa: F811
                                                                  tmp_path):
    data = lvis_subset(lvis_subset_path)
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
