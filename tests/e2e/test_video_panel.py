"""End-to-end: the Video agreement panel in the App on the demo's video data set (``make demo``:
dataset kalos-demo-video, run "video"), served by its own App server.

A click on a frame of the α line shows that video as one clip from that frame (the grid holds one
clip, the selection line names the frame); a click on a rater pair of the identity matrix shows one
clip per frame where the stored run says that pair switches identity (the grid's count, and the
panel's stated count, equal the stored switch frames). KALOS_SCREENSHOTS=1 saves
docs/img/panels/kalos_video.png and kalos_video_pairs.png.
"""

from __future__ import annotations

import re

import pytest
from e2e_pages import (
    PLOT,
    chart_marks,
    chart_points,
    click_mark,
    doc_screenshot,
    open_app,
    open_panel,
    selection_numbers,
    wait_for_chart,
    wait_for_count,
)

pytestmark = pytest.mark.e2e

VIDEO_DATASET = "kalos-demo-video"


@pytest.fixture(scope="module")
def video_app(demo_app, start_app):
    """The App serving the video demo data set (built with the demo by ``demo_app``)."""
    import fiftyone as fo

    with start_app("app-server-video.log", name=VIDEO_DATASET) as server:
        server.n_samples = len(fo.load_dataset(VIDEO_DATASET))
        yield server


def _results():
    import fiftyone as fo

    return fo.load_dataset(VIDEO_DATASET).load_run_results("video")


@pytest.mark.screenshot
def test_a_frame_click_shows_the_video_as_a_clip_from_that_frame(page, video_app):
    open_app(page, video_app)
    open_panel(page, "kalos_video")
    wait_for_chart(page.locator("body"))
    page.wait_for_timeout(800)
    points = [p for p in chart_points(page, 0) if p["name"] == "frame α"]
    per = _results().per_video
    lowest = min(per, key=lambda s: per[s]["mean_alpha"])
    assert [p["xv"] for p in points] == [str(f) for f in per[lowest]["frames"]]   # the lowest-α video first
    target = points[len(points) // 2]
    click_mark(page, target)
    assert wait_for_count(page, lambda n: n == 1, what="== 1 (one clip)") == 1
    (frame,) = selection_numbers(page, r"from frame (\d+) \(α")
    assert frame == int(target["xv"])
    doc_screenshot(page, "kalos_video")


@pytest.mark.screenshot
def test_a_pair_click_shows_one_clip_per_stored_switch(page, video_app):
    res = _results()
    switches = {k: sum(len(v["pairs"][k]["switch_frames"]) for v in res.per_video.values()) for k in res.pairs}
    pair = max(switches, key=switches.get)
    a, b = pair.split(" / ")
    assert switches[pair] > 0
    open_app(page, video_app)
    open_panel(page, "kalos_video")
    wait_for_chart(page.locator("body"))
    page.wait_for_timeout(800)
    page.locator(PLOT).nth(1).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    (cell,) = [m for m in chart_marks(page.locator("body")) if m["type"] == "heatmap"
               and (m["xlabel"], m["ylabel"]) == (b, a)]
    click_mark(page, cell)
    got = wait_for_count(page, lambda n: n == switches[pair], what=f"== {switches[pair]} (switch clips)")
    assert got == switches[pair]
    n, videos = selection_numbers(page, rf"Showing the (\d+) identity switches of {re.escape(pair)} in (\d+) videos")
    assert n == switches[pair]
    assert videos == sum(1 for v in res.per_video.values() if v["pairs"][pair]["switch_frames"])
    page.locator(PLOT).nth(1).scroll_into_view_if_needed()
    doc_screenshot(page, "kalos_video_pairs")

