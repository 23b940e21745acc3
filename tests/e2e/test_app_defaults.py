"""End-to-end: what the App offers by default, where a FiftyOne user fell into traps, read from what it shows.

(1) With the plugin installed as ``make app`` does, FiftyOne's own operators and KaLOS's offer
*Execute* as the default choice (no longer *Schedule*). (2) In compute_agreement's form,
switching the distance switches the threshold to that distance's calibrated value. (3) After an
agreement run a label field that is not a rater field is still drawn in one colour (not by
class, not in a status colour). (4) Noise-aware evaluation on a data set without predictions
says what is missing and offers nothing to pick.
"""

from __future__ import annotations

import colorsys
import io
import re
import sys

import numpy as np
import pytest
from e2e_pages import (
    DATASET,
    GRID,
    OUTPUT,
    PROMPT,
    fill_field,
    form_field,
    open_app,
    open_operator,
    pick_choices,
    settled_execute_button,
    wait_for_count,
    wait_for_text,
    wait_for_tiles,
)

pytestmark = pytest.mark.e2e

BOXES = ["raters_detections_careful", "raters_detections_sloppy"]
OTHER = "raters_segmentations_careful"   # a label field that is not a rater field of the run
CLONE = "kalos-e2e-traps"


@pytest.mark.parametrize("query, title", [("clone sample field", "Clone sample field"),
                                          ("compute agreement", "KaLOS: compute agreement")])
def test_the_default_execution_choice_is_execute(page, demo_app, query, title):
    open_app(page, demo_app)
    form = open_operator(page, query, title)
    button = settled_execute_button(form)
    button.wait_for(timeout=15_000)          # the main button names the default choice
    assert page.locator(PROMPT).get_by_role("button", name="Schedule", exact=True).count() == 0
    page.keyboard.press("Escape")


def _threshold(form) -> float:
    return float(form_field(form, "Similarity threshold").locator("input").first.input_value())


def test_switching_the_distance_switches_the_threshold(page, demo_app):
    import fiftyone as fo

    cfg = fo.load_dataset(DATASET).get_run_info("kalos_calibration").config
    found = cfg.thresholds
    assert {"centroid", "giou"} <= set(found) and abs(found["centroid"] - found["giou"]) > 0.01
    open_app(page, demo_app)
    form = open_operator(page, "compute agreement", "KaLOS: compute agreement")
    pick_choices(form, "Rater fields", BOXES)
    settled_execute_button(form)
    assert _threshold(form) == round(found[cfg.distance], 3)   # as every text shows it, and as the run uses it
    for distance in [d for d in ("giou", "iou") if d != cfg.distance]:
        form_field(form, "Distance").locator("[role='combobox'], [aria-haspopup='listbox']").first.click()
        page.get_by_role("option").filter(has_text=re.compile(rf"^{distance}\b")).first.click()
        settled_execute_button(form)
        page.wait_for_timeout(1_000)
        shown = _threshold(form)
        print(f"\n[e2e] threshold after switching to {distance}: {shown}", file=sys.stderr)
        assert shown == round(found[distance], 3), (distance, shown, found)
    page.keyboard.press("Escape")


@pytest.fixture(scope="module")
def clone(demo_app, tmp_path_factory):
    """Two box rater fields and one polygon field of the demo on plain grey images, with no run,
    no predictions and FiftyOne's default colour scheme."""
    import fiftyone as fo
    from PIL import Image

    grey = tmp_path_factory.mktemp("grey") / "grey.png"
    Image.new("RGB", (640, 480), (58, 58, 58)).save(grey)
    if fo.dataset_exists(CLONE):
        fo.delete_dataset(CLONE)
    ds = fo.load_dataset(DATASET).select_fields(BOXES + [OTHER, "rater_list"]).clone(CLONE)
    ds.persistent = True
    ds.delete_runs()
    ds.set_values("filepath", [str(grey)] * len(ds))
    ds.app_config.color_scheme = None
    for key in list(ds.info):
        if key.startswith("kalos_color"):
            del ds.info[key]
    ds.save()
    yield ds
    fo.delete_dataset(CLONE)


def _hues(page) -> dict:
    """Share of the grid's clearly coloured pixels per 15-degree hue bin (the images are grey)."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(page.locator(GRID).screenshot())).convert("RGB")).astype(int)
    img = img[: int(0.75 * len(img))]   # the run's notification covers the bottom of the grid
    px = img[(img.max(axis=2) - img.min(axis=2)) > 60] / 255.0
    assert len(px) > 200, f"hardly any label drawn ({len(px)} coloured pixels)"
    bins = np.array([int(colorsys.rgb_to_hsv(*p)[0] * 360) // 15 for p in px])
    values, counts = np.unique(bins, return_counts=True)
    return {int(v) * 15: c / len(px) for v, c in zip(values, counts)}


def _show_only_other(page) -> dict:
    """Hide the rater fields in the sidebar (their checkboxes keep their state across reloads)."""
    for f in BOXES:
        box = page.locator(f'[data-cy="checkbox-{f}"]').first
        if box.locator("input").first.is_checked():
            box.click()
            page.wait_for_timeout(300)
        assert not box.locator("input").first.is_checked(), f
    page.wait_for_timeout(3_000)   # the grid redraws its tiles
    return _hues(page)


def _hue(hexcolor: str) -> float:
    return colorsys.rgb_to_hsv(*(int(hexcolor[i:i + 2], 16) / 255 for i in (1, 3, 5)))[0] * 360


def test_a_field_that_is_not_a_rater_field_keeps_one_colour_after_a_run(page, demo_app, clone):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.status_colors import STATUS_COLORS

    page.goto(f"{demo_app.url}/datasets/{CLONE}")
    wait_for_count(page, lambda n: n == len(clone), what=f"== {len(clone)}")
    wait_for_tiles(page)
    before = _show_only_other(page)
    form = open_operator(page, "compute agreement", "KaLOS: compute agreement")   # the run, as a user starts it
    pick_choices(form, "Rater fields", BOXES)
    fill_field(form, "Run key", "e2e")
    settled_execute_button(form).click()
    wait_for_text(page.locator(OUTPUT), "Mean α (per image)", timeout=180)
    page.keyboard.press("Escape")
    clone.reload()
    entry = {e["path"]: e for e in clone.app_config.color_scheme.fields}[OTHER]
    after = _show_only_other(page)
    print(f"\n[e2e] hue shares of {OTHER} before {before}, after {after}, pinned {entry['fieldColor']}",
          file=sys.stderr)
    assert max(before.values()) > 0.8, before         # one colour before (colours go by field) ...
    assert max(after.values()) > 0.8, after           # ... and after (not one per class)
    top = max(after, key=after.get)
    assert top == max(before, key=before.get), (before, after)   # the same hue as before the run
    assert abs(_hue(entry["fieldColor"]) - (top + 7.5)) <= 15, (entry, after)
    for status in STATUS_COLORS.values():               # never in a status colour
        d = abs(_hue(status) - (top + 7.5)) % 360
        assert min(d, 360 - d) > 15, (status, after)


def test_noise_aware_without_predictions_says_what_is_missing(page, demo_app, clone):
    page.goto(f"{demo_app.url}/datasets/{CLONE}")
    wait_for_count(page, lambda n: n == len(clone), what=f"== {len(clone)}")
    page.keyboard.press("`")
    page.locator('[data-cy="operators-browser"]').wait_for(timeout=15_000)
    page.locator('[data-cy="operators-browser-search"]').fill("noise-aware")
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")
    form = page.locator(PROMPT)
    text = wait_for_text(form, "No predictions field", timeout=60)
    print(f"\n[e2e] noise-aware form without predictions: {text!r}", file=sys.stderr)
    assert "Add the model's predictions as a Detections field with a confidence" in text
    assert "Required property" not in text and "Predictions field" not in text
    assert not any(f in text for f in BOXES)            # no rater field offered as predictions
    assert settled_execute_button(form).is_disabled()
    page.keyboard.press("Escape")
