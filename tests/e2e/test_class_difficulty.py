"""End-to-end: the class difficulty panel's controls in the App (demo data set, 5 classes).

Typing a search term and changing top-N redraw the chart with the classes they leave; a click
on a class changes the grid to the samples where that class's labels do not agree; split by a
sample field, a subset bar shows exactly the samples it averages.
"""

from __future__ import annotations

import time

import pytest
from e2e_pages import (chart_marks, chart_points, click_mark, click_until_count_changes, open_app, open_panel,
                       pick_after_label, wait_for_chart, wait_for_count)

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
    """Put ``text`` into the panel's input labelled ``label`` at once (as a paste does), then leave
    the field. Not key by key: the App sends an event per keystroke and may send them out of
    order (each waits on its own request first), so the server cannot tell the last keystroke;
    the server runs the events in the order they come (tests/fiftyone/test_panel_event_order.py)."""
    box = content.get_by_text(label, exact=True).first.locator("xpath=following::input[1]")
    box.click()
    box.fill(text)
    box.press("Tab")


def test_search_and_top_n_redraw_the_chart_and_a_class_click_filters_the_grid(page, demo_app):
    import fiftyone as fo

    from e2e_pages import DATASET

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

    # split by tags (the demo has none: one subset, "(none)"): a bar per shown class, a click shows
    # exactly the samples where that class has an α
    pick_after_label(page, "Split by", "sample field: tags")
    content.get_by_text("subset", exact=True).first.wait_for(timeout=15_000)     # the split's table
    images = ds.load_run_results("kalos").class_difficulty_images
    deadline = time.monotonic() + 30
    while not (points := [p for p in chart_points(page, 1) if p["name"] == "(none)"]) and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    assert len(points) == 2, points                                                # the two shown classes
    bar = min(points, key=lambda p: (len(images[p["yv"]]), p["yv"]))
    click_mark(page, bar)
    want = len(images[bar["yv"]])
    assert wait_for_count(page, lambda c: c == want, timeout=15, what=f"== {want}") == want
    content.get_by_text(f"where {bar['yv']} has a class α", exact=False).first.wait_for(timeout=15_000)


def _summary(content) -> str:
    """The panel's one-line summary of the shown classes ("5 classes · … · showing 5 of 5, …")."""
    loc = content.get_by_text("classes ·").first
    return loc.inner_text() if loc.count() else ""


def _events(page) -> list[tuple]:
    """Record every panel event sent: ``[method, sent at, answered at]`` (s, monotonic; answered
    None until the answer arrives), to tell whether two events overlapped."""
    seen: list[list] = []

    def method(r) -> str | None:
        body = (r.post_data or "") if "operators/execute" in r.url else ""
        start = body.find('"__method__"')
        return body[start:].split('"')[3] if start >= 0 else None

    def value(r):
        import json

        try:
            return json.loads(r.post_data)["params"].get("value")
        except (ValueError, KeyError, TypeError):
            return "?"

    def sent(r):
        if method(r):
            seen.append([f"{method(r)}={value(r)!r}", time.monotonic(), None, r])

    def answered(r):
        for row in seen:
            if row[3] is r:
                row[2] = time.monotonic()

    page.on("request", sent)
    page.on("requestfinished", answered)
    return seen


def test_clearing_the_search_and_at_once_changing_top_n_shows_the_top_n_of_every_class(page, demo_app):
    """The quick second edit: Top N changed right after the search was cleared, before the
    clear's answer. On main the App's form sent its stale copy of the search with the Top N
    event and the chart went back to the searched class (1 bar, "1 match …"); the server now
    owns the search (panels/kept.py) and runs one panel's events one at a time (panels/common.py).
    Three rounds; the chart must end with Top N bars and a summary without the search."""
    import sys

    import fiftyone as fo

    from e2e_pages import DATASET

    classes = sorted(fo.load_dataset(DATASET).load_run_results("kalos").class_difficulty)
    target = next(c for c in classes if sum(c in other for other in classes) == 1)
    open_app(page, demo_app)
    content = open_panel(page, PANEL)
    wait_for_chart(content)
    _wait_for_bars(content, len(classes))
    events = _events(page)
    for top_n in (2, 3, 2):
        _type(content, "Search class", target[:4])
        _wait_for_bars(content, 1)
        content.get_by_text(f"match “{target[:4]}”").first.wait_for(timeout=15_000)
        del events[:]
        _type(content, "Search class", "")
        _type(content, "Top N (0: all)", str(top_n))   # at once: no wait for the clear's answer

        def report():
            t0 = min((e[1] for e in events), default=0)
            print(f"\n[stale-form] top N {top_n}: " + ", ".join(
                f"{m} {s - t0:.2f}-{(a - t0) if a else float('nan'):.2f} s" for m, s, a, _ in events),
                file=sys.stderr)

        try:
            _wait_for_bars(content, top_n)
        finally:
            report()
        content.page.wait_for_timeout(3000)   # any late answer has landed
        assert len(_bars(content)) == top_n, _summary(content)
        assert "match" not in _summary(content), _summary(content)
        assert f"showing {top_n} of {len(classes)}" in _summary(content), _summary(content)
