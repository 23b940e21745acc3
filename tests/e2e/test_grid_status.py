"""End-to-end: the image-less LVIS file in the App, and the agreement-status colours.

(a) The real two-rater LVIS subset (200 images, no image files) imported with the plugin's
importer: tiles and the sample view draw the labels (on the blank placeholder images), and
the browser gets no 404 (without placeholders it logged one per tile).
(b) After an agreement run the rater labels are drawn in the status colours (agreed green,
class disagreement orange, unmatched red): pixels of those colours appear on the grid,
and none before the run (they are far from every colour of FiftyOne's default pool); coloured
by rater, each rater's colour appears and no status colour is left.

This module serves its own data set: ``demo_app`` is overridden (the App is started by
``python fiftyone_layer/demo.py app``, as ``make app`` does), so the shared ``page`` fixture and
the failure report work unchanged.
"""

from __future__ import annotations

import io
import sys
import time

import numpy as np
import pytest
from e2e_pages import (
    COUNT,
    GRID,
    OUTPUT,
    clear_choices,
    doc_screenshot,
    fill_field,
    form_field,
    open_operator,
    settled_execute_button,
    wait_for_count,
    wait_for_text,
    wait_for_tiles,
)

pytestmark = [pytest.mark.e2e, pytest.mark.realdata]

NAME = "kalos-lvis-imageless"
FIELDS = ("raters_detections_r1", "raters_detections_r2")
GREY = np.array([58, 58, 58])   # fiftyone_layer/placeholders.py FILL


@pytest.fixture(scope="module")
def demo_app(chromium, lvis_subset_path, start_app):
    """The LVIS subset imported without images, served by ``fiftyone_layer/demo.py app``."""
    import fiftyone as fo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco

    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)
    t0 = time.monotonic()
    ds = import_multirater_coco(NAME, str(lvis_subset_path), label_types=("detections", "segmentations"),
                                use_polylines=True)
    ds.persistent = True
    t1 = time.monotonic()
    with start_app("app-server-lvis.log", name=NAME) as server:
        print(f"\n[e2e] LVIS import {t1 - t0:.1f} s, App start {time.monotonic() - t1:.1f} s", file=sys.stderr)
        server.n_samples = len(ds)
        server.dataset = ds
        yield server


def _rgb(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _coloured_share(png: bytes) -> float:
    """Share of the pixels that are clearly coloured (labels; the placeholder is plain grey)."""
    img = _rgb(png)
    return float(((img.max(axis=2) - img.min(axis=2)) > 60).mean())


def _status_pixels(png: bytes, colours: dict | None = None) -> dict:
    """Pixels within a small distance of each status colour (or of each of ``colours``)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.status_colors import STATUS_COLORS

    img = _rgb(png)
    out = {}
    for status, hexcolor in (colours or STATUS_COLORS).items():
        rgb = np.array([int(hexcolor[i:i + 2], 16) for i in (1, 3, 5)])
        out[status] = int((np.abs(img - rgb).max(axis=2) <= 12).sum())
    return out


def _open(page, app, missing: list):
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(app.dataset_url)
    page.locator(COUNT).first.wait_for(timeout=90_000)
    wait_for_count(page, lambda n: n == app.n_samples, what=f"== {app.n_samples}")
    wait_for_tiles(page)
    page.wait_for_timeout(3_000)   # let every visible tile load its image and draw its labels


def test_imageless_import_draws_labels_without_404(page, demo_app):
    missing: list = []
    _open(page, demo_app, missing)
    tile = page.locator(f'{GRID} [data-cy="looker"]').first
    share = _coloured_share(tile.screenshot())
    assert share > 0.01, f"the first tile shows no labels ({share:.4f} of its pixels coloured)"
    tile.click()
    modal = page.locator('[data-cy="modal-looker-container"]')
    modal.locator("canvas").first.wait_for(timeout=30_000)
    page.wait_for_timeout(3_000)
    share = _coloured_share(modal.screenshot())
    assert share > 0.003, f"the sample view shows no labels ({share:.4f} of its pixels coloured)"
    assert missing == [], f"{len(missing)} responses with status 404, e.g. {missing[:3]}"
    # without a run no label may carry a status colour (the test below relies on it)
    page.keyboard.press("Escape")
    page.wait_for_timeout(500)
    before = _status_pixels(page.locator(GRID).screenshot())
    assert sum(before.values()) < 50, f"status colours before any agreement run: {before}"


@pytest.mark.screenshot
def test_agreement_form_preselects_raters_and_the_run_colours_labels_by_status(page, demo_app):
    """Through the App: the compute-agreement form preselects the rater fields that rater_list
    names; picking fields answers at once; after the run the grid draws the status colours;
    browse_disagreements shows the disagreeing samples as the selected saved view."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import delete_agreement_run, disagreement_view

    ds = demo_app.dataset
    missing: list = []
    _open(page, demo_app, missing)
    form = open_operator(page, "compute agreement", "KaLOS: compute agreement")
    field = form_field(form, "Rater fields")
    for f in FIELDS:
        field.get_by_text(f).first.wait_for(timeout=15_000)
    assert field.locator(".MuiChip-root").count() == len(FIELDS)
    # each pick re-resolves the (dynamic) form: time from the click to the settled form
    clear_choices(form, "Rater fields")
    waits = []
    for f in FIELDS:
        t0 = time.monotonic()
        field.locator("input").first.click()
        page.get_by_role("option").filter(has_text=f).first.click()
        settled_execute_button(form)
        waits.append(time.monotonic() - t0 - 0.5)   # settled_execute_button waits 0.5 s (debounce) first
    print(f"\n[e2e] form settled after each pick in {', '.join(f'{w:.2f}' for w in waits)} s", file=sys.stderr)
    assert max(waits) < 1.5, waits
    fill_field(form, "Run key", "kalos")
    settled_execute_button(form).click()
    wait_for_text(page.locator(OUTPUT), "Mean α (per image)", timeout=180)
    ds.reload()
    scheme = ds.app_config.color_scheme
    entries = {e["path"]: e for e in scheme.fields}
    assert scheme.color_by == "value"
    assert all(entries[f]["colorByAttribute"] == "kalos_status" for f in FIELDS)
    page.keyboard.press("Escape")
    page.wait_for_timeout(3_000)   # the grid redraws its tiles in the new colours
    counts = _status_pixels(page.locator(GRID).screenshot())
    print(f"[e2e] status-coloured pixels on the grid: {counts}", file=sys.stderr)
    doc_screenshot(page, "grid_imageless_status")
    assert counts["agreed"] > 100, f"no label drawn in the 'agreed' colour: {counts}"
    assert counts["class_disagreement"] + counts["unmatched"] > 100, f"no disagreement colour drawn: {counts}"
    # one status filter over both rater fields, saved and shown as the selected saved view
    expected = len(disagreement_view(ds, "kalos"))
    assert 0 < expected < demo_app.n_samples
    form = open_operator(page, "browse disagreements", "KaLOS: browse disagreements")
    settled_execute_button(form).click()
    wait_for_count(page, lambda n: n == expected, what=f"== {expected} disagreeing samples")
    wait_for_text(page.locator(OUTPUT), "kalos_disagreements")     # the result card
    page.keyboard.press("Escape")
    page.locator(OUTPUT).wait_for(state="detached", timeout=15_000)
    page.get_by_text("kalos_disagreements").first.wait_for(timeout=15_000)   # the saved-view selector
    assert page.get_by_text("Unsaved view").count() == 0
    doc_screenshot(page, "grid_imageless_disagreements")
    assert missing == []
    # colour by rater: each rater's labels in a colour of its own, no status colour left
    form = open_operator(page, "colour labels", "KaLOS: colour labels by status or rater")
    form.get_by_text("rater (each rater", exact=False).first.click()
    settled_execute_button(form).click()
    wait_for_text(page.locator(OUTPUT), "KaLOS: label colours set")
    page.keyboard.press("Escape")
    page.locator(OUTPUT).wait_for(state="detached", timeout=15_000)
    page.wait_for_timeout(3_000)
    ds.reload()
    colours = {e["path"]: e["fieldColor"] for e in ds.app_config.color_scheme.fields if e["path"] in FIELDS}
    shot = page.locator(GRID).screenshot()
    by_rater, by_status = _status_pixels(shot, colours), _status_pixels(shot)
    print(f"[e2e] rater-coloured pixels on the grid: {by_rater}, status-coloured: {by_status}", file=sys.stderr)
    doc_screenshot(page, "grid_imageless_raters")
    assert len(set(colours.values())) == 2 and min(by_rater.values()) > 100, by_rater
    assert sum(by_status.values()) < 50, by_status
    delete_agreement_run(ds, "kalos")
    assert not any(e.get("colorByAttribute") == "kalos_status" for e in ds.app_config.color_scheme.fields or [])
