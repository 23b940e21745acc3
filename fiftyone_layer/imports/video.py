"""One video export per rater (MOT challenge text, CVAT for video 1.1 XML) into one frame field per rater.

Python: :func:`import_video_exports` (a list of (rater, path, format)); command line: :mod:`.cli`
(``--rater alice alice/ MOT VIDEOS``). ``path`` is one file (one video) or a folder of them, one
file per video named after it (``<video>.txt`` for MOT, ``<video>.xml`` for CVAT; for MOT also
MOTChallenge's ground-truth sequence folders ``<video>/gt/gt.txt`` with ``seqinfo.ini``); the files are
read by the engine's readers (:mod:`kalos_core.video.mot`, :mod:`kalos_core.video.cvat`: CVAT's
tracks expanded per frame as CVAT does, frames numbered from 1 as FiftyOne numbers them).

A file's video is the sample whose file name stem is the file's stem: a sample of the dataset, or
a new sample for the video file of that stem in the videos folder. Each rater's boxes go to
``frames.<label_field>_<rater>`` as Detections in FiftyOne's relative ``[x, y, w, h]``, the track
id in ``Detection.index`` (as FiftyOne's CVAT video importer sets it), the rater in ``rater_id``.
The frame size is ``frame_size`` if given, else the video's metadata, else the CVAT file's
``original_size`` or the sequence's ``seqinfo.ini``; a video without one is refused. Everything is checked before the first write:
a bad line (file and line), a video the dataset and the videos folder lack, two samples of one
stem, a frame field of another type or already holding labels on these videos (never written over).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import fiftyone as fo
import fiftyone.core.odm as foo_odm

from kalos_core.progress import run_steps
from kalos_core.video.mot import is_sequence, mot_sources, read_video_source

from .. import rawdocs
from ..names import FIELD_NAME_RE
from .errors import ImportRefused
from .schema import MAX_RATER_FIELDS, field_names

#: the video formats: name -> (file suffix, what the form shows)
VIDEO_FORMATS = {"MOT": (".txt", "MOT challenge text (video): <video>.txt, a folder of them, or MOTChallenge "
                                  "sequence folders (<video>/gt/gt.txt)"),
                 "CVATVideoDataset": (".xml", "CVAT for video 1.1 XML (video): <video>.xml, or a folder of them")}
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv")


def _rows(exports) -> list[dict]:
    rows = [dict(zip(("rater", "path", "format", "data_path"), e)) if isinstance(e, (tuple, list)) else dict(e)
            for e in exports]
    if not rows:
        raise ImportRefused("give at least one (rater, export path, format)")
    for i, row in enumerate(rows):
        missing = [k for k in ("rater", "path", "format") if not str(row.get(k) or "").strip()]
        if missing:
            raise ImportRefused(f"export {i + 1} lacks its {', '.join(missing)}",
                                fix="video exports name no rater: give each its rater")
        if row["format"] not in VIDEO_FORMATS:
            raise ImportRefused(f"format {row['format']!r} is not a video format ({', '.join(VIDEO_FORMATS)})",
                                row["path"], fix="import image exports and video exports separately")
        row["rater"] = str(row["rater"]).strip()
    names = [r["rater"] for r in rows]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ImportRefused(f"rater {twice[0]!r} is named for two exports; give each export its own rater name")
    if len(rows) > MAX_RATER_FIELDS:
        raise ImportRefused(f"{len(rows)} raters: one field per rater is limited to {MAX_RATER_FIELDS}")
    return rows


def _files(row) -> list[Path]:
    """The export's files, one per video (for MOT also MOTChallenge sequence folders, ``<video>/gt/gt.txt``)."""
    path, suffix = Path(row["path"]), VIDEO_FORMATS[row["format"]][0]
    mot = row["format"] == "MOT"
    if not path.exists():
        raise ImportRefused("no export at this path", path)
    if path.is_file() or (mot and is_sequence(path)):
        files = [path]
    else:
        files = [p for p in mot_sources(path) if p.suffix.lower() == suffix or (mot and p.is_dir())]
    wrong = [f for f in files if f.is_file() and f.suffix.lower() != suffix]
    if wrong or not files:
        raise ImportRefused(f"holds no {suffix} file" if not files else f"is not a {suffix} file", path,
                            fix=f"give the {row['format']} export: {suffix} files named after their videos"
                                + (" or MOTChallenge sequence folders (<video>/gt/gt.txt)" if mot else "")
                                + f" (rater {row['rater']!r})")
    return files


def _cvat_size(path: Path):
    """(width, height) of a CVAT video export's ``original_size`` (None when it gives none)."""
    size = ET.parse(path).getroot().find("meta/*/original_size")
    try:
        return float(size.findtext("width")), float(size.findtext("height"))
    except (AttributeError, TypeError, ValueError):
        return None


def _read(row) -> dict:
    """``{video stem: (rows (frame, track, x, y, w, h) in pixels, labels, file, the export's frame size)}``
    of one export (the size: CVAT's ``original_size``, MOTChallenge's ``seqinfo.ini``)."""
    out = {}
    for f in _files(row):
        try:
            stem, rows, labels, info = read_video_source(f)
            size = (float(info["width"]), float(info["height"])) if info.get("width") and info.get("height") \
                else _cvat_size(f) if f.suffix.lower() == ".xml" else None
        except ValueError as e:
            raise ImportRefused(str(e), fix=f"correct the file, or export it from the tool again "
                                            f"(rater {row['rater']!r})") from None
        labels = labels if labels is not None else ["object"] * len(rows)
        if stem in out:
            raise ImportRefused(f"video {stem!r} has two files in this export", f)
        out[stem] = (rows, labels, f, size)
    return out


def _parse_size(frame_size):
    if frame_size is None or frame_size == "":
        return None
    try:
        w, h = (float(v) for v in (frame_size.lower().split("x") if isinstance(frame_size, str) else frame_size))
    except (TypeError, ValueError):
        raise ImportRefused(f"frame size {frame_size!r} is not WIDTHxHEIGHT", fix="give e.g. 1920x1080") from None
    if not (w > 0 and h > 0):
        raise ImportRefused(f"frame size {frame_size!r} must be positive", fix="give e.g. 1920x1080")
    return w, h


def _video_files(folder) -> dict:
    if not folder:
        return {}
    if not os.path.isdir(folder):
        raise ImportRefused("no videos folder at this path", folder)
    found: dict = {}
    for name in sorted(os.listdir(folder)):
        stem, ext = os.path.splitext(name)
        if ext.lower() in VIDEO_SUFFIXES:
            if stem in found:
                raise ImportRefused(f"two videos are named {stem!r} ({os.path.basename(found[stem])}, {name})", folder,
                                    fix="keep one video per name")
            found[stem] = os.path.join(folder, name)
    return found


def _samples(dataset, stems: set, folder, source: dict) -> tuple[dict, dict]:
    """``({stem: (id, width, height)} of the dataset's videos, {stem: new video file})``; refuses a
    video that neither has, or a stem two samples share."""
    have: dict = {}
    if dataset is not None and len(dataset):
        if dataset.media_type != "video":
            raise ImportRefused(f"dataset {dataset.name!r} holds {dataset.media_type} samples; video exports go "
                                "into a video dataset", fix="import into a new dataset (give the videos folder)")
        for sid, path, w, h, n in zip(*dataset.values(["id", "filepath", "metadata.frame_width",
                                                       "metadata.frame_height", "metadata.total_frame_count"])):
            stem = os.path.splitext(os.path.basename(path))[0]
            if stem in stems and stem in have:
                raise ImportRefused(f"samples {have[stem][0]} and {sid} are both video {stem!r}: its labels cannot "
                                    f"be told apart", fix="give every video its own file name")
            have[stem] = (sid, w, h, n)
    files = _video_files(folder)
    new = {s: files[s] for s in sorted(stems - set(have)) if s in files}
    lacking = sorted(stems - set(have) - set(new))
    if lacking:
        where = f"dataset {dataset.name!r}" if dataset is not None else "a new dataset"
        raise ImportRefused(f"video {lacking[0]!r} is neither in {where} (a sample whose file name stem is "
                            f"{lacking[0]!r}) nor in the videos folder{f' {folder}' if folder else ''}",
                            source[lacking[0]], fix="give the videos folder holding it, import into the dataset "
                                                    "holding it, or rename the file after its video")
    return {s: have[s] for s in stems & set(have)}, new


def _check_fields(dataset, paths: dict, ids: list) -> None:
    """Refuse a frame field of another type, or one already holding labels on these videos."""
    if dataset is None:
        return
    schema = dataset.get_frame_field_schema() or {}
    view = dataset.select(ids) if ids else None
    for rater, name in paths.items():
        if name not in schema:
            continue
        kind = getattr(schema[name], "document_type", None)
        if kind is not fo.Detections:
            raise ImportRefused(f"frame field frames.{name} exists and holds {getattr(kind, '__name__', 'other')} "
                                f"values, not the Detections rater {rater!r} would write",
                                fix="choose another label_field; the import never writes over a field")
        if view is not None and view.count(f"frames.{name}"):
            raise ImportRefused(f"frame field frames.{name} already holds labels on these videos (rater {rater!r})",
                                fix="choose another label_field, or delete that field first; the import never "
                                    "writes over labels")


def _write_frames(dataset, values: dict, raters: dict) -> None:
    """``{field: {sample id: ((rows, labels, ...), (w, h))}}`` as frame documents, upserted in bulk (frames
    that exist get the field, the others are created), as FiftyOne writes them (:mod:`..rawdocs`)."""
    from bson import ObjectId
    from pymongo import UpdateOne

    coll = foo_odm.get_db_conn()[dataset._frame_collection_name]
    now = datetime.now(timezone.utc)
    ops = []
    for field, per_video in values.items():
        for sid, ((boxes, labels, *_), (w, h)) in per_video.items():
            frames: dict = {}
            for (f, t, x, y, bw, bh), label in zip(boxes.tolist(), labels):
                frames.setdefault(int(f), []).append(rawdocs.detection(
                    label, (x / w, y / h, bw / w, bh / h), {"index": int(t), "rater_id": raters[field]}))
            for f, dets in frames.items():
                ops.append(UpdateOne({"_sample_id": ObjectId(sid), "frame_number": f},
                                     {"$set": {field: rawdocs.label_list(fo.Detections, dets), "last_modified_at": now},
                                      "$setOnInsert": {"_dataset_id": dataset._doc.id, "created_at": now}},
                                     upsert=True))
                if len(ops) >= rawdocs.BATCH:
                    coll.bulk_write(ops, ordered=False)
                    ops = []
    if ops:
        coll.bulk_write(ops, ordered=False)
    for field in values:
        if not dataset.has_frame_field(field):
            dataset.add_frame_field(field, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
    dataset.add_dynamic_frame_fields(fields=list(values))
    dataset.reload()


def video_steps(dataset_or_name, exports, videos=None, label_field="raters", frame_size=None):
    """Generator of ``(fraction, message)``; returns ``(dataset, n videos, n boxes)``. See the module docstring."""
    if not isinstance(label_field, str) or not FIELD_NAME_RE.match(label_field):
        raise ImportRefused(f"label_field must start with a letter and hold only letters, digits and _: {label_field!r}")
    rows = _rows(exports)
    folder = videos or next((r.get("data_path") for r in rows if r.get("data_path")), None)
    size = _parse_size(frame_size)
    per_rater = {}
    for i, row in enumerate(rows):
        yield 0.6 * i / len(rows), f"reading {row['rater']}"
        per_rater[row["rater"]] = _read(row)
    source = {s: got[2] for r in reversed(list(per_rater)) for s, got in per_rater[r].items()}
    stems = set(source)
    dataset = dataset_or_name
    if isinstance(dataset, str):
        dataset = fo.load_dataset(dataset) if fo.dataset_exists(dataset) else None
    have, new = _samples(dataset, stems, folder, source)
    sizes = {}
    for stem in sorted(stems):
        cvat = {got[stem][3] for got in per_rater.values() if stem in got and got[stem][3]}
        meta = have.get(stem, (None, None, None, None))[1:3]
        sizes[stem] = size or (meta if all(meta) else None) or (cvat.pop() if len(cvat) == 1 else None)
        if not sizes[stem]:
            what = f"sample {have[stem][0]} (video {stem!r})" if stem in have else f"video {new[stem]}"
            raise ImportRefused(f"{what} has no frame size: FiftyOne's metadata gives none"
                                + (f" and the exports' sizes disagree ({sorted(cvat)})" if len(cvat) > 1 else ""),
                                fix="give the frame size (frame_size / --frame-size WIDTHxHEIGHT), or compute the "
                                    "videos' metadata first (dataset.compute_metadata())")
    for rater, got in per_rater.items():   # a file of another video: boxes after the video's last frame
        for stem, (boxes, _, path, _) in got.items():
            count = have.get(stem, (None,) * 4)[3]
            if count and len(boxes) and boxes[:, 0].max() > count:
                raise ImportRefused(f"a box on frame {int(boxes[:, 0].max())} of video {stem!r}, which has "
                                    f"{count} frames (sample {have[stem][0]})", path,
                                    fix=f"check that this is rater {rater!r}'s file of that video (frames "
                                        "numbered from 1)")
    known = ((dataset.info if dataset is not None else {}).get("kalos_import") or {}).get("rater_fields") or {}
    info = {"kalos_import": {"rater_fields": {k[7:]: v for k, v in known.items() if k.startswith("frames.")}}}
    plan = field_names(info, label_field, ["labels"], "rater_fields", list(per_rater))["labels"]
    _check_fields(dataset, plan, [v[0] for v in have.values()])
    # every check passed: the first write
    yield 0.7, f"writing {len(stems)} videos"
    dataset = dataset if dataset is not None else fo.Dataset(dataset_or_name)
    if new:
        samples = [fo.Sample(filepath=os.path.abspath(p), metadata=fo.VideoMetadata(
            frame_width=sizes[s][0], frame_height=sizes[s][1])) for s, p in new.items()]
        ids = dataset.add_samples(samples, progress=False)
        have.update((s, (sid, None, None, None)) for s, sid in zip(new, ids))
    n_boxes = sum(len(got[s][0]) for got in per_rater.values() for s in got)
    yield 0.75, f"writing {n_boxes} boxes"
    _write_frames(dataset, {plan[r]: {have[s][0]: (got[s], sizes[s]) for s in got} for r, got in per_rater.items()},
                  dict(zip(plan.values(), plan)))
    record = dataset.info.setdefault("kalos_import", {})
    record.setdefault("rater_fields", {}).update({f"frames.{f}": r for r, f in plan.items()})
    record["video_exports"] = [{k: str(r.get(k) or "") for k in ("rater", "path", "format")} for r in rows]
    dataset.save()
    return dataset, len(stems), n_boxes


def import_video_exports(dataset_or_name, exports, videos=None, label_field="raters", frame_size=None,
                         progress=None):
    """Import one video export per rater into a video dataset (a Dataset, or a name: loaded or created).

    ``exports``: ``(rater, path, format[, videos folder])`` tuples or dicts, ``format`` ``"MOT"`` or
    ``"CVATVideoDataset"``, ``path`` one file or a folder of files named after their videos;
    ``videos``: the folder of the video files for videos the dataset lacks; ``frame_size``:
    ``"WIDTHxHEIGHT"`` or ``(w, h)``, for videos whose size FiftyOne does not know. Writes
    ``frames.<label_field>_<rater>``; returns the dataset."""
    return run_steps(video_steps(dataset_or_name, exports, videos, label_field, frame_size), progress)[0]
