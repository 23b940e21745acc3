"""Video identity scores against the field's reference implementations, one rater as the ground truth
and another as the tracker, on seeded tracks with planted identity switches: HOTA, DetA, AssA and
LocA equal TrackEval's (its HOTA metric on its own box IoU), IDF1, identity switches and
fragmentations equal py-motmetrics' (its accumulator fed 1 - IoU, NaN below 0.5)."""

import motmetrics as mm
import numpy as np
import pytest
import trackeval
from trackeval.datasets._base_dataset import _BaseDataset

from kalos_core.measure import get_measure
from kalos_core.video.data import synthetic_videos, video_data
from kalos_core.video.engine import VideoConfig

VIDEOS, PLANTED = synthetic_videos(n_videos=2, n_frames=60, n_raters=3, n_tracks=8, noise=0.08, miss=0.1,
                                   switches=3, seed=7)


@pytest.fixture(scope="module")
def result():
    return get_measure("video").run(video_data(VIDEOS), VideoConfig()).to_dict()


def _sequence(gt: np.ndarray, tr: np.ndarray) -> dict:
    """TrackEval's per-sequence data (ids relabelled 0..n-1, as its loaders do)."""
    frames = np.arange(1, int(max(gt[:, 0].max(), tr[:, 0].max())) + 1)
    gt_names, tr_names = np.unique(gt[:, 1]), np.unique(tr[:, 1])
    data = {"num_timesteps": len(frames), "num_gt_ids": len(gt_names), "num_tracker_ids": len(tr_names),
            "num_gt_dets": len(gt), "num_tracker_dets": len(tr), "gt_ids": [], "tracker_ids": [],
            "similarity_scores": []}
    for f in frames:
        g, t = gt[gt[:, 0] == f], tr[tr[:, 0] == f]
        data["gt_ids"].append(np.searchsorted(gt_names, g[:, 1]))
        data["tracker_ids"].append(np.searchsorted(tr_names, t[:, 1]))
        data["similarity_scores"].append(_BaseDataset._calculate_box_ious(g[:, 2:6].copy(), t[:, 2:6].copy()))
    return data


def _accumulator(gt: np.ndarray, tr: np.ndarray):
    acc = mm.MOTAccumulator(auto_id=False)
    for f in range(1, int(max(gt[:, 0].max(), tr[:, 0].max())) + 1):
        g, t = gt[gt[:, 0] == f], tr[tr[:, 0] == f]
        g, t = g[np.argsort(g[:, 1])], t[np.argsort(t[:, 1])]
        dist = 1 - _BaseDataset._calculate_box_ious(g[:, 2:6].copy(), t[:, 2:6].copy())
        dist[dist > 0.5] = np.nan
        acc.update(g[:, 1].astype(int), t[:, 1].astype(int), dist, frameid=f)
    return acc


PAIRS = [("rater0", "rater1"), ("rater0", "rater2"), ("rater1", "rater2")]


def test_the_planted_switches_are_there():
    assert len(PLANTED) >= 4 and {v for v, *_ in PLANTED} == set(VIDEOS)


@pytest.mark.parametrize("a, b", PAIRS)
def test_hota_deta_assa_loca_equal_trackeval_per_video_and_combined(result, a, b):
    hota = trackeval.metrics.HOTA()
    per_seq = {v: hota.eval_sequence(_sequence(VIDEOS[v][a], VIDEOS[v][b])) for v in VIDEOS}
    combined = hota.combine_sequences(per_seq)
    for ours, theirs in [*((result["per_video"][v]["pairs"][f"{a} / {b}"], per_seq[v]) for v in VIDEOS),
                         (result["pairs"][f"{a} / {b}"], combined)]:
        for name in ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr"):
            assert ours[name] == pytest.approx(float(np.mean(theirs[name])), abs=1e-6), name
    assert 0.3 < result["pairs"][f"{a} / {b}"]["AssA"] < 0.99     # the data is no trivial case


@pytest.mark.parametrize("a, b", PAIRS + [(b, a) for a, b in PAIRS])
def test_idf1_switches_and_fragmentations_equal_motmetrics_per_video(result, a, b):
    mh = mm.metrics.create()
    first, second = sorted((a, b))
    direction = 0 if a == first else 1
    for v in VIDEOS:
        theirs = mh.compute(_accumulator(VIDEOS[v][a], VIDEOS[v][b]), name=v,
                            metrics=["idf1", "num_switches", "num_fragmentations"])
        ours = result["per_video"][v]["pairs"][f"{first} / {second}"]
        assert ours["IDF1"] == pytest.approx(float(theirs["idf1"].iloc[0]), abs=1e-6)
        assert ours["id_switches_by_reference"][direction] == int(theirs["num_switches"].iloc[0])
        assert ours["fragmentations_by_reference"][direction] == int(theirs["num_fragmentations"].iloc[0])


def test_each_planted_switch_is_one_switch_of_each_pair_with_that_rater():
    """Clean raters (little noise, no misses), one planted new id per video: each of the two pairs with
    that rater counts exactly one switch, at the planted frame, with the other rater as the reference."""
    videos, planted = synthetic_videos(n_videos=3, n_frames=40, n_raters=3, n_tracks=6, noise=0.01, miss=0.0,
                                       switches=1, seed=11)
    r = get_measure("video").run(video_data(videos), VideoConfig()).to_dict()
    assert len(planted) == 3 and r["pooled"]["id_switches"] == 2 * len(planted)
    for video, rater, _, _, first in planted:
        for pair, p in r["per_video"][video]["pairs"].items():
            with_it = rater in pair.split(" / ")
            assert p["id_switches"] == with_it and p["switch_frames"] == ([first] if with_it else []), pair
            if with_it:
                assert p["id_switches_by_reference"][pair.split(" / ").index(rater)] == 0
