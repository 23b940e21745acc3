"""End-to-end: what every KaLOS panel shares, in the App (headless chromium, 1600 x 1000).

* A panel opened in a split beside the grid shows its whole chart without scrolling; the charts of
  the measure panels (WIDTH_PANELS) use the panel's width: the plot area (plotly's drag layer: axes
  and bars, without margins or legend) with the category names of its y axis (a class chart's names
  are data; they need their width) spans at least 80 % of the panel, and no legend sits beside the
  plot (legends go above or below it). The time from the click on the panel's menu entry to its
  first chart is printed (the first open pays the server's imports).
* A click highlights the clicked bar (plotly ``selectedpoints``: the others are dimmed) and
  *Clear selection* gives the grid back its full sample count and drops the highlight.
* The run chosen in the selector is selected again when the panel is closed and reopened.
"""

from __future__ import annotations

import sys
import time

import pytest
from e2e_pages import (
    COUNT,
    DATASET,
    GRID,
    PLOT,
    VIEWPORT,
    chart_marks,
    click_mark,
    has_run,
    open_app,
    open_panel,
    panel_names,
    panel_tab,
    panels_needing_a_run,
    save_png,
    wait_for_chart,
    wait_for_count,
    wait_for_text,
)

pytestmark = pytest.mark.e2e

OVERVIEW = "kalos_agreement_overview"
WIDTH_PANELS = ["kalos_calibration", "kalos_localisation_sensitivity", "kalos_label_convergence",
                "kalos_variation_types", "kalos_class_difficulty"]
RUN_SELECT = ".MuiSelect-select"  # filtered to the one whose text is a run label ("key · ...")

# the first chart's traces as plotly holds them: which points each trace has selected
_SELECTED_JS = """
() => {
  const gd = document.querySelector('.js-plotly-plot');
  return gd && gd.data ? gd.data.map((t) => (t.selectedpoints === undefined ? null : t.selectedpoints)) : null;
}
"""
# bars drawn dimmed (plotly gives unselected points a lower opacity)
_DIMMED_JS = """
() => Array.from(document.querySelectorAll('.js-plotly-plot .trace.bars .point path'))
  .filter((p) => parseFloat(getComputedStyle(p).opacity) < 0.99).length
"""
# Per chart: the plot area's width (plotly's drag layer) and the width of the panel's pane (the
# widest ancestor that does not also hold the sample grid: the panel opens in a split beside it).
_WIDTHS_JS = r"""
() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const area = (gd.querySelector('.nsewdrag') || gd).getBoundingClientRect();
  const plot = area.width;
  // the y axis's category names (a class chart's left margin holds them: data, not chrome)
  const ticks = Array.from(gd.querySelectorAll('.yaxislayer-above .ytick text')).map((t) => t.getBoundingClientRect());
  const names = ticks.length ? area.left - Math.min(...ticks.map((r) => r.left)) : 0;
  const lg = gd.querySelector('.legend');
  const lb = lg && lg.getBoundingClientRect();
  const beside = !!(lb && lb.width > 0 && lb.left >= area.right - 1 && lb.top < area.bottom && lb.bottom > area.top);
  let el = gd, pane = gd;
  while (el.parentElement && el.parentElement !== document.body
         && !el.parentElement.querySelector('[data-cy="fo-grid"]')) {
    el = el.parentElement;
    pane = el;
  }
  return {plot, names: Math.round(names), legend_beside: beside, panel: pane.getBoundingClientRect().width,
          chart: gd.getBoundingClientRect().width};
})
"""
# is the chart's centre really drawn there (not covered or clipped by a scroll container)?
_ON_TOP_JS = """
(sel) => {
  const gd = document.querySelector(sel);
  const r = gd.getBoundingClientRect();
  const el = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return !!el && gd.contains(el);
}
"""


def _forget_runs():
    """Drop what the panels remember on the demo data set (tests share one database)."""
    import fiftyone as fo
    from fiftyone.operators.store import ExecutionStore

    ExecutionStore.create("kalos_panels", fo.load_dataset(DATASET)._doc.id).clear()


@pytest.fixture
def fresh_memory():
    _forget_runs()
    yield
    _forget_runs()


def _shot(page, artifacts_dir, name):
    save_png(page.screenshot(), artifacts_dir / f"{name}.png")


@pytest.mark.parametrize("panel", panel_names())
def test_panel_in_a_split_shows_its_chart_without_scrolling(page, demo_app, artifacts_dir, fresh_memory, panel):
    method = panels_needing_a_run().get(panel)
    if method and not has_run(method):
        pytest.skip(f"the demo data set has no {method} run (its empty state: test_app_e2e)")
    open_app(page, demo_app)
    t0 = time.monotonic()
    open_panel(page, panel)  # the App opens a grid panel in a split beside the grid
    wait_for_chart(page.locator("body"), timeout=60)
    opened = time.monotonic() - t0
    page.wait_for_timeout(1000)  # markdown above the chart renders, plotly's responsive resize
    _shot(page, artifacts_dir, f"split_{panel}")
    if panel in WIDTH_PANELS:
        widths = page.evaluate(_WIDTHS_JS)
        print(f"\n[e2e] {panel}: first chart {opened:.2f} s after the click; widths {widths}", file=sys.stderr)
        assert widths and all(w["panel"] > 0 for w in widths), widths
        assert not [w for w in widths if w["legend_beside"]], f"a legend beside the plot steals its width: {widths}"
        narrow = [w for w in widths if w["plot"] + w["names"] < 0.8 * w["panel"]]
        assert not narrow, f"charts narrower than 80 % of the panel: {narrow}"
    box = page.locator(PLOT).first.bounding_box()
    grid = page.locator(GRID).first.bounding_box()
    assert box and grid, (box, grid)
    assert box["x"] >= grid["x"] + grid["width"] - 5, f"the panel is not beside the grid: {box} vs {grid}"
    assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], f"chart not inside the viewport: {box}"
    assert box["x"] + box["width"] <= VIEWPORT["width"] + 1, box
    assert box["height"] >= 200 and box["width"] >= 0.8 * (VIEWPORT["width"] - grid["x"] - grid["width"]) * 0.9, box
    assert page.evaluate(_ON_TOP_JS, PLOT), "the chart's centre is covered or scrolled away"


def test_click_highlights_and_clear_selection_restores_the_grid(page, demo_app, artifacts_dir, fresh_memory):
    open_app(page, demo_app)
    content = open_panel(page, OVERVIEW)
    wait_for_chart(content)
    page.wait_for_timeout(500)
    marks = [m for m in chart_marks(content) if m["type"] == "bar" and m["value"]]
    assert len(marks) >= 2, marks
    target = min(marks, key=lambda m: m["x"])
    assert page.get_by_role("button", name="Clear selection").count() == 0
    href = page.get_by_role("link", name="Docs ↗").first.get_attribute("href")  # the App serves the docs
    reply = page.request.get(demo_app.url + href if href.startswith("/") else href)
    assert reply.ok and "# KaLOS panels in the FiftyOne App" in reply.text(), (href, reply.status)
    click_mark(page, target)
    want = round(target["value"])
    wait_for_count(page, lambda c: c == want, what=f"== {want} (the clicked bar's count)")
    wait_for_text(page.locator("body"), "Clear selection", timeout=15)
    for _ in range(40):
        selected = page.evaluate(_SELECTED_JS)
        if selected and selected[0]:
            break
        page.wait_for_timeout(250)
    assert selected and selected[0] == [target["i"]], (selected, target)
    page.wait_for_timeout(500)
    assert page.evaluate(_DIMMED_JS) >= len(marks) - 1  # every other non-empty bar is dimmed
    _shot(page, artifacts_dir, "overview_highlight")

    page.get_by_role("button", name="Clear selection").click()
    wait_for_count(page, lambda c: c == demo_app.n_samples, what=f"== {demo_app.n_samples} (full data set)")
    for _ in range(40):
        selected = page.evaluate(_SELECTED_JS)
        if selected is not None and not selected[0] and page.get_by_role("button", name="Clear selection").count() == 0:
            break
        page.wait_for_timeout(250)
    assert selected is not None and not selected[0], selected
    assert page.get_by_role("button", name="Clear selection").count() == 0
    page.wait_for_timeout(500)
    assert page.evaluate(_DIMMED_JS) == 0


def test_chosen_run_is_selected_again_when_the_panel_reopens(page, demo_app, artifacts_dir, fresh_memory):
    import fiftyone as fo

    ds = fo.load_dataset(DATASET)
    runs = [k for k in ds.list_runs() if ds.get_run_info(k).config.method == "kalos_agreement"]
    assert {"kalos", "kalos_polygons"} <= set(runs), runs
    open_app(page, demo_app)
    open_panel(page, OVERVIEW)
    wait_for_chart(page.locator("body"))
    select = page.locator(RUN_SELECT).filter(has_text=" · ").first
    wait_for_text(select, "kalos ·")                      # the newest run, with its metadata
    shown = select.inner_text()
    assert "detections" in shown and "threshold" in shown and " 20" in shown, shown  # label type, threshold, date
    select.click()
    page.get_by_role("option").filter(has_text="kalos_polygons ·").first.click()
    wait_for_text(page.locator("body"), "Per-sample α (kalos_polygons)")
    wait_for_text(page.locator(RUN_SELECT).filter(has_text=" · ").first, "kalos_polygons ·")

    page.locator(f'{panel_tab(OVERVIEW)} button[title="Close"]').click()
    page.locator(panel_tab(OVERVIEW)).wait_for(state="detached", timeout=15_000)
    open_panel(page, OVERVIEW)
    wait_for_chart(page.locator("body"))
    text = wait_for_text(page.locator(RUN_SELECT).filter(has_text=" · ").first, "kalos_polygons ·")
    assert text.startswith("kalos_polygons · polylines")
    wait_for_text(page.locator("body"), "Per-sample α (kalos_polygons)")
    _shot(page, artifacts_dir, "overview_reopened")

    page.reload()                                              # and after reloading the App
    page.locator(COUNT).first.wait_for(timeout=90_000)
    page.wait_for_timeout(1000)
    if not page.locator(panel_tab(OVERVIEW)).count():
        open_panel(page, OVERVIEW)
    page.locator(panel_tab(OVERVIEW)).first.click()
    wait_for_text(page.locator(RUN_SELECT).filter(has_text=" · ").first, "kalos_polygons ·", timeout=60)


def test_every_width_panel_is_registered():
    """The width check runs in the split test of each registered panel: a renamed panel must not drop it."""
    assert set(WIDTH_PANELS) <= set(panel_names())
