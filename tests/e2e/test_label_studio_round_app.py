"""End-to-end: the second round of the LVIS review queue through a real Label Studio, from the App.

Round 1 is the LVIS r1/r2 file (200 images, blank PNGs of their sizes as the images), its agreement run
``kalos`` and the review queue that *tag for review* saves with its App defaults. In the browser: *send
for a second round* with the server's URL and token typed into the form (nothing in the App's
environment), the two annotators draw their round-1 boxes again through Label Studio's REST API with
their own accounts, *load a Label Studio round* (first with a wrong token: a message in words), then
what the user reads: the card's counts, the round's saved view in the grid, and compute agreement's form
proposing only the round-2 fields; executed, round 2 gives each image's round-1 α.

Needs the Label Studio venv (``make ls-setup``, or KALOS_LS_VENV) and ../shared/data; skipped without.
The App finds the SDK as this process does: installed, or (``make ls-setup`` installs it in the Label
Studio venv only) that venv's package on its PYTHONPATH, the one thing added to its environment.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest
from e2e_pages import (
    COUNT,
    OUTPUT,
    USERS,
    VIEWPORT,
    file_names,
    fill_field,
    form_field,
    new_name,
    open_operator,
    post_round1_boxes,
    settled_execute_button,
    wait_for_count,
    wait_for_text,
    wait_for_tiles,
)

if os.environ.get("KALOS_E2E", "") in ("", "0"):
    pytest.skip("browser tests are opt-in: `make test-e2e` (or KALOS_E2E=1)", allow_module_level=True)

pytestmark = [pytest.mark.e2e, pytest.mark.labelstudio, pytest.mark.realdata]
TOKEN = USERS["r1"][1]
ROUND2 = ["round2_rater1_kalos_test", "round2_rater2_kalos_test"]   # the annotators' emails as names


@pytest.fixture(scope="module")
def lvis(lvis_subset_path, tmp_path_factory):
    """Round 1 on the whole LVIS file and its review queue (tag for review as the App proposes it)."""
    import json

    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_multirater_coco,
    )
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import (
        compute_agreement_run,
    )
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import (
        tag_for_review,
    )

    data = json.loads(Path(lvis_subset_path).read_text())
    ds = import_multirater_coco(new_name(), data, placeholders=str(tmp_path_factory.mktemp("lvis") / "images"))
    # the Python entry: Playwright's event loop runs in this thread, where execute_operator would be async
    compute_agreement_run(ds, rater_fields=["raters_r1", "raters_r2"], run_key="kalos", threshold=0.5, bootstrap=0)
    counts = tag_for_review(ds, "kalos", alpha_below=0.667)
    yield ds, data, counts["view"]
    fo.delete_dataset(ds.name)


@pytest.fixture(scope="module")
def lvis_app(lvis, label_studio_sdk, start_app):
    """The App on the LVIS data set; FiftyOne's Label Studio backend finds the SDK as this process does
    (installed, or the Label Studio venv's package), and nothing about the server is in its environment."""
    ds = lvis[0]
    sdk_dir = str(Path(label_studio_sdk.__file__).parent.parent)
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "FIFTYONE_LABELSTUDIO_URL", "FIFTYONE_LABELSTUDIO_API_KEY")}
    os.environ.pop("FIFTYONE_LABELSTUDIO_URL", None)
    os.environ.pop("FIFTYONE_LABELSTUDIO_API_KEY", None)
    if "site-packages" not in sdk_dir:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (saved["PYTHONPATH"], sdk_dir) if p)

    def restore():
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

    try:
        with start_app("app-server-ls.log", name=ds.name) as server:
            restore()   # the App's processes took their environment when they started
            yield server
    finally:
        restore()


@pytest.fixture
def page(chromium, lvis_app):
    """conftest.py's page on the LVIS App (its failure report saves the screenshot)."""
    context = chromium.new_context(viewport=VIEWPORT)
    context.add_init_script("window.IS_PLAYWRIGHT = true;")
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.console_lines = []
    pg.on("console", lambda m: pg.console_lines.append(f"[{m.type}] {m.text}"))
    yield pg
    context.close()


def _execute(page, form, title: str, timeout: float = 180) -> str:
    """Execute the form; the output card's text once it shows ``title``, the card then closed."""
    settled_execute_button(form).click()
    card = wait_for_text(page.locator(OUTPUT), title, timeout=timeout)
    page.locator(OUTPUT).get_by_role("button", name="Done").first.click()
    return " ".join(card.split())


def _row(card: str, name: str) -> int:
    return int(re.search(rf"{name}\s*:?\s*(\d+)", card).group(1))


def test_the_lvis_review_queue_goes_to_label_studio_and_back_from_the_app(chromium, page, lvis_app, lvis,
                                                                          label_studio):
    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr

    ds, data, queue_name = lvis
    queue = ds.load_saved_view(queue_name)
    sent, n_classes = set(queue.values("id")), len(lsr.review_classes(ds))
    start = time.monotonic()
    page.goto(lvis_app.dataset_url)
    page.locator(COUNT).first.wait_for(timeout=90_000)
    wait_for_count(page, lambda n: n == len(ds), what=f"== {len(ds)} (the data set)")
    wait_for_tiles(page)

    form = open_operator(page, "send for a second round", "KaLOS: send for a second round")
    assert f"Default: the {n_classes} classes of the rater fields" in form.inner_text()   # one line, not a wall
    assert not form_field(form, "Classes").count()
    fill_field(form, "Label Studio URL", label_studio.url)
    fill_field(form, "Label Studio API token (legacy token)", TOKEN)
    card = _execute(page, form, "KaLOS: sent to Label Studio", timeout=300)
    assert _row(card, "Tasks") == len(sent), card
    ds.reload()
    results = ds.load_annotation_results("round2")
    assert sorted(results.uploaded_tasks.values()) == sorted(sent)   # the whole queue, in three requests
    project = label_studio.api("GET", f"/api/projects/{results.project_id}")
    assert project["task_number"] == len(sent) and project["label_config"].count("<Label ") == n_classes
    t_sent = time.monotonic()

    user_ids = {r: label_studio.api("GET", "/api/current-user/whoami", user=r)["id"] for r in USERS}
    post_round1_boxes(label_studio, results, ds, data, user_ids, "round2" + lsr.UPLOAD_SUFFIX)
    t_drawn = time.monotonic()

    form = open_operator(page, "load a Label Studio round", "KaLOS: load a Label Studio round")
    assert form_field(form, "Label Studio URL").locator("input").first.input_value() == label_studio.url
    fill_field(form, "Label Studio API token (legacy token)", "not-the-token")
    card = _execute(page, form, "KaLOS: loading the round failed")
    assert f"Label Studio at {label_studio.url} refused the API token (HTTP 401): copy the token from " \
           "Account & Settings" in card and "Traceback" not in card, card
    form = open_operator(page, "load a Label Studio round", "KaLOS: load a Label Studio round")
    fill_field(form, "Label Studio API token (legacy token)", USERS["r2"][1])
    card = _execute(page, form, "KaLOS: round loaded")
    n_boxes = sum(ds.select(list(sent)).count(f"raters_{r}.detections") for r in ("r1", "r2"))
    assert (_row(card, "Samples"), _row(card, "Labels"), _row(card, "Tasks")) == (len(sent), n_boxes, len(sent)), card
    assert "fields " + ", ".join(ROUND2) + "; saved view round2_samples (selected now)" in card, card
    wait_for_count(page, lambda n: n == len(sent), what=f"== {len(sent)} (the round's saved view)")
    ds.reload()
    for field, rater in zip(ROUND2, ("r1", "r2")):
        assert ds.count(f"{field}.detections") == ds.select(list(sent)).count(f"raters_{rater}.detections")

    form = open_operator(page, "compute agreement", "KaLOS: compute agreement")
    settled_execute_button(form)
    chosen = form_field(form, "Rater fields").locator(".MuiChip-root").all_inner_texts()
    assert sorted(c.split(" (")[0] for c in chosen) == ROUND2, chosen   # round 2 only, not round 1's fields
    fill_field(form, "Run key", "round2")
    card = _execute(page, form, "Mean α (per image)", timeout=180)
    took = time.monotonic() - start
    ds.reload()
    cmp = lsr.compare_rounds(ds, "kalos", "round2")
    alpha2 = ds.load_run_results("round2")
    print(f"\n[e2e] LVIS review queue {len(sent)} images ({n_boxes} boxes): send {t_sent - start:.1f} s, "
          f"2 annotators post {t_drawn - t_sent:.1f} s, load + round-2 run {time.monotonic() - t_drawn:.1f} s, "
          f"in all {took:.1f} s; round 2 mean α {alpha2.mean_alpha:.4f}", file=sys.stderr)
    assert cmp["samples"] == len(sent) and cmp["changed"] == 0   # the same boxes: each image's round-1 α
    assert f"{alpha2.mean_alpha:.3f}" in card
    files = file_names(ds, data)
    assert {files[s] for s in ds.load_saved_view("round2_samples").values("id")} == {files[s] for s in sent}
    assert fo.load_dataset(ds.name).get_annotation_info("round2").config.url == label_studio.url
