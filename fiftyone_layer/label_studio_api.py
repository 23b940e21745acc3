"""A second round in Label Studio, the server side: samples out through FiftyOne's annotation API
(``annotate(..., backend="labelstudio")``), every annotator's annotation back through the Label
Studio API.

FiftyOne's ``load_annotations`` keeps one annotation per task; a round of several raters needs all
of them, so the project's tasks are read with the project export (the documented JSON task format,
the same converter as :func:`fiftyone_layer.imports.label_studio.read_label_studio`), each annotator by the
user's email. Both need FiftyOne's Label Studio backend, which needs ``label-studio-sdk`` installed
next to FiftyOne.

Uploads go in batches of :data:`UPLOAD_BATCH` images: FiftyOne sends all of a run's files in one
request, and Label Studio refuses more than ``DATA_UPLOAD_MAX_NUMBER_FILES`` (default 100) files in
one request with an HTTP 500. A send that fails leaves nothing behind: its annotation run and the
Label Studio project it made are deleted. Before anything is made, every image file is checked and the
server is asked who the token belongs to, so that a missing file, a wrong URL or a refused token is a
message in words, not a traceback half-way through the send.
"""

from __future__ import annotations

import importlib
import os
import threading
from contextlib import contextmanager

from .errors import SetupError
from .imports.label_studio import read_label_studio

#: the SDK release the round is tested with (Label Studio 1.23.2's); FiftyOne asks for >= 1.0
SDK_VERSION = "2.1.2"
#: what FiftyOne's backend (the SDK's legacy client) imports beyond the SDK; ``--no-deps`` because the
#: SDK's own pins would downgrade OpenCV (and numpy) in FiftyOne's environment
SDK_INSTALL = f"pip install --no-deps label-studio-sdk=={SDK_VERSION} lxml pyjwt appdirs"
#: images per upload request: below Label Studio's default cap of 100 files per request
UPLOAD_BATCH = 50
_UPLOAD_LOCK = threading.Lock()


def sdk_problem() -> str | None:
    """Why FiftyOne's Label Studio backend cannot run here (the SDK or a module its client needs is
    missing, and the command that installs it without touching numpy or OpenCV), else None."""
    try:
        sdk = importlib.import_module("label_studio_sdk")
        sdk.Client  # noqa: B018  (FiftyOne's backend uses the SDK's legacy client)
    except ImportError as e:
        missing = getattr(e, "name", None) or getattr(e.__cause__, "name", None) or str(e)
        return (f"The Label Studio SDK is not usable next to FiftyOne (missing: {missing}). Install it into "
                f"FiftyOne's environment with `{SDK_INSTALL}` (--no-deps keeps numpy and OpenCV as they "
                "are), then restart the App.")
    return None


def _check_sdk() -> None:
    problem = sdk_problem()
    if problem:
        raise SetupError(problem)


def missing_files(view, shown: int = 3) -> str | None:
    """Why ``view``'s images cannot be sent (some image files do not exist), naming the first ``shown``
    and how many, else None."""
    paths = view.values("filepath")
    gone = [p for p in paths if not os.path.isfile(p)]
    if not gone:
        return None
    more = f" and {len(gone) - shown} more" if len(gone) > shown else ""
    return (f"{len(gone)} of the {len(paths)} image files to send do not exist ({', '.join(gone[:shown])}{more}): "
            "Label Studio gets the images themselves; put the files back where the samples point (or re-import "
            "the labels with placeholder images) and send again")


def check_server(url: str, api_key: str) -> None:
    """Ask Label Studio at ``url`` whose ``api_key`` is; a :class:`SetupError` in words when nothing
    answers there or it refuses the token."""
    import requests

    whoami = url.rstrip("/") + "/api/current-user/whoami"
    try:
        answer = requests.get(whoami, headers={"Authorization": f"Token {api_key}"}, timeout=30)
    except requests.RequestException as e:
        raise SetupError(f"no Label Studio answers at {url} ({type(e).__name__}): start it (`label-studio start`) "
                         "or correct the URL", "url") from None
    if answer.status_code in (401, 403):
        raise SetupError(f"Label Studio at {url} refused the API token (HTTP {answer.status_code}): copy the token "
                         "from Account & Settings > Legacy token in Label Studio (legacy tokens must be on: "
                         "Organization > Access Token Settings)", "api_key")
    if answer.status_code != 200 or "json" not in answer.headers.get("Content-Type", ""):
        raise SetupError(f"{url} does not answer as Label Studio does (HTTP {answer.status_code} for "
                         "/api/current-user/whoami): correct the URL (e.g. http://localhost:8080)", "url")


def default_api_key() -> str | None:
    """The Label Studio API key FiftyOne reads from its config or ``FIFTYONE_LABELSTUDIO_API_KEY``."""
    import fiftyone as fo

    return os.environ.get("FIFTYONE_LABELSTUDIO_API_KEY") or \
        (fo.annotation_config.backends.get("labelstudio") or {}).get("api_key")


@contextmanager
def _uploads_in_batches():
    """FiftyOne's Label Studio upload, one request per :data:`UPLOAD_BATCH` images (FiftyOne sends
    a run's files in one request); the same tasks, in the same order."""
    from fiftyone.utils.labelstudio import LabelStudioAnnotationAPI as api

    whole = api._upload_tasks

    def in_batches(self, project, tasks, predictions=None):
        if predictions or len(tasks) <= UPLOAD_BATCH:
            return whole(self, project, tasks, predictions)
        uploaded = {}
        for start in range(0, len(tasks), UPLOAD_BATCH):
            self._client.headers.pop("Content-Type", None)   # FiftyOne sets JSON after its file upload
            uploaded.update(whole(self, project, tasks[start:start + UPLOAD_BATCH]))
        return uploaded

    with _UPLOAD_LOCK:
        api._upload_tasks = in_batches
        try:
            yield
        finally:
            api._upload_tasks = whole


def _projects(url: str, api_key: str, title: str):
    """``(client, {id}) of the server's projects named ``title`` (FiftyOne may add a time stamp), or
    ``(None, None)`` when the server cannot be reached."""
    import fiftyone.utils.annotations as foua

    try:
        client = foua.connect_to_api(backend="labelstudio", url=url, api_key=api_key)._client
        return client, {p.id for p in client.list_projects() if str(p.params.get("title", "")).startswith(title)}
    except Exception:   # noqa: BLE001  (unreachable or refused: the send itself will say why)
        return None, None


def _undo_send(dataset, anno_key: str, url: str, api_key: str, title: str, before) -> None:
    """Delete what a failed send made: its annotation run, and the projects named ``title`` that were
    not on the server before (``before``: their ids then)."""
    if anno_key in dataset.list_annotation_runs():
        dataset.delete_annotation_run(anno_key)
    if before is None:
        return
    client, now = _projects(url, api_key, title)
    for project_id in (now or set()) - before:
        try:
            client.make_request("DELETE", f"/api/projects/{project_id}")
        except Exception:   # noqa: BLE001,S110  (best effort: the send's own error is what the user sees)
            pass


def send_samples(view, anno_key: str, url: str, api_key: str, classes, label_field: str,
                 raters_per_task: int = 2, project_name=None):
    """Upload ``view``'s images as one Label Studio project (no labels on them: each rater starts from
    the bare image) and let ``raters_per_task`` annotators label every task (the project's overlap, so
    that a task is not done after its first annotation). Returns FiftyOne's annotation results."""
    classes = [str(c) for c in classes or [] if str(c).strip()]
    if not classes:
        raise SetupError("give the classes the raters may draw (classes=[...])", "classes")
    if not isinstance(raters_per_task, int) or raters_per_task < 1:
        raise SetupError(f"raters_per_task must be a whole number >= 1, got {raters_per_task!r}", "raters_per_task")
    dataset = view._dataset
    if anno_key in dataset.list_annotation_runs():
        raise SetupError(f"annotation run {anno_key!r} exists on {dataset.name}; choose another key (or "
                         f"dataset.delete_annotation_run({anno_key!r}))", "anno_key")
    if dataset.has_sample_field(label_field):
        raise SetupError(f"field {label_field!r} exists; FiftyOne's annotation run would upload its labels and "
                         "later write into it: choose another label_field", "label_field")
    if not len(view):
        raise SetupError("the view holds no samples to send", "view")
    problem = missing_files(view)
    if problem:
        raise SetupError(problem, "view_name")
    _check_sdk()
    check_server(url, api_key)
    title = project_name or f"{dataset.name} {anno_key}"
    _, before = _projects(url, api_key, title)
    try:
        with _uploads_in_batches():
            results = view.annotate(anno_key, backend="labelstudio", url=url, api_key=api_key,
                                    label_field=label_field, label_type="detections", classes=classes,
                                    attributes=False, project_name=title)
        _client(results).make_request("PATCH", f"/api/projects/{results.project_id}", json={
            "maximum_annotations": raters_per_task, "overlap_cohort_percentage": 100,
            "show_collab_predictions": False})
    except Exception:
        _undo_send(dataset, anno_key, url, api_key, title, before)
        raise
    return results


def _client(results):
    return results.connect_to_api()._client


def _users(client) -> dict:
    """``{"user <id>": email}`` of the server's users."""
    users = client.make_request("GET", "/api/users/").json()
    users = users.get("results", []) if isinstance(users, dict) else users
    return {f"user {u['id']}": u.get("email") or f"user {u['id']}" for u in users}


def stored_url(dataset, anno_key: str) -> str | None:
    """The Label Studio URL an annotation run was sent to (FiftyOne stores it; not the key)."""
    if anno_key not in dataset.list_annotation_runs():
        return None
    return getattr(dataset.get_annotation_info(anno_key).config, "url", None)


def fetch_round(dataset, anno_key: str, rater_names=None, url=None, api_key=None) -> tuple[dict, dict, dict]:
    """``({rater: {sample id: ExportImage}}, left out counts, {"tasks", "annotated"})`` of an annotation
    run's project: every annotation of every task, rater = the annotator's email, or its name in
    ``rater_names`` (keys: emails or ``"user <id>"``). ``url``: default the one the run was sent to;
    ``api_key``: default FiftyOne's (``FIFTYONE_LABELSTUDIO_API_KEY``), else the send's in this process."""
    if anno_key not in dataset.list_annotation_runs():
        raise SetupError(f"no annotation run {anno_key!r} on {dataset.name}; runs: "
                         f"{dataset.list_annotation_runs() or 'none'}", "anno_key")
    if getattr(dataset.get_annotation_info(anno_key).config, "method", None) != "labelstudio":
        raise SetupError(f"annotation run {anno_key!r} is not a Label Studio run", "anno_key")
    _check_sdk()
    url = url or stored_url(dataset, anno_key)
    # the key the send used, while its results are still cached in this process (FiftyOne never stores it)
    api_key = api_key or default_api_key() or dataset.load_annotation_results(anno_key).config.api_key
    if not url:
        raise SetupError(f"give the Label Studio URL that {anno_key!r} was sent to", "url")
    if not api_key:
        raise SetupError("give the Label Studio API key (Account & Settings > Legacy token in Label Studio), or "
                         "set FIFTYONE_LABELSTUDIO_API_KEY before starting the App", "api_key")
    check_server(url, api_key)
    results = dataset.load_annotation_results(anno_key, cache=False, url=url, api_key=api_key)
    client = _client(results)
    tasks = client.make_request("GET", f"/api/projects/{results.project_id}/export",
                                params={"exportType": "JSON", "download_all_tasks": "true"}).json()
    samples = {int(k): v for k, v in results.uploaded_tasks.items()}
    tasks = [t for t in tasks if int(t["id"]) in samples]
    given = rater_names or {}
    names = {k: str(given.get(k, given.get(email, email))) for k, email in _users(client).items()}
    per_rater, left = read_label_studio(tasks, "task", None, rater_names=names)
    by_sample = {r: {samples[int(k)]: im for k, im in images.items()} for r, images in per_rater.items()}
    counts = {"tasks": len(tasks), "annotated": len({k for images in per_rater.values() for k in images})}
    return by_sample, left, counts
