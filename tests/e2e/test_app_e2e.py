"""End-to-end: the FiftyOne App in headless chromium, on the demo data set, with this plugin.

One App server (``python fiftyone_layer/demo.py app``, what ``make app`` runs) for the module; every
test gets a fresh browser context and starts from the full data set with no panel open.
Every panel listed in fiftyone.yml is opened through the App's "+" menu, its plotly chart must
draw, and for the panels whose marks are clickable a click must change the grid's sample count.
KALOS_SCREENSHOTS=1 saves docs/img/panels/<panel>.png (each panel with a run on the demo: an empty
state is no documentation) and grid_sorted_by_alpha.png.
"""

from __future__ import annotations

import os
import re

import pytest
from e2e_pages import (
    DATASET,
    REPO,
    VIEWPORT,
    chart_marks,
    click_mark,
    click_until_count_changes,
    grid_count,
    has_run,
    open_app,
    open_operator_browser,
    open_panel,
    panel_names,
    panels_needing_a_run,
    save_png,
    wait_for_chart,
    wait_for_count,
    wait_for_tiles,
)

pytestmark = pytest.mark.e2e

SHOTS = REPO / "docs" / "img" / "panels"
PANELS = panel_names()

# What a click on a panel's chart does. Panels not named here only have to draw their chart.
#   "exact": the first non-empty bar (lowest α bin) shows exactly that bar's count of samples;
#   "changes": some mark (heatmap cells off the diagonal first) changes the grid's count;
#   "bars": some bar (the panel's other marks are not clickable) changes the grid's count.
CLICKS = {
    "kalos_agreement_overview": "exact",
    "kalos_annotator_vitality": "changes",
    "kalos_collaboration": "changes",
    "kalos_class_difficulty": "changes",
    # kalos_label_convergence only draws here: in the busy demo scenes every class and every
    # threshold's unmatched labels occur on all 40 samples, so no click changes the count
    # (its clicks are checked by label counts in tests/e2e/test_measure_panels.py)
    "kalos_noise_aware": "bars",
}
# Panels that read a run the demo may not make: without one they must show their empty state.
#: panel -> the run kind it shows, for every registered panel not of agreement runs (the demo may lack it)
NEEDS_RUN = panels_needing_a_run()


def _screenshot(page, name: str) -> None:
    if os.environ.get("KALOS_SCREENSHOTS", "") not in ("", "0"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        if grid_count(page) != 0:   # a click may leave no sample (e.g. no uncertain prediction at a threshold)
            wait_for_tiles(page)
        page.mouse.move(5, VIEWPORT["height"] - 5)  # no hover label over the chart
        page.wait_for_timeout(800)  # let plotly finish its transition
        save_png(page.screenshot(), SHOTS / f"{name}.png")


def test_app_shows_the_demo_dataset(page, demo_app):
    open_app(page, demo_app)
    assert demo_app.n_samples == 40  # fiftyone_layer/demo.py's default
    assert grid_count(page) == demo_app.n_samples
    assert page.locator('[data-cy="fo-grid"]').first.is_visible()


def test_operator_browser_lists_compute_agreement(page, demo_app):
    open_app(page, demo_app)
    text = open_operator_browser(page, "agreement")
    assert "compute_agreement" in text and "KaLOS: compute agreement" in text, text[:500]
    page.keyboard.press("Escape")


@pytest.mark.screenshot
def test_grid_sorted_by_alpha(page, demo_app):
    """A saved view sorted by the run's α, chosen in the sidebar; the α bubbles on the tiles
    must ascend. (Also the README's screenshot of the grid.)"""
    import fiftyone as fo

    ds = fo.load_dataset(DATASET)
    name = "kalos sorted by alpha"
    if not ds.has_saved_view(name):
        ds.save_view(name, ds.sort_by("kalos_alpha"))
    open_app(page, demo_app)
    page.get_by_text("Unsaved view").first.click()
    page.get_by_text(name).first.click()
    page.wait_for_url("**view=kalos-sorted-by-alpha*")
    wait_for_tiles(page)
    box = page.locator('[data-cy="checkbox-kalos_alpha"]')
    box.click()
    lowest = min(a for a in ds.values("kalos_alpha") if a is not None)
    shown = []
    for _ in range(120):  # tiles and their α bubbles load lazily; old tiles linger for a moment
        text = page.locator('[data-cy="fo-grid"]').first.inner_text()
        shown = [float(t) for t in text.split() if re.fullmatch(r"-?\d+\.\d+", t)]
        if len(shown) >= 8 and shown == sorted(shown) and abs(shown[0] - lowest) < 1e-3:
            break
        page.wait_for_timeout(250)
    assert len(shown) >= 8, shown
    assert shown == sorted(shown), shown
    assert shown[0] == pytest.approx(lowest, abs=1e-3)
    _screenshot(page, "grid_sorted_by_alpha")
    box.click()  # leave the tiles as they were for the next tests (the Session keeps it)


@pytest.mark.screenshot
@pytest.mark.parametrize("panel", PANELS or [pytest.param("-", marks=pytest.mark.skip("fiftyone.yml lists no panels"))])
def test_panel_renders_and_click_filters_grid(page, demo_app, panel):
    open_app(page, demo_app)
    content = open_panel(page, panel)
    method = NEEDS_RUN.get(panel)
    if method and not has_run(method):
        empty = content.get_by_text("No KaLOS")
        empty.first.wait_for(timeout=30_000)
        assert content.get_by_role("button").count() >= 1  # the button that opens the operator
        pytest.skip(f"demo data set has no {method} run: checked the empty state, not the chart")

    marks = wait_for_chart(content)
    page.wait_for_timeout(500)  # layout settles (markdown above the chart renders too)
    marks = chart_marks(content)
    assert marks, "chart drew nothing"
    mode = CLICKS.get(panel)
    if mode is None:
        _screenshot(page, panel)
        return

    n = demo_app.n_samples
    order = sorted(range(len(marks)), key=lambda k: (marks[k]["type"] != "heatmap" or marks[k].get("diagonal", False),
                                                     marks[k]["plot"], marks[k]["x"], marks[k]["y"]))
    if mode == "exact":
        bars = [k for k in order if marks[k]["type"] == "bar" and marks[k]["value"]]
        assert bars, f"no non-empty bar in {marks}"
        target = marks[bars[0]]
        click_mark(page, target)
        want = round(target["value"])
        got = wait_for_count(page, lambda c: c == want, what=f"== {want} (the clicked bar's count)")
        assert 0 < got < n
    else:
        candidates = [k for k in order if marks[k]["type"] == "bar"] if mode == "bars" else order
        fresh = [lambda k=k: chart_marks(content)[k] if len(chart_marks(content)) == len(marks) else marks[k]
                 for k in candidates[:8]]
        got = click_until_count_changes(page, fresh, n, what=f"{panel}'s chart")
        assert 0 <= got < n
    _screenshot(page, panel)
