"""End-to-end: the class difficulty panel's controls in the App (demo data set, 5 classes).

Typing a search term and changing top-N redraw the chart with the classes they leave; a click
on a class changes the grid to the samples where that class's labels do not agree.
"""

from __future__ import annotations

import time

import pytest
from e2e_pages import chart_marks, click_until_count_changes, open_app, open_panel, wait_for_chart

pytestmark = pytest.mark.e2e

PANEL = "kalos_class_difficulty"


def _bars(content) -> list[dict]:
    return [m for m in chart_marks(content) if m["type"] == "bar"]


def _wait_for_bars(content, n: int, timeout: float = 30.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        bars = _bars(content)
        if len(bars) == n:
            return bars
        if time.monotonic() > deadline:
            raise AssertionError(f"the chart shows {len(bars)} bars, not {n}, after {timeout:.0f} s")
        content.page.wait_for_timeout(250)


def _type(content, label: str, text: str) -> None:
    """Type into the panel's input labelled ``label`` as a user does, then leave the field."""
    box = content.get_by_text(label, exact=True).first.locator("xpath=following::input[1]")
    box.click()
    box.press("Control+A")
    box.press("Backspace")
    if text:
        box.press_sequentially(text, delay=60)
    box.press("Tab")


def test_search_and_top_n_redraw_the_chart_and_a_class_click_filters_the_grid(page, demo_app):
    import fiftyone as fo

    from e2e_harness import DATASET

    ds = fo.load_dataset(DATASET)
    classes = sorted(ds.load_run_results("kalos").class_difficulty)
    assert len(classes) == 5
    open_app(page, demo_app)
    content = open_panel(page, PANEL)
    wait_for_chart(content)
    all_bars = _wait_for_bars(content, len(classes))   # every demo class has more than 5 units

    target = next(c for c in classes if sum(c in other for other in classes) == 1)  # a name only it contains
    _type(content, "Search class", target[:4])
    _wait_for_bars(content, 1)
    content.get_by_text(f"match “{target[:4]}”").first.wait_for(timeout=15_000)

    _type(content, "Search class", "")
    _wait_for_bars(content, len(all_bars))
    _type(content, "Top N (0: all)", "2")
    bars = _wait_for_bars(content, 2)

    n = demo_app.n_samples
    got = click_until_count_changes(page, sorted(bars, key=lambda b: b["y"]), n, timeout=10,  # hardest first
                                    what="two hardest classes")
    assert 0 < got < n
    content.get_by_text("labels that do not agree").first.wait_for(timeout=15_000)
