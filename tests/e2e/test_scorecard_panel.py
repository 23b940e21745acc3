"""End-to-end: the Rater scorecards panel in the App on the demo data set, with a second scorecard run
(the later half of the samples) so that the trend is drawn. The rater table names the size tendency;
split by object size, a bar shows exactly the samples holding that rater's labels in that size.
KALOS_SCREENSHOTS=1 saves the confusion heatmap, the split and the trend into docs/img/panels/."""

from __future__ import annotations

import os
import time

import pytest
from e2e_pages import (DATASET, PLOT, REPO, VIEWPORT, chart_points, click_mark, open_app, open_panel, pick_after_label,
                       save_png, wait_for_chart, wait_for_count)

pytestmark = pytest.mark.e2e

LATER = "scorecard_later"
CHARTS = {"confusion": 2, "subsets": 3, "trend": 4}     # raters, classes, confusion, split, trend


def _chart_screenshot(page, name: str) -> None:
    """KALOS_SCREENSHOTS=1: the chart ``kalos_scorecards_<chart>`` with the control above it as
    docs/img/panels/<name>.png."""
    if os.environ.get("KALOS_SCREENSHOTS", "") in ("", "0"):
        return
    plot = page.locator(PLOT).nth(CHARTS[name.rsplit("_", 1)[1]])
    plot.scroll_into_view_if_needed()
    page.mouse.move(5, VIEWPORT["height"] - 5)
    page.wait_for_timeout(800)
    b = plot.bounding_box()
    top = max(0, b["y"] - 70)
    clip = {"x": max(0, b["x"] - 10), "y": top, "width": b["width"] + 20,
            "height": min(VIEWPORT["height"] - top, b["height"] + 80)}
    save_png(page.screenshot(clip=clip), REPO / "docs" / "img" / "panels" / f"{name}.png")


def _points(page, index: int, timeout: float = 30.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while not (points := chart_points(page, index)) and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    return points


@pytest.mark.screenshot
def test_scorecard_rater_table_size_split_click_and_trend(page, demo_app):
    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import label_fields, scorecard_run
    from kalos_core.scorecard.subsets import subset_ids

    ds = fo.load_dataset(DATASET)
    ds.reload()
    fields = ds.get_run_info("scorecard").config.rater_fields
    res = scorecard_run(ds.skip(len(ds) // 2), rater_fields=fields, run_key=LATER, overwrite=True).to_dict()
    try:
        open_app(page, demo_app)
        content = open_panel(page, "kalos_scorecards")       # the newest run: LATER
        wait_for_chart(content)
        content.get_by_text("95 % CI", exact=True).first.wait_for(timeout=15_000)
        _chart_screenshot(page, "kalos_scorecards_confusion")

        pick_after_label(page, "Split by", "object size (COCO small / medium / large)")
        content.get_by_text("subset", exact=True).first.wait_for(timeout=15_000)      # the split's table
        page.wait_for_timeout(500)                                                     # the layout settles
        _chart_screenshot(page, "kalos_scorecards_subsets")
        rater = res["raters"][0]
        want = len(ds.select_labels(ids=subset_ids(res, rater, "size", "small"),
                                    fields=label_fields(ds, ds.get_run_info(LATER).config)))
        assert 0 < want < len(ds)
        points = _points(page, CHARTS["subsets"])
        assert {p["xv"] for p in points} <= {"small", "medium", "large"} and len(points) >= 3, points
        click_mark(page, next(p for p in points if p["name"] == rater and p["xv"] == "small"))
        assert wait_for_count(page, lambda c: c == want, timeout=15, what=f"== {want}") == want

        trend = _points(page, CHARTS["trend"])
        assert {p["xv"] for p in trend} == {"scorecard (round 1)", f"{LATER} (round 1)"}, trend
        _chart_screenshot(page, "kalos_scorecards_trend")
    finally:
        ds.delete_run(LATER)
