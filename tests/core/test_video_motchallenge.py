"""MOTChallenge's ground-truth layout as a rater's export (``<rater>/<seq>/gt/gt.txt`` beside
``<seq>/seqinfo.ini``, written as the MOT challenge writes them: integer pixel boxes, nine
columns, an ini with ``[Sequence]``): read as TrackEval reads ground truth, and HOTA equal to
TrackEval's own evaluation of the same files (its MOT17 reader and preprocessing)."""

import numpy as np
import pytest
import trackeval

from kalos_core.measure import get_measure
from kalos_core.video.data import synthetic_videos
from kalos_core.video.engine import VideoConfig
from kalos_core.video.mot import read_rater_folders

SEQINFO = ("[Sequence]\nname={name}\nimDir=img1\nframeRate=30\nseqLength={n}\nimWidth=1920\nimHeight=1080\n"
           "imExt=.jpg\n")


def write_sequence(root, rater, seq, rows, n_frames, zero=(), cls=None):
    """``rows`` (frame, id, x, y, w, h) as a MOTChallenge gt.txt: integer boxes, the considered flag
    0 on the rows in ``zero``, class ``cls[k]`` (default 1, pedestrian), visibility 1."""
    folder = root / rater / seq
    (folder / "gt").mkdir(parents=True)
    (folder / "seqinfo.ini").write_text(SEQINFO.format(name=seq, n=n_frames))
    lines = [f"{int(f)},{int(t)},{round(x)},{round(y)},{round(w)},{round(h)},{0 if k in zero else 1},"
             f"{cls[k] if cls else 1},1" for k, (f, t, x, y, w, h) in enumerate(rows)]
    (folder / "gt" / "gt.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_the_considered_flag_the_classes_and_seqinfo_are_read_as_trackeval_reads_them(tmp_path):
    rows = [(1, 1, 100, 100, 50, 120), (1, 2, 400, 90, 40, 110), (2, 1, 104, 101, 50, 120), (3, 3, 700, 50, 60, 60)]
    write_sequence(tmp_path, "ann", "MOT17-02", rows, n_frames=6, zero={1}, cls=[1, 1, 1, 7])
    write_sequence(tmp_path, "bob", "MOT17-02", rows[:3], n_frames=6)
    data = read_rater_folders(tmp_path)
    images = data.dataset.images
    assert [data.options["frames"][im.id] for im in images] == [("MOT17-02", f) for f in range(1, 7)]  # seqLength
    assert {(im.width, im.height) for im in images} == {(1920.0, 1080.0)}
    per_frame = [sorted((im.annotations.names[r], data.dataset.categories[c]) for r, c in
                        zip(im.annotations.rater.tolist(), im.annotations.category.tolist())) for im in images]
    assert per_frame[0] == [("ann", "pedestrian"), ("bob", "pedestrian"), ("bob", "pedestrian")]  # ann's 0 row left out
    assert per_frame[2] == [("ann", "static_person")] and per_frame[3:] == [[], [], []]


def test_a_frame_past_seqlength_and_a_bad_seqinfo_are_refused_naming_the_file(tmp_path):
    rows = [(1, 1, 100, 100, 50, 120), (9, 1, 104, 101, 50, 120)]
    write_sequence(tmp_path, "ann", "s", rows, n_frames=5)
    write_sequence(tmp_path, "bob", "s", rows[:1], n_frames=5)
    with pytest.raises(ValueError, match=r"ann/s/gt/gt.txt:2: frame 9 is past the sequence's 5 frames"):
        read_rater_folders(tmp_path)
    (tmp_path / "ann" / "s" / "gt" / "gt.txt").write_text("1,1,100,100,50,120,1,1,1\n")
    (tmp_path / "bob" / "s" / "seqinfo.ini").write_text("[Sequence]\nseqLength=five\n")
    with pytest.raises(ValueError, match=r"bob/s/seqinfo.ini: not a readable seqinfo.ini"):
        read_rater_folders(tmp_path)
    (tmp_path / "bob" / "s" / "seqinfo.ini").write_text(SEQINFO.format(name="s", n=7))
    with pytest.raises(ValueError, match=r"seqLength 7, but .*ann/s/seqinfo.ini gives 5"):
        read_rater_folders(tmp_path)
    (tmp_path / "bob" / "s" / "gt" / "gt.txt").write_text("1,1,100,100,50,120,1\n")
    with pytest.raises(ValueError, match=r"bob/s/gt/gt.txt:1: 7 column\(s\); a MOT line has at least 8"):
        read_rater_folders(tmp_path)


def test_hota_equals_trackevals_own_evaluation_of_the_same_files(tmp_path):
    """Rater "gt" in MOTChallenge's ground-truth layout with some rows not considered; rater "tr"
    both in that layout (for KaLOS) and as a MOTChallenge tracker result (for TrackEval)."""
    videos, _ = synthetic_videos(n_videos=2, n_frames=40, n_raters=2, n_tracks=6, noise=0.08, miss=0.1,
                                 switches=2, seed=11)
    gt_root, tr_root = tmp_path / "gt", tmp_path / "trackers" / "tr" / "data"
    tr_root.mkdir(parents=True)
    rng = np.random.default_rng(3)
    seq_info = {}
    for k, (video, by_rater) in enumerate(videos.items()):
        seq = f"MOT17-0{k + 2}"
        gt, tr = by_rater["rater0"], by_rater["rater1"]
        n = int(max(gt[:, 0].max(), tr[:, 0].max())) + 3
        zero = set(rng.choice(len(gt), 6, replace=False).tolist())
        folder = write_sequence(tmp_path / "kalos", "gt", seq, gt, n, zero=zero)
        write_sequence(tmp_path / "kalos", "tr", seq, tr, n)
        (gt_root / seq).mkdir(parents=True)
        for name in ("seqinfo.ini", "gt"):
            (gt_root / seq / name).symlink_to(folder / name)
        (tr_root / f"{seq}.txt").write_text("".join(
            f"{int(f)},{int(t)},{round(x)},{round(y)},{round(w)},{round(h)},1,-1,-1,-1\n" for f, t, x, y, w, h in tr))
        seq_info[seq] = None   # TrackEval reads seqLength from seqinfo.ini
    dataset = trackeval.datasets.MotChallenge2DBox({
        "GT_FOLDER": str(gt_root), "TRACKERS_FOLDER": str(tmp_path / "trackers"), "SKIP_SPLIT_FOL": True,
        "SEQ_INFO": seq_info, "TRACKERS_TO_EVAL": ["tr"], "PRINT_CONFIG": False})
    evaluator = trackeval.Evaluator({"PRINT_RESULTS": False, "PRINT_CONFIG": False, "OUTPUT_SUMMARY": False,
                                     "OUTPUT_DETAILED": False, "PLOT_CURVES": False, "TIME_PROGRESS": False,
                                     "DISPLAY_LESS_PROGRESS": True, "USE_PARALLEL": False})
    theirs, _ = evaluator.evaluate([dataset], [trackeval.metrics.HOTA()])
    theirs = theirs["MotChallenge2DBox"]["tr"]
    ours = get_measure("video").run(read_rater_folders(tmp_path / "kalos"), VideoConfig()).to_dict()
    for seq in seq_info:
        got, want = ours["per_video"][seq]["pairs"]["gt / tr"], theirs[seq]["pedestrian"]["HOTA"]
        for name in ("HOTA", "DetA", "AssA", "LocA"):
            assert got[name] == pytest.approx(float(np.mean(want[name])), abs=1e-6), (seq, name)
        assert ours["per_video"][seq]["n_frames"] == int(dataset.seq_lengths[seq])
    combined = theirs["COMBINED_SEQ"]["pedestrian"]["HOTA"]
    assert ours["pairs"]["gt / tr"]["HOTA"] == pytest.approx(float(np.mean(combined["HOTA"])), abs=1e-6)
    assert 0.3 < ours["pairs"]["gt / tr"]["AssA"] < 0.99
