"""End-to-end, issue 25: the charts of the measure panels use the panel's width.

Each panel is opened on the demo data set the way a user does; the plot area of every plotly
chart (plotly's drag layer: axes and bars, without margins or legend), with the category names
of its y axis (a class chart's names are data; they need their width), must span at least 80 %
of the panel, and no legend may sit beside the plot (legends go above or below it). The time from the click on the panel's menu entry to its first chart is printed
(the first open pays the server's imports). KALOS_SCREENS=<folder> saves each panel's screenshot
there (``out/screens/before`` / ``after`` for the closing note of the issue).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from e2e_pages import NEW_PANEL, open_app, panel_tab, wait_for_chart

pytestmark = pytest.mark.e2e

PANELS = ["kalos_calibration", "kalos_localisation_sensitivity", "kalos_label_convergence",
          "kalos_variation_types", "kalos_class_difficulty"]

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


def _shot(page, name: str) -> None:
    folder = os.environ.get("KALOS_SCREENS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.mouse.move(5, 995)
        page.wait_for_timeout(800)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("name", PANELS)
def test_charts_use_the_panel_width(page, demo_app, name):
    open_app(page, demo_app)
    t0 = time.monotonic()
    page.locator(NEW_PANEL).first.click()
    page.locator(f'[data-cy="new-panel-option-{name}"]').click()
    page.locator(panel_tab(name)).wait_for(timeout=30_000)
    wait_for_chart(page.locator("body"), timeout=60)
    opened = time.monotonic() - t0
    page.wait_for_timeout(1000)   # plotly's responsive resize after the first draw
    widths = page.evaluate(_WIDTHS_JS)
    print(f"\n[e2e] {name}: first chart {opened:.2f} s after the click; widths {widths}", file=sys.stderr)
    _shot(page, name)
    assert widths and all(w["panel"] > 0 for w in widths), widths
    assert not [w for w in widths if w["legend_beside"]], f"a legend beside the plot steals its width: {widths}"
    narrow = [w for w in widths if w["plot"] + w["names"] < 0.8 * w["panel"]]
    assert not narrow, f"charts narrower than 80 % of the panel: {narrow}"
