"""compute_video_agreement on a real database, on video datasets (frame fields, real video metadata):
the stored result is the engine's on the same boxes, the frame- and sample-level α fields are
written and sortable, tracks read from Detection.index or fo.Instance alike, refusals, Recompute."""

import numpy as np
import pytest

from kalos_core.measure import get_measure
from kalos_core.video.data import synthetic_videos, video_data
from tests.fiftyone.helpers import refused, run_operator as execute, video_dataset

VIDEOS, PLANTED = synthetic_videos(n_videos=2, n_frames=15, n_raters=3, n_tracks=4, switches=2, seed=5,
                                   size=(640.0, 480.0))
FIELDS = ["frames.boxes_rater0", "frames.boxes_rater1", "frames.boxes_rater2"]


@pytest.fixture(scope="module")
def ds(fo_isolated):
    ds = video_dataset(fo_isolated, VIDEOS)
    execute("compute_video_agreement", ds, rater_fields=FIELDS, run_key="vid")
    return ds


def test_the_stored_run_is_the_engines_on_the_same_tracks(ds):
    res = ds.load_run_results("vid")
    want = get_measure("video").run(video_data(VIDEOS), get_measure("video").config()).to_dict()
    names = dict(zip(ds.values("filepath"), ds.values("id")))
    for video, entry in want["per_video"].items():
        got = res.per_video[names[f"/nonexistent/{video}.mp4"]]
        assert got["frame_alpha"] == pytest.approx(entry["frame_alpha"])
        assert got["pairs"]["rater0 / rater1"]["HOTA"] == pytest.approx(entry["pairs"]["rater0 / rater1"]["HOTA"])
    assert res.pairs["rater0 / rater2"]["AssA"] == pytest.approx(want["pairs"]["rater0 / rater2"]["AssA"])
    assert res.pooled["id_switches"] == want["pooled"]["id_switches"] >= len(PLANTED)
    cfg = ds.get_run_info("vid").config
    assert cfg.rater_fields == FIELDS and cfg.id_threshold == 0.5 and res.video_config["threshold"] == 0.5


def test_frame_and_video_alpha_are_sortable_fields(ds):
    res = ds.load_run_results("vid")
    by_id = dict(zip(ds.values("id"), ds.values("vid_alpha")))
    assert by_id == pytest.approx({sid: v["mean_alpha"] for sid, v in res.per_video.items()})
    assert ds.values("vid_alpha_global") == pytest.approx([res.per_video[s]["global_alpha"] for s in ds.values("id")])
    for sid, frames in zip(ds.values("id"), ds.values("frames.vid_alpha")):
        assert frames == pytest.approx(res.per_video[sid]["frame_alpha"])
    worst = ds.sort_by("vid_alpha").first()
    assert worst.vid_alpha == min(by_id.values())
    lowest = min(a for v in res.per_video.values() for a in v["frame_alpha"])
    assert ds.bounds("frames.vid_alpha")[0] == pytest.approx(lowest)   # a numeric frame field: sortable, filterable


def test_tracks_as_fo_instances_give_the_same_identity_scores(fo_isolated, ds):
    other = video_dataset(fo_isolated, VIDEOS, instances=True, extra_fields=False)
    execute("compute_video_agreement", other, rater_fields=FIELDS, run_key="vid")
    a, b = ds.load_run_results("vid").pooled, other.load_run_results("vid").pooled
    assert {k: a[k] for k in ("HOTA", "AssA", "IDF1", "id_switches")} == pytest.approx(
        {k: b[k] for k in ("HOTA", "AssA", "IDF1", "id_switches")})


def test_refusals_name_the_box_or_the_kind_of_data(fo_isolated, ds):
    bare = video_dataset(fo_isolated, {"v": {r: VIDEOS["video000"][r][:20] for r in ("rater0", "rater1")}})
    frame = bare.first().frames[int(VIDEOS["video000"]["rater0"][0, 0])]
    frame["boxes_rater0"].detections[0].index = None
    bare.first().save()
    message = refused("compute_video_agreement", bare, "has neither index nor instance", rater_fields=FIELDS[:2],
                      run_key="v")
    assert "field frames.boxes_rater0" in message
    refused("compute_agreement", ds, "use KaLOS video agreement", rater_fields=FIELDS, run_key="img")
    assert not bare.has_frame_field("v_alpha") and not bare.has_field("v_alpha")


def test_recompute_and_delete(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measure_runs import rerun_values
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.video import RUN

    values = rerun_values(RUN, ds.get_run_info("vid").config)
    assert values["rater_fields"] == FIELDS
    execute("compute_video_agreement", ds, **{**values, "run_key": "vid2"})
    assert ds.load_run_results("vid2").pairs == ds.load_run_results("vid").pairs
    run_store.delete_run(ds, "vid2")
    assert not ds.has_field("vid2_alpha") and not ds.has_frame_field("vid2_alpha") and ds.has_field("vid_alpha")
    assert np.isfinite(ds.values("vid_alpha")).all()


def test_one_frame_field_with_the_rater_in_an_attribute_gives_the_same_result(fo_isolated, ds):
    one = video_dataset(fo_isolated, VIDEOS, extra_fields=False)
    for sample in one.iter_samples(autosave=True):
        for frame in sample.frames.values():
            merged = []
            for f in FIELDS:
                name = f.removeprefix("frames.")
                for d in frame[name].detections:
                    d["rater_id"] = name.removeprefix("boxes_")
                    merged.append(d)
            frame["boxes"] = fo_isolated.Detections(detections=merged)
    execute("compute_video_agreement", one, label_field="frames.boxes", rater_attribute="rater_id", run_key="vid",
            layout="rater_attribute")
    a, b = ds.load_run_results("vid"), one.load_run_results("vid")
    assert a.pairs == b.pairs and a.mean_alpha == pytest.approx(b.mean_alpha)
