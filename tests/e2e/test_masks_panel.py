"""End-to-end: the semantic masks panel in the App, on the demo's masks data set (``kalos-demo-masks``,
run "masks", three raters' Segmentation fields, classes background / road / car).

What the user reads is checked against the stored run: the summary's pooled α and each class's bar
height are the run's α, the rater chart's bars its STAPLE sensitivity and specificity; a click on the car bar leaves the samples where car is disputed (a third of
the scenes have no car, so the click must narrow the grid).
"""

from __future__ import annotations

import pytest
from e2e_pages import (COUNT, DATASET, chart_marks, click_mark, doc_screenshot, open_panel, wait_for_chart,
                       wait_for_count, wait_for_text, wait_for_tiles)

pytestmark = pytest.mark.e2e

MASKS = f"{DATASET}-masks"


@pytest.mark.screenshot
def test_the_masks_panel_shows_the_runs_alpha_and_a_class_click_shows_its_disputed_samples(page, demo_app):
    import fiftyone as fo

    ds = fo.load_dataset(MASKS)
    res = ds.load_run_results("masks")
    car = next(k for k, name in res.classes.items() if name == "car")
    disputed = sum(1 for row in res.per_image if (row["alpha_per_class"].get(car) or 1) < 1)
    assert 0 < disputed < len(ds), (disputed, len(ds))

    page.goto(f"{demo_app.url}/datasets/{MASKS}")
    page.locator(COUNT).first.wait_for(timeout=90_000)
    wait_for_count(page, lambda n: n == len(ds), what=f"== {len(ds)} (the masks data set)")
    wait_for_tiles(page)
    content = open_panel(page, "kalos_masks")
    wait_for_chart(content)
    wait_for_text(content, f"α over all pixels {res.alpha:.3f}")
    page.wait_for_timeout(500)   # both charts drawn
    bars = [m for m in chart_marks(content) if m["type"] == "bar" and m["plot"] == 0]
    shown = sorted(round(b["value"], 6) for b in bars)
    assert shown == sorted(round(a, 6) for a in res.alpha_per_class.values() if a is not None)
    first = wait_for_text(content, "STAPLE sensitivity and specificity per rater: ").split(
        "STAPLE sensitivity and specificity per rater: ")[1].split()[0]
    k = next(key for key, name in res.classes.items() if name == first)
    raters = sorted(round(b["value"], 6) for b in chart_marks(content) if b["type"] == "bar" and b["plot"] == 1)
    assert raters == sorted(round(v[k][m], 6) for v in res.per_rater.values() for m in ("sensitivity", "specificity"))
    page.locator('[data-cy="checkbox-masks_disagreement"]').first.click()   # the disagreement overlay on the grid
    page.wait_for_timeout(2000)
    doc_screenshot(page, "kalos_masks")

    car_bar = next(b for b in bars if abs(b["value"] - res.alpha_per_class[car]) < 1e-9)
    click_mark(page, car_bar)
    assert wait_for_count(page, lambda n: n == disputed, what=f"== {disputed} (car disputed)") == disputed
    wait_for_text(content, "Showing the samples where car is disputed")
