"""Video agreement: known answers by hand (identity, switches, fragmentations, jitter), the frames' α
as the image measure's, and the MOT folders' input and refusals."""

import json
import math

import numpy as np
import pytest

from kalos_core import Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.cli import main
from kalos_core.measure import get_measure
from kalos_core.video.data import video_data
from kalos_core.video.engine import VideoConfig

MEASURE = get_measure("video")


def _track(tid, frames, x=0.0, y=0.0, w=10.0, h=10.0, dx=0.0):
    return [(f, tid, x + dx * f, y, w, h) for f in frames]


def _run(videos, **params):
    return MEASURE.run(video_data(videos), VideoConfig(**params)).to_dict()


FRAMES = range(1, 11)
A = _track(1, FRAMES, dx=3) + _track(2, FRAMES, x=200, y=200)


def test_identical_raters_agree_everywhere():
    r = _run({"v": {"a": A, "b": list(A)}})
    assert r["mean_alpha"] == 1 and set(r["per_video"]["v"]["frame_alpha"]) == {1.0}
    p = r["pairs"]["a / b"]
    assert p["HOTA"] == p["DetA"] == p["AssA"] == p["LocA"] == p["IDF1"] == 1
    assert p["id_switches"] == p["fragmentations"] == 0


def test_one_identity_change_is_one_switch_and_the_hota_formula_by_hand():
    """b's track 1 takes the id 3 from frame k = 4 on: a (the reference) sees one switch, b none.
    AssA = Σ_TP |TPA| / (|gtID| + |prID| - |TPA|) / TP: track 2: 10 TPs of 10/10; track 1: 3 of 3/10 and
    7 of 7/10, so (10 + 0.9 + 4.9) / 20 at every α; IDF1 = 2 (10 + 7) / 40."""
    b = [(f, 3 if tid == 1 and f >= 4 else tid, *box) for f, tid, *box in A]
    p = _run({"v": {"a": A, "b": b}})["pairs"]["a / b"]
    assert p["id_switches"] == 1 and p["id_switches_by_reference"] == [1, 0]
    assert p["AssA"] == pytest.approx(15.8 / 20) and p["DetA"] == 1
    assert p["HOTA"] == pytest.approx(math.sqrt(15.8 / 20))
    assert p["IDF1"] == pytest.approx(34 / 40) and p["fragmentations"] == 0


def test_a_track_split_by_a_gap_is_one_fragmentation():
    """b misses frame 5 of track 1: one fragmentation (a as the reference), one gap in b; resumed under a
    new id it is one switch as well."""
    gap = [row for row in A if not (row[1] == 1 and row[0] == 5)]
    r = _run({"v": {"a": A, "b": gap}})
    assert r["pairs"]["a / b"]["fragmentations_by_reference"] == [1, 0]
    assert r["pairs"]["a / b"]["id_switches"] == 0
    assert r["raters"]["b"]["gaps"] == 1 and r["raters"]["b"]["missing_frames"] == 1 and r["raters"]["a"]["gaps"] == 0
    split = [(f, 9 if tid == 1 and f > 5 else tid, *box) for f, tid, *box in gap]
    p = _run({"v": {"a": A, "b": split}})["pairs"]["a / b"]
    assert p["fragmentations"] == 1 and p["id_switches"] == 1


def test_the_frames_alpha_is_the_image_measures_on_the_same_frames():
    """b draws only every other frame, with some noise: each frame's α is compute_agreement's on that frame
    given as an image (annotation objects, not the video's columns)."""
    rng = np.random.default_rng(3)
    b = [(f, t, x + rng.normal(0, 2), y, w, h) for f, t, x, y, w, h in A if f % 2]
    r = _run({"v": {"a": A, "b": b}})
    images = [make_image(f, 300, 300, ("a", "b"),
                         [Annotation(f"{rat}{k}", rat, 1, row[2:6], row[2:6])
                          for rat, rows in (("a", A), ("b", b)) for k, row in enumerate(rows) if row[0] == f])
              for f in FRAMES]
    ref = compute_agreement(MultiRaterDataset(images, {1: "object"}, "box"), VideoConfig().agreement())
    assert r["per_video"]["v"]["frame_alpha"] == pytest.approx([ref.per_image_alpha[str(f)] for f in FRAMES])
    assert r["mean_alpha"] == pytest.approx(ref.mean_alpha) and r["global_alpha"] == pytest.approx(ref.global_alpha)


def test_each_blocks_pooled_alpha_is_the_image_measures_global_alpha_on_its_frames():
    """Blocks of 4 frames (1-4, 5-8, 9-10): each block's α is compute_agreement's global α on those
    frames given as images; the frames' α, the pairs and the video's α do not depend on the blocks."""
    rng = np.random.default_rng(5)
    b = [(f, t, x + rng.normal(0, 3), y, w, h) for f, t, x, y, w, h in A if f % 3]
    r = _run({"v": {"a": A, "b": b}}, window=4)
    blocks = r["per_video"]["v"]["blocks"]
    assert [(x["first"], x["last"]) for x in blocks] == [(1, 4), (5, 8), (9, 10)]
    for block in blocks:
        frames = range(block["first"], block["last"] + 1)
        images = [make_image(f, 300, 300, ("a", "b"),
                             [Annotation(f"{rat}{k}", rat, 1, row[2:6], row[2:6])
                              for rat, rows in (("a", A), ("b", b)) for k, row in enumerate(rows) if row[0] == f])
                  for f in frames]
        ref = compute_agreement(MultiRaterDataset(images, {1: "object"}, "box"), VideoConfig().agreement())
        assert block["alpha"] == pytest.approx(ref.global_alpha) and block["n_units"] == ref.n_units
    assert len({round(x["alpha"], 9) for x in blocks}) > 1   # the blocks differ: no trivial case
    whole, none = _run({"v": {"a": A, "b": b}}), _run({"v": {"a": A, "b": b}}, window=0)
    assert none["per_video"]["v"]["blocks"] == [] and len(whole["per_video"]["v"]["blocks"]) == 1
    for other in (whole, none):
        assert other["per_video"]["v"]["frame_alpha"] == r["per_video"]["v"]["frame_alpha"]
        assert (other["pairs"], other["global_alpha"]) == (r["pairs"], r["global_alpha"])


def test_jitter_by_hand():
    """A box 2 px off its straight path (10 x 10 box): 1/10, 2/10, 1/10 at frames 2, 3, 4; steady tracks 0."""
    wobble = [(f, 1, 2.0 if f == 3 else 0.0, 0.0, 10.0, 10.0) for f in range(1, 6)]
    r = _run({"v": {"a": wobble, "b": _track(1, range(1, 6), dx=1)}})
    assert r["per_video"]["v"]["tracks"]["a"]["1"]["jitter"] == pytest.approx(0.4 / 3)
    assert r["raters"]["b"]["jitter"] == pytest.approx(0.0, abs=1e-12)
    assert r["per_video"]["v"]["worst_tracks"][0] == {"rater": "a", "track": 1, "jitter": pytest.approx(0.4 / 3)}


def test_partials_merge_over_videos_as_one_run():
    """Two videos run together: each video's entry as run alone, the pairs' pooled counts their sums."""
    b = [(f, 3 if tid == 1 and f >= 4 else tid, *box) for f, tid, *box in A]
    both = _run({"v1": {"a": A, "b": b}, "v2": {"a": A, "b": list(A)}})
    alone = _run({"v1": {"a": A, "b": b}})
    assert both["per_video"]["v1"] == alone["per_video"]["v1"]
    assert both["pairs"]["a / b"]["AssA"] == pytest.approx((15.8 + 20) / 40)
    assert both["pairs"]["a / b"]["id_switches"] == 1


def _write(root, rater, video, lines):
    folder = root / rater
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{video}.txt").write_text("".join(f"{line}\n" for line in lines))


def _mot(rows):
    return [f"{f},{t},{x!r},{y!r},{w!r},{h!r},1,-1,-1,-1" for f, t, x, y, w, h in rows]


def test_mot_folders_through_the_command_line(tmp_path, capsys):
    b = [(f, 3 if tid == 1 and f >= 4 else tid, *box) for f, tid, *box in A]
    _write(tmp_path, "a", "seq1", _mot(A))
    _write(tmp_path, "b", "seq1", _mot(b))
    out = tmp_path / "out.json"
    assert main(["video", str(tmp_path), "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["pairs"]["a / b"]["AssA"] == pytest.approx(15.8 / 20)
    assert result["per_video"]["seq1"]["frames"] == list(FRAMES)
    assert "a / b" in capsys.readouterr().out


@pytest.mark.parametrize("line, message", [
    ("1,1,0,0,10", "5 column(s)"), ("0,1,0,0,10,10,1,-1,-1,-1", "frame '0' must be an integer from 1"),
    ("2.5,1,0,0,10,10", "frame '2.5'"), ("1,x,0,0,10,10", "id 'x' is not a number"),
    ("1,1,0,0,0,10", "both must be > 0"), ("1,1,0,nan,10,10", "y is nan"),
    ("1,2,0,0,10,10", "track 2 is given twice in frame 1 (first on line 2)")])
def test_a_bad_mot_line_is_refused_naming_file_and_line(tmp_path, capsys, line, message):
    _write(tmp_path, "a", "seq1", _mot(A[:1]))
    _write(tmp_path, "b", "seq1", ["1,1,0,0,10,10,1,-1,-1,-1", "1,2,50,50,10,10,1,-1,-1,-1", line])
    assert main(["video", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{tmp_path / 'b' / 'seq1.txt'}:3: " in err and message in err, err


CVAT = """<?xml version="1.0" encoding="utf-8"?>
<annotations><version>1.1</version>
  <meta><task><size>10</size><start_frame>0</start_frame><stop_frame>9</stop_frame></task></meta>
  <track id="0" label="car" source="manual">
    <box frame="0" outside="0" occluded="0" keyframe="1" xtl="0" ytl="0" xbr="10" ybr="10" z_order="0"/>
    <box frame="4" outside="0" occluded="0" keyframe="1" xtl="4" ytl="0" xbr="14" ybr="10" z_order="0"/>
    <box frame="6" outside="1" occluded="0" keyframe="1" xtl="8" ytl="0" xbr="18" ybr="10" z_order="0"/>
    <box frame="8" outside="0" occluded="0" keyframe="1" xtl="20" ytl="0" xbr="30" ybr="10" z_order="0"/>
  </track>
</annotations>
"""


def test_cvat_video_tracks_expand_per_frame_as_cvat_does(tmp_path):
    """Interpolated between keyframes (frame 5 on the way to the outside keyframe 6), nothing while
    outside (6, 7), the last keyframe carried to the task's stop frame (9)."""
    from kalos_core.video.cvat import read_cvat_video

    path = tmp_path / "v.xml"
    path.write_text(CVAT)
    rows, labels = read_cvat_video(path)
    assert rows[:, 0].tolist() == [1, 2, 3, 4, 5, 6, 9, 10] and set(labels) == {"car"}   # numbered from 1
    assert rows[:, 2].tolist() == [0, 1, 2, 3, 4, 6, 20, 20] and set(rows[:, 4]) == {10.0}


def test_a_cvat_rater_against_a_mot_rater_of_the_same_boxes(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "v.xml").write_text(CVAT)
    xs = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 8: 20, 9: 20}
    _write(tmp_path, "b", "v", _mot([(f + 1, 7, float(x), 0.0, 10.0, 10.0) for f, x in xs.items()]))
    out = tmp_path / "out.json"
    assert main(["video", str(tmp_path), "--output", str(out)]) == 0
    p = json.loads(out.read_text())["pairs"]["a / b"]
    assert p["HOTA"] == pytest.approx(1.0) and p["id_switches"] == 0
    (tmp_path / "a" / "v.xml").write_text(CVAT.replace('xbr="14"', 'xbr="3"'))
    assert main(["video", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "v.xml: track '0', frame 4: box (4.0, 0.0, 3.0, 10.0) has no area" in err, err


def test_a_video_with_one_rater_is_left_out_and_said(tmp_path):
    _write(tmp_path, "a", "seq1", _mot(A))
    _write(tmp_path, "b", "seq1", _mot(A))
    _write(tmp_path, "a", "seq2", _mot(A))
    out = tmp_path / "out.json"
    assert main(["video", str(tmp_path), "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result["per_video"]) == ["seq1"] and result["skipped_videos"] == [{"video": "seq2", "raters": ["a"]}]
    assert main(["video", str(tmp_path), "--distance", "oks"]) == 2


def test_videos_spread_over_processes_give_the_same_result():
    from kalos_core.video.data import synthetic_videos

    videos, _ = synthetic_videos(n_videos=3, n_frames=10, n_raters=3, n_tracks=3, seed=2)
    data = video_data(videos)
    local = MEASURE.run(data, VideoConfig()).to_dict()
    data.options.update(workers=2, executor="processes")
    assert MEASURE.run(data, VideoConfig()).to_dict() == local


@pytest.mark.parametrize("change, message", [
    (lambda x: x.replace('<box frame="8"', '<polygon frame="8"').replace('z_order="0"/>\n  </track>',
                                                                        'z_order="0"/>\n  </track>'),
     "a <polygon> track; video agreement compares boxes"),
    (lambda x: x.replace('frame="4"', 'frame="0"'), "track '0', frame 0: given twice"),
    (lambda x: x.replace('xtl="4"', 'xtl="four"'), "track '0', frame 4: xtl='four' is not a number"),
    (lambda x: x.replace('ybr="10" z_order="0"/>\n    <box frame="4"', 'ybr="10" rotation="30" z_order="0"/>\n    '
                                                                       '<box frame="4"'), "rotated by 30 degrees"),
    (lambda x: x.replace("<track", "<image").replace("</track>", "</image>"), "this is CVAT for images"),
    (lambda x: x[:200], "not readable XML")])
def test_a_bad_cvat_file_is_refused_naming_track_and_frame(tmp_path, capsys, change, message):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "v.xml").write_text(change(CVAT))
    _write(tmp_path, "b", "v", _mot(A))
    assert main(["video", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{tmp_path / 'a' / 'v.xml'}: " in err and message in err, err
