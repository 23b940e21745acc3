"""End-to-end: the Collaboration panel's second-run comparison on the demo data set.

The panel opens on run ``kalos`` (boxes); picking ``kalos_polygons`` (the same four raters on
polygons) in "Second run" must show the DIC that :func:`kalos_core.dic.compare_runs` computes
from the two stored pairwise-α matrices and shared-image counts, and a click on the
|M − M′| heatmap must change the grid (that pair's disagreements in ``kalos``).
"""

from __future__ import annotations

import re

import pytest
from e2e_pages import (DATASET, chart_marks, click_until_count_changes, open_app, open_panel, pick_after_label,
                       wait_for_chart, wait_for_text)

pytestmark = pytest.mark.e2e

PANEL = "kalos_collaboration"
SECOND = "kalos_polygons"
DIFFERENCE = "|M − M′|"


def _expected_dic() -> float:
    import fiftyone as fo

    from kalos_core.dic import compare_runs
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.run_store import load_results

    ds = fo.load_dataset(DATASET)
    a, b = load_results(ds, "kalos"), load_results(ds, SECOND)
    return compare_runs(a["collaboration"], b["collaboration"], a["collaboration_n"], b["collaboration_n"]).dic


def _plot_index(page, trace_name: str) -> int:
    """Index (among the page's plotly charts) of the chart whose first trace is ``trace_name``."""
    return page.evaluate("""(name) => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .findIndex((gd) => (gd._fullData || []).some((t) => t.name === name))""", trace_name)


def test_second_run_shows_dic_and_difference_clicks_filter_the_grid(page, demo_app):
    open_app(page, demo_app)
    content = open_panel(page, PANEL)
    wait_for_chart(content)
    pick_after_label(page, "Second run", SECOND)
    text = wait_for_text(content, "DIC = ", timeout=60)
    m = re.search(r"DIC = ‖M − M′‖ / ‖M‖ \(Frobenius\) = (-?\d+\.\d+)", text)
    assert m, text[:2000]
    expected = _expected_dic()
    assert 0 < expected and float(m.group(1)) == pytest.approx(expected, abs=5e-5)
    assert "Only in this run: none" in text and "Masked pairs (fewer than 10 shared images in either run): none" in text

    deadline = 60
    while _plot_index(page, DIFFERENCE) < 0 and deadline:
        content.get_by_text("DIC = ", exact=False).first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        deadline -= 1
    idx = _plot_index(page, DIFFERENCE)
    assert idx >= 0, "no |M − M′| heatmap drawn"
    page.locator(".js-plotly-plot").nth(idx).scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    n = demo_app.n_samples
    cells = [k for k, mk in enumerate(chart_marks(content))
             if mk["plot"] == idx and mk["type"] == "heatmap" and not mk.get("diagonal")]
    assert len(cells) == 12, cells   # 4 raters: every off-diagonal pair, none masked
    got = click_until_count_changes(page, [lambda k=k: chart_marks(content)[k] for k in cells], n,
                                    what="|M − M′| heatmap")
    assert 0 <= got < n
    wait_for_text(content, "disagree", timeout=30)
