"""The import of video exports (MOT text and CVAT for video 1.1 XML, one per rater) into frame fields:
the boxes land relative to the frame size with their track in ``index``; video agreement on the
imported fields is the command line's (``python -m kalos_core video``) on the same folders; every
refusal names the file, line or video and the fix, and leaves the dataset exactly as it was."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from kalos_core.cli import main as kalos_main
from kalos_core.video.data import synthetic_videos
from tests.fiftyone.helpers import form_errors, resolved_form, run_operator, snapshot

ROOT = Path(__file__).resolve().parents[2]
SIZE = (640.0, 480.0)
VIDEOS, _ = synthetic_videos(n_videos=2, n_frames=12, n_raters=3, n_tracks=3, switches=1, seed=11, size=SIZE)
FIELDS = ["frames.raters_a", "frames.raters_b", "frames.raters_c"]


def _mot(rows) -> str:
    """A tracker's MOT file as the MOT challenge writes it (full-precision floats)."""
    return "".join(f"{int(f)},{int(t)},{x!r},{y!r},{w!r},{h!r},1,-1,-1,-1\n" for f, t, x, y, w, h in rows.tolist())


def _cvat(rows, stop: int) -> str:
    """CVAT for video 1.1 as CVAT 2.x writes it: every box a keyframe (frames from 0), an outside
    keyframe after each gap and after the track's end."""
    tracks = []
    for tid in np.unique(rows[:, 1]).astype(int):
        mine = rows[rows[:, 1] == tid]
        boxes = []
        for k, (f, _, x, y, w, h) in enumerate(mine.tolist()):
            boxes.append(f'<box frame="{int(f) - 1}" keyframe="1" outside="0" occluded="0" xtl="{x!r}" ytl="{y!r}" '
                         f'xbr="{x + w!r}" ybr="{y + h!r}" z_order="0"></box>')
            following = mine[k + 1, 0] if k + 1 < len(mine) else None
            if following != f + 1 and f < stop + 1:
                boxes.append(f'<box frame="{int(f)}" keyframe="1" outside="1" occluded="0" xtl="{x!r}" ytl="{y!r}" '
                             f'xbr="{x + w!r}" ybr="{y + h!r}" z_order="0"></box>')
        tracks.append(f'  <track id="{tid}" label="object" source="manual">\n    ' + "\n    ".join(boxes) + "\n  </track>")
    meta = (f"<meta><task><id>5</id><size>{stop + 1}</size><mode>interpolation</mode><start_frame>0</start_frame>"
            f"<stop_frame>{stop}</stop_frame><original_size><width>{int(SIZE[0])}</width><height>{int(SIZE[1])}"
            "</height></original_size></task></meta>")
    return f'<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n  <version>1.1</version>\n  {meta}\n' \
           + "\n".join(tracks) + "\n</annotations>\n"


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """``root/{a,b}/<video>.txt`` (MOT), ``root/c/<video>.xml`` (CVAT), ``videos/<video>.mp4``."""
    base = tmp_path_factory.mktemp("video_exports")
    for video, raters in VIDEOS.items():
        stop = int(max(r[:, 0].max() for r in raters.values())) - 1
        for rater, name in zip(("a", "b", "c"), sorted(raters)):
            (base / "root" / rater).mkdir(parents=True, exist_ok=True)
            rows = raters[name]
            if rater == "c":
                (base / "root" / rater / f"{video}.xml").write_text(_cvat(rows, stop))
            else:
                (base / "root" / rater / f"{video}.txt").write_text(_mot(rows))
        (base / "videos").mkdir(exist_ok=True)
        (base / "videos" / f"{video}.mp4").write_bytes(b"")
    return base


def _rows(base):
    return [("a", str(base / "root" / "a"), "MOT"), ("b", str(base / "root" / "b"), "MOT"),
            ("c", str(base / "root" / "c"), "CVATVideoDataset")]


def _name():
    return f"kalos-vid-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def imported(fo_isolated, exports):
    """A new video dataset from the video files; sizes from the CVAT files' original_size."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_video_exports,
    )

    return import_video_exports(_name(), _rows(exports), videos=str(exports / "videos"))


def test_boxes_are_relative_with_their_track_in_index(imported):
    assert set(imported.get_frame_field_schema()) >= {"raters_a", "raters_b", "raters_c"}
    by_stem = {Path(s.filepath).stem: s for s in imported}
    assert set(by_stem) == set(VIDEOS) and imported.media_type == "video"
    sample = by_stem["video000"]
    assert (sample.metadata.frame_width, sample.metadata.frame_height) == SIZE
    for field, rater in (("raters_a", "rater0"), ("raters_c", "rater2")):   # MOT and CVAT alike
        f, t, x, y, w, h = VIDEOS["video000"][rater][0]
        box = next(d for d in sample.frames[int(f)][field].detections if d.index == int(t))
        assert box.bounding_box == pytest.approx([x / SIZE[0], y / SIZE[1], w / SIZE[0], h / SIZE[1]], abs=1e-12)
        assert box.rater_id == field[-1] and box.label == "object"
        n = sum(len(fr[field].detections) for fr in sample.frames.values() if fr[field] is not None)
        assert n == len(VIDEOS["video000"][rater])
    assert imported.info["kalos_import"]["rater_fields"] == {f: f[-1] for f in FIELDS}
    # the frame documents are the ones FiftyOne writes for the same Detections
    import fiftyone as fo
    from bson import ObjectId
    from fiftyone.core import odm

    raw = odm.get_db_conn()[imported._frame_collection_name].find_one(
        {"_sample_id": ObjectId(sample.id), "frame_number": int(f)})
    raw_box = next(d for d in raw["raters_c"]["detections"] if d["index"] == int(t))
    own = fo.Detection(label="object", bounding_box=raw_box["bounding_box"], index=int(t), rater_id="c").to_mongo()
    assert {k: v for k, v in raw_box.items() if k != "_id"} == {k: v for k, v in dict(own).items() if k != "_id"}
    assert raw["_dataset_id"] == imported._doc.id and set(raw) >= {"created_at", "last_modified_at"}


def test_video_agreement_on_the_imported_fields_is_the_command_lines(imported, exports, tmp_path):
    out = tmp_path / "cli.json"
    assert kalos_main(["video", str(exports / "root"), "--output", str(out)]) == 0
    want = json.loads(out.read_text())
    run_operator("compute_video_agreement", imported, rater_fields=FIELDS, run_key="vid")
    got = imported.load_run_results("vid")
    stems = {sid: Path(p).stem for sid, p in zip(imported.values("id"), imported.values("filepath"))}
    for sid, entry in got.per_video.items():
        assert entry["frames"] == want["per_video"][stems[sid]]["frames"]
        assert entry["frame_alpha"] == pytest.approx(want["per_video"][stems[sid]]["frame_alpha"], abs=1e-9)
    for pair, scores in want["pairs"].items():
        for k in ("HOTA", "DetA", "AssA", "LocA", "IDF1", "id_switches", "fragmentations"):
            assert got.pairs[pair][k] == pytest.approx(scores[k], abs=1e-9), (pair, k)
    assert len(got.pairs) == 3 and got.mean_alpha == pytest.approx(want["mean_alpha"], abs=1e-9)
    assert got.global_alpha == pytest.approx(want["global_alpha"], abs=1e-9)


def _refused(ds, match, exports_, **kwargs):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        ImportRefused,
        import_video_exports,
    )

    before = snapshot(ds)
    with pytest.raises(ImportRefused) as e:
        import_video_exports(ds, exports_, **kwargs)
    assert match in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert snapshot(ds) == before
    return str(e.value)


def test_refusals_name_the_place_and_touch_nothing(fo_isolated, imported, exports, tmp_path):
    rows = _rows(exports)
    # the same raters again: their fields hold labels on these videos
    assert "already holds labels on these videos (rater 'a')" in _refused(imported, "frames.raters_a", rows)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "video000.txt").write_text(_mot(VIDEOS["video000"]["rater0"][:2]) + "3,1,0,0,0,10,1,-1,-1,-1\n")
    message = _refused(imported, f"{bad / 'video000.txt'}:3: box of width 0", [("d", str(bad), "MOT")])
    assert "correct the file" in message
    (bad / "video000.txt").write_text(_mot(VIDEOS["video000"]["rater0"]))
    (bad / "other.txt").write_text(_mot(VIDEOS["video000"]["rater0"]))
    message = _refused(imported, "video 'other' is neither in dataset", [("d", str(bad), "MOT")])
    assert str(bad / "other.txt") in message and "videos folder" in message
    os.remove(bad / "other.txt")
    counted = fo_isolated.Dataset(_name())
    counted.add_sample(fo_isolated.Sample(filepath="/nonexistent/video000.mp4", metadata=fo_isolated.VideoMetadata(
        frame_width=640, frame_height=480, total_frame_count=5)))
    message = _refused(counted, "which has 5 frames", [("d", str(bad), "MOT")])
    assert str(bad / "video000.txt") in message and "a box on frame 12 of video 'video000'" in message
    bare = fo_isolated.Dataset(_name())
    bare.add_sample(fo_isolated.Sample(filepath="/nonexistent/video000.mp4"))
    bare.first().frames[1] = fo_isolated.Frame(raters_e=fo_isolated.Classification(label="x"))
    bare.first().save()
    sid = bare.first().id
    message = _refused(bare, f"sample {sid} (video 'video000') has no frame size", [("d", str(bad), "MOT")])
    assert "--frame-size" in message
    _refused(bare, "frames.raters_e exists and holds Classification", [("e", str(bad), "MOT")], frame_size="640x480")
    _refused(bare, "not a video format", [("d", str(bad), "MOT"), ("f", str(bad), "COCODetectionDataset")])


def test_onto_an_existing_dataset_from_the_command_line(fo_isolated, exports):
    """Matched by file name stem; the frame size given; the user's fields kept; a refusal one line, exit 2;
    --agreement runs video agreement next."""
    ds = fo_isolated.Dataset(_name())
    ds.add_samples([fo_isolated.Sample(filepath=f"/elsewhere/{v}.avi", note=v) for v in VIDEOS])
    ds.persistent = True
    run = lambda *a: subprocess.run([sys.executable, "-m", "fiftyone_layer.imports", ds.name, *a], cwd=ROOT,  # noqa
                                    env=dict(os.environ), capture_output=True, text=True, timeout=300)
    args = [x for r in _rows(exports)[:2] for x in ("--rater", *r)]
    done = run(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "has no frame size" in done.stderr and len(fo_isolated.load_dataset(ds.name).get_frame_field_schema()) == 4
    done = run(*args, "--frame-size", "640x480", "--agreement", "vid")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"{ds.name}: 2 samples (videos); rater fields ['frames.raters_a', 'frames.raters_b']"
    assert lines[1].startswith("video agreement run 'vid' on 2 rater fields: mean alpha "), lines
    ds.reload()
    assert ds.load_run_results("vid").pairs["a / b"]["HOTA"] > 0.5 and ds.has_frame_field("vid_alpha")
    assert sorted(ds.values("note")) == sorted(VIDEOS) and ds.count("frames.raters_b.detections") == sum(
        len(v["rater1"]) for v in VIDEOS.values())


def test_the_app_operator_imports_video_formats(fo_isolated, exports):
    host = fo_isolated.Dataset(_name())
    name = _name()
    rows = [dict(zip(("rater", "path", "format", "data_path"), (*r, str(exports / "videos")))) for r in _rows(exports)]
    run_operator("import_rater_exports", host, exports=rows, target="new", new_dataset=name)
    ds = fo_isolated.load_dataset(name)
    assert len(ds) == 2 and ds.count("frames.raters_c.detections") == sum(len(v["rater2"]) for v in VIDEOS.values())
    mixed = [*rows[:1], {"rater": "d", "path": str(exports / "root" / "a"), "format": "COCODetectionDataset"}]
    errors = form_errors(resolved_form("import_rater_exports", host, exports=mixed, target="new", new_dataset=_name()))
    assert "video exports (MOT, CVAT for video) and image exports in one import" in errors["exports"]
    assert "frame_size" in resolved_form("import_rater_exports", host, exports=rows[:1], target="new")
    assert "frame_size" not in resolved_form("import_rater_exports", host, exports=mixed[1:], target="new")


def test_motchallenge_sequence_folders_import_with_their_seqinfo_size_and_classes(fo_isolated, exports, tmp_path):
    """Two raters in MOTChallenge's ground-truth layout (``<video>/gt/gt.txt``, integer boxes, nine
    columns; ``seqinfo.ini`` 640x480): the frame size comes from seqinfo.ini, the class column
    names the labels, a row whose considered flag is 0 is not imported."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_video_exports

    rows = []
    for rater, source in (("d", "rater0"), ("e", "rater1")):
        for video, raters in VIDEOS.items():
            seq = tmp_path / rater / video
            (seq / "gt").mkdir(parents=True)
            (seq / "seqinfo.ini").write_text(f"[Sequence]\nname={video}\nimDir=img1\nframeRate=25\nseqLength=12\n"
                                             "imWidth=640\nimHeight=480\nimExt=.jpg\n")
            (seq / "gt" / "gt.txt").write_text("".join(
                f"{int(f)},{int(t)},{round(x)},{round(y)},{round(w)},{round(h)},{int(k or rater == 'e')},"
                f"{7 if k == 1 else 1},1\n" for k, (f, t, x, y, w, h) in enumerate(raters[source].tolist())))
        rows.append((rater, str(tmp_path / rater), "MOT"))
    ds = import_video_exports(_name(), rows, videos=str(exports / "videos"))
    sample = next(s for s in ds if Path(s.filepath).stem == "video000")
    assert (sample.metadata.frame_width, sample.metadata.frame_height) == SIZE
    labels = [d.label for fr in sample.frames.values() if fr["raters_d"] for d in fr["raters_d"].detections]
    assert len(labels) == len(VIDEOS["video000"]["rater0"]) - 1                      # row 0 not considered
    assert labels.count("static_person") == 1 and set(labels) == {"pedestrian", "static_person"}
    f, t, x, y, w, h = VIDEOS["video000"]["rater1"][0]
    box = next(d for d in sample.frames[int(f)]["raters_e"].detections if d.index == int(t))
    assert box.bounding_box == pytest.approx([round(x) / 640, round(y) / 480, round(w) / 640, round(h) / 480])
