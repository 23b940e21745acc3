"""tests/labelstudio's one helpers module: the real Label Studio server, once per test session, and what
the tests post to it. Its session fixtures (``label_studio``, ``label_studio_sdk``) are taken by
tests/labelstudio and tests/e2e alike, so tests/conftest.py loads this module as a plugin
(``pytest_plugins``) rather than a folder's conftest.py holding them. The server runs from its own venv
(``make ls-setup``: ``.venv-ls``, or ``KALOS_LS_VENV``) on a copy of a data-dir template made once per
venv (``label-studio init`` twice: the migrations, and two users with tokens), so only the first run
pays the migrations; FiftyOne's Label Studio backend takes its SDK (``label_studio_sdk``) from that
venv when FiftyOne's has none."""

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.fiftyone.helpers import label_studio_tasks

REPO_ROOT = Path(__file__).resolve().parents[2]

#: throw-away accounts of a server that listens on 127.0.0.1 only, for the length of the test session
USERS = {"r1": ("rater1@kalos.test", "kalos-rater1-token"), "r2": ("rater2@kalos.test", "kalos-rater2-token")}
PASSWORD = "kalos-test-pw"
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


@pytest.fixture(scope="session")
def label_studio_sdk(tmp_path_factory):
    """``label_studio_sdk`` importable next to FiftyOne (FiftyOne's backend needs it): the plugin's venv's
    own, else the Label Studio venv's package put on ``sys.path`` alone, with each module its legacy
    client imports that the plugin's venv lacks (``jwt``, ``lxml``, ... as that SDK version needs)."""
    shim = site = None
    if importlib.util.find_spec("label_studio_sdk") is None:
        site = next((_venv() / "lib").glob("python*/site-packages"))
        shim = tmp_path_factory.mktemp("ls-sdk")
        _link(site, shim, "label_studio_sdk")
        sys.path.append(str(shim))
    error = None
    for _ in range(20):
        importlib.invalidate_caches()
        try:
            import label_studio_sdk

            label_studio_sdk.Client  # noqa: B018  (FiftyOne's backend uses the legacy client)
            return label_studio_sdk
        except ImportError as e:
            error = e
            missing = re.search(r"No module named '([\w]+)", str(e))
            if shim is None or missing is None or not _link(site, shim, missing.group(1)):
                break
            for name in [m for m in sys.modules if m == "label_studio_sdk" or m.startswith("label_studio_sdk.")]:
                del sys.modules[name]
    pytest.skip(f"FiftyOne's Label Studio backend: label_studio_sdk does not import here ({error}); "
                "pip install label-studio-sdk")


def _link(site: Path, shim: Path, name: str) -> bool:
    """Link the top-level module ``name`` (a package or a one-file module) and its dist-info from the
    Label Studio venv's ``site`` into ``shim``; False when that venv has no such module."""
    found = [p for p in (site / name, site / f"{name}.py") if p.exists()] + list(site.glob(f"{name}.*.so"))
    if not found or (shim / found[0].name).exists():
        return False
    for path in found + list(site.glob(f"{name}-*.dist-info")):
        (shim / path.name).symlink_to(path)
    return True


def file_names(ds, data):
    """{sample id: LVIS file name}."""
    names = {im["id"]: im["file_name"] for im in data["images"]}
    return {sid: names[c] for sid, c in zip(ds.values("id"), ds.values("coco_id"))}


def post_round1_boxes(server, results, ds, data, user_ids, label_field):
    """Each rater's round-1 boxes of each task's image, posted by that rater's own account."""
    by_file = {im["file_name"]: t for im, t in zip(data["images"], label_studio_tasks(data, users=user_ids))}
    files = file_names(ds, data)
    by_user = {uid: r for r, uid in user_ids.items()}
    for task_id, sample_id in results.uploaded_tasks.items():
        for ann in by_file[files[sample_id]]["annotations"]:
            result = [{**r, "from_name": label_field, "to_name": "image"} for r in ann["result"]]
            server.api("POST", f"/api/tasks/{task_id}/annotations/", user=by_user[ann["completed_by"]],
                       body={"result": result, "was_cancelled": False})
