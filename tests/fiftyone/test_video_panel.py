"""The video panel driven as the App drives it, on a stored video run with planted identity switches:
videos lowest α first, the frame α line is the stored one, a click on a frame shows that video as a
clip from that frame, a click on a pair shows one clip per stored switch frame (as many as it says)."""

import re

import pytest

from kalos_core.video.data import synthetic_videos
from tests.fiftyone.helpers import Panel, run_operator, video_dataset

VIDEOS, PLANTED = synthetic_videos(n_videos=3, n_frames=20, n_raters=3, n_tracks=4, switches=2, seed=11,
                                   size=(640.0, 480.0))
FIELDS = ["frames.boxes_rater0", "frames.boxes_rater1", "frames.boxes_rater2"]


@pytest.fixture(scope="module")
def ds(fo_isolated):
    ds = video_dataset(fo_isolated, VIDEOS)
    run_operator("compute_video_agreement", ds, rater_fields=FIELDS, run_key="vid")
    return ds


def test_videos_lowest_alpha_first_and_the_frame_line_is_the_stored_alpha(ds):
    p = Panel(ds, "kalos_video").call("on_load")
    per = ds.load_run_results("vid").per_video
    assert p.state["videos"] == sorted(per, key=lambda s: per[s]["mean_alpha"])
    line, blocks = p.state["frames"]
    first = per[p.state["videos"][0]]
    assert line["x"] == first["frames"] and line["y"] == pytest.approx(first["frame_alpha"])
    stored = first["blocks"]   # the step line of the pooled blocks, from the first frame to the last
    assert len(stored) > 1 and blocks["x"] == [b["first"] for b in stored] + [first["frames"][-1]]
    assert blocks["y"] == pytest.approx([b["alpha"] for b in stored] + [stored[-1]["alpha"]])
    assert blocks["line"]["shape"] == "hv" and blocks["name"] == "pooled α per 10 frames"
    worst = first["worst_tracks"][0]
    assert f"{worst['rater']} #{worst['track']}" in p.state["worst"]
    (heat,) = p.state["pairs"]
    assert heat["x"] == ["rater0", "rater1", "rater2"]
    hota = ds.load_run_results("vid").pairs["rater0 / rater1"]["HOTA"]
    assert heat["z"][0][1] == heat["z"][1][0] == pytest.approx(hota)
    p.state["video"] = p.state["videos"][-1]
    p.call("on_change_video", value=p.state["videos"][-1])
    assert p.state["frames"][0]["y"] == pytest.approx(per[p.state["videos"][-1]]["frame_alpha"])


def test_a_click_on_a_frame_shows_the_video_as_a_clip_from_that_frame(ds):
    p = Panel(ds, "kalos_video").call("on_load")
    sid = p.state["videos"][0]
    p.call("on_click_frame", path="frames", x=7, idx=6)
    view = p.view()
    assert len(view) == 1 and view.first().sample_id == sid
    assert view.first().support == [7, max(ds[sid].frames.keys())]
    assert "frame **7**" in p.state["selection"]


def test_a_click_on_a_pair_shows_one_clip_per_stored_switch_frame(ds):
    per = ds.load_run_results("vid").per_video
    pair = next(k for k in ds.load_run_results("vid").pairs
                if any(v["pairs"][k]["switch_frames"] for v in per.values()))
    a, b = pair.split(" / ")
    p = Panel(ds, "kalos_video").call("on_load").call("on_click_pair", path="pairs", x=b, y=a, z=0.5)
    want = {s: v["pairs"][pair]["switch_frames"] for s, v in per.items() if v["pairs"][pair]["switch_frames"]}
    view = p.view()
    n, videos = map(int, re.findall(r"\*\*(\d+)\*\*", p.state["selection"]))
    assert n == len(view) == sum(len(f) for f in want.values()) and videos == len(want)
    assert set(view.values("sample_id")) == set(want)
    for sid, (lo, hi) in zip(view.values("sample_id"), view.values("support")):
        assert any(lo <= f <= hi for f in want[sid])
