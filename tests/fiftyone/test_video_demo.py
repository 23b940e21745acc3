"""The video part of ``make demo``: real mp4 files OpenCV reads back frame for frame, FiftyOne's video
metadata from them, each rater's tracks on the frames, and a video run that finds the planted switches."""

import pytest


@pytest.fixture(scope="module")
def built(fo_isolated, tmp_path_factory):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.demo_video import build_video_demo

    folder = tmp_path_factory.mktemp("video_demo")
    ds, res, planted = build_video_demo(folder, name="kalos-demo-video-test", n_videos=2, n_frames=20, seed=1)
    yield ds, res, planted, folder
    ds.delete()


def test_the_videos_are_real_mp4s_with_their_metadata(built):
    import cv2
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.demo_video import SIZE

    ds, _, _, folder = built
    assert sorted(p.name for p in (folder / "videos").iterdir()) == ["video000.mp4", "video001.mp4"]
    for path, meta in zip(ds.values("filepath"), ds.values("metadata")):
        cap = cv2.VideoCapture(path)
        assert cap.get(cv2.CAP_PROP_FRAME_COUNT) == 20 and meta.total_frame_count == 20
        assert (meta.frame_width, meta.frame_height) == SIZE
        assert cap.read()[0]


def test_the_run_compares_the_three_raters_and_finds_the_planted_switches(built):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.demo_video import SIZE

    from kalos_core.measure import get_measure
    from kalos_core.video.data import synthetic_videos, video_data

    ds, res, planted, _ = built
    assert ds.get_run_info("video").config.method == "kalos_video" and res.n_videos == 2 and res.n_frames == 40
    assert set(res.pairs) == {"rater0 / rater1", "rater0 / rater2", "rater1 / rater2"}
    assert planted and res.pooled["id_switches"] >= len(planted)
    videos, _ = synthetic_videos(n_videos=2, n_frames=20, n_raters=3, n_tracks=5, switches=2, noise=0.04, seed=1,
                                 size=tuple(map(float, SIZE)))
    want = get_measure("video").run(video_data(videos, frames={v: range(1, 21) for v in videos}),
                                    get_measure("video").config())
    assert res.pooled["IDF1"] == pytest.approx(want.pooled["IDF1"]) and res.mean_alpha == pytest.approx(want.mean_alpha)
