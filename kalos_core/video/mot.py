"""The raters' folders: the MOT challenge text format (or CVAT for video, :mod:`.cvat`) (docs/video.md).

``ROOT/<rater>/<video>.txt``: one line per box, ``frame,id,x,y,w,h,conf,-1,-1,-1`` as the MOT
challenge writes tracker results (frames numbered from 1; ``x, y`` the top-left corner in
pixels; columns after ``h`` are read and ignored). Or the MOTChallenge ground-truth layout,
``ROOT/<rater>/<video>/gt/gt.txt`` beside ``<video>/seqinfo.ini``, read as TrackEval reads ground
truth: the 7th column is the *considered* flag (a 0 row is left out), the 8th the class
(:data:`MOT_CLASSES`); the sequence's ``seqLength`` frames are the video's frames and
``imWidth`` x ``imHeight`` its size. A rater without a file for a video is not a rater of that
video. Each bad line is refused, naming its file and line: a missing or non-numeric column,
a frame below 1 (or past ``seqLength``) or a non-integer frame or id, a box without width or
height, a track id given twice in one frame.
"""

from __future__ import annotations

import configparser
import math
from pathlib import Path

import numpy as np

from ..measure import MeasureData
from .data import video_data

#: MOTChallenge's class numbers (the 8th column of a ground-truth file), named as TrackEval names them
MOT_CLASSES = {1: "pedestrian", 2: "person_on_vehicle", 3: "car", 4: "bicycle", 5: "motorbike",
               6: "non_mot_vehicle", 7: "static_person", 8: "distractor", 9: "occluder",
               10: "occluder_on_ground", 11: "occluder_full", 12: "reflection", 13: "crowd"}
#: a MOTChallenge ground-truth line
GT_LINE = "frame,id,x,y,w,h,considered,class,visibility"


def _number(text: str, what: str, where: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} {text.strip()!r} is not a number (MOT lines are "
                         "frame,id,x,y,w,h,conf,-1,-1,-1)") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {what} is {text.strip()}; give a finite number")
    return x


def _fast(text: str, n_cols: int = 6) -> np.ndarray | None:
    """The rows parsed by NumPy when every line is good (None: let the line-by-line reader say why)."""
    import io
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = np.loadtxt(io.StringIO(text), delimiter=",", usecols=range(n_cols), ndmin=2, dtype=float)
    except ValueError:
        return None
    f, t, wh = rows[:, 0], rows[:, 1], rows[:, 4:6]
    ok = (np.isfinite(rows).all() and (f >= 1).all() and (f == np.round(f)).all() and (t == np.round(t)).all()
          and (wh > 0).all())
    if n_cols > 7:
        ok = ok and bool(((rows[:, 7] >= 1) & (rows[:, 7] == np.round(rows[:, 7]))).all())
    if not ok or len(np.unique(rows[:, :2], axis=0)) < len(rows):
        return None
    return rows


def read_mot_file(path: Path, ground_truth: bool = False) -> np.ndarray:
    """The rows ``(frame, id, x, y, w, h)`` of one MOT text file, with ``considered, class`` where
    ``ground_truth`` (a MOTChallenge ``gt.txt``); a ValueError names the bad line."""
    n_cols = 8 if ground_truth else 6
    line_format = GT_LINE if ground_truth else "frame,id,x,y,w,h,conf,-1,-1,-1"
    rows, seen = [], {}
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    fast = _fast(text, n_cols) if text.strip() else np.zeros((0, n_cols))
    if fast is not None:
        return fast
    names = ("frame", "id", "x", "y", "width", "height", "considered flag", "class")[:n_cols]
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        cols = line.split(",")
        if len(cols) < n_cols:
            raise ValueError(f"{where}: {len(cols)} column(s); a MOT line has at least {n_cols}: "
                             f"{','.join(line_format.split(',')[:n_cols])} (as the MOT challenge writes: {line_format})")
        row = [_number(c, what, where) for c, what in zip(cols, names)]
        frame, tid, x, y, w, h = row[:6]
        if frame < 1 or frame != int(frame):
            raise ValueError(f"{where}: frame {cols[0].strip()!r} must be an integer from 1 (MOT numbers frames from 1)")
        if tid != int(tid):
            raise ValueError(f"{where}: track id {cols[1].strip()!r} must be an integer")
        if w <= 0 or h <= 0:
            raise ValueError(f"{where}: box of width {cols[4].strip()} and height {cols[5].strip()}; both must be > 0")
        if ground_truth and (row[7] < 1 or row[7] != int(row[7])):
            raise ValueError(f"{where}: class {cols[7].strip()!r} must be an integer from 1 (MOTChallenge's classes: "
                             "1 pedestrian, 2 person on vehicle, 3 car, ...)")
        key = (int(frame), int(tid))
        if key in seen:
            raise ValueError(f"{where}: track {key[1]} is given twice in frame {key[0]} (first on line {seen[key]}); "
                             "a track has one box per frame")
        seen[key] = n
        rows.append(row)
    return np.asarray(rows, float).reshape(-1, n_cols)


def read_seqinfo(path: Path) -> dict:
    """A MOTChallenge ``seqinfo.ini``'s ``seq_length``, ``width`` and ``height`` (None where it has none)."""
    ini = configparser.ConfigParser()
    try:
        ini.read_string(path.read_text())
        seq = ini["Sequence"]
        out = {}
        for key, name in (("seqLength", "seq_length"), ("imWidth", "width"), ("imHeight", "height")):
            value = seq.get(key)
            out[name] = None if value is None else int(value)
    except (OSError, UnicodeDecodeError, configparser.Error, KeyError, ValueError) as e:
        raise ValueError(f"{path}: not a readable seqinfo.ini ({type(e).__name__}: {e}); MOTChallenge writes a "
                         "[Sequence] section with integer seqLength, imWidth and imHeight") from None
    if out["seq_length"] is not None and out["seq_length"] < 1:
        raise ValueError(f"{path}: seqLength {out['seq_length']}; a sequence has at least one frame")
    return out


def is_sequence(path: Path) -> bool:
    """A MOTChallenge sequence folder: ``<video>/gt/gt.txt``."""
    return (path / "gt" / "gt.txt").is_file()


def read_mot_sequence(folder: Path) -> tuple[np.ndarray, list, dict]:
    """One MOTChallenge sequence: the considered rows ``(frame, id, x, y, w, h)``, their class names
    and the ``seqinfo.ini`` facts (:func:`read_seqinfo`; empty without the file)."""
    gt = folder / "gt" / "gt.txt"
    rows = read_mot_file(gt, ground_truth=True)
    info = read_seqinfo(folder / "seqinfo.ini") if (folder / "seqinfo.ini").is_file() else {}
    length = info.get("seq_length")
    if length is not None and len(rows) and rows[:, 0].max() > length:
        k = int(np.argmax(rows[:, 0] > length))
        line = [n for n, text in enumerate(gt.read_text().splitlines(), 1) if text.strip()][k]
        raise ValueError(f"{gt}:{line}: frame {int(rows[k, 0])} is past the sequence's {length} frames "
                         f"(seqLength in {folder / 'seqinfo.ini'})")
    kept = rows[rows[:, 6] != 0]   # TrackEval leaves out ground truth whose considered flag is 0
    names = [MOT_CLASSES.get(int(c), f"class {int(c)}") for c in kept[:, 7]]
    return kept[:, :6], names, info


def mot_sources(folder: Path) -> list[Path]:
    """A rater's videos in ``folder``: ``<video>.txt`` / ``<video>.xml`` files and MOTChallenge
    sequence folders (:func:`is_sequence`), in name order."""
    return sorted(p for p in folder.iterdir()
                  if (p.is_file() and p.suffix.lower() in (".txt", ".xml")) or (p.is_dir() and is_sequence(p)))


def read_video_source(path: Path) -> tuple[str, np.ndarray, list | None, dict]:
    """One rater's video, whatever its form: ``(video name, rows (frame, id, x, y, w, h), class
    names (None for MOT text: one class), the sequence's seqinfo.ini facts (empty but for a
    MOTChallenge sequence))``; a ValueError names the file and line."""
    from .cvat import read_cvat_video

    if path.is_dir():
        rows, names, info = read_mot_sequence(path)
        return path.name, rows, names, info
    if path.suffix.lower() == ".xml":
        rows, names = read_cvat_video(path)
        return path.stem, rows, names, {}
    return path.stem, read_mot_file(path), None, {}


def read_rater_folders(root: Path) -> MeasureData:
    """``ROOT/<rater>/<video>.txt`` (MOT), ``<video>/gt/gt.txt`` (MOTChallenge ground truth) or
    ``<video>.xml`` (CVAT for video 1.1, :mod:`.cvat`) as the measure's input; a ValueError says
    what is missing or bad, naming the file."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder; give a folder with one sub-folder per rater, each holding "
                         "<video>.txt (MOT), <video>/gt/gt.txt (MOTChallenge) or <video>.xml (CVAT for video 1.1)")
    raters = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    videos: dict = {}
    labels = {"object": 1}
    sizes, lengths = {}, {}
    for folder in raters:
        files = mot_sources(folder)
        if not files:
            raise ValueError(f"{folder}: no .txt or .xml file nor <video>/gt/gt.txt; each rater's folder holds one "
                             "file per video (<video>.txt in the MOT format or <video>.xml from CVAT for video "
                             "1.1) or MOTChallenge's <video>/gt/gt.txt")
        for f in files:
            video = f.name if f.is_dir() else f.stem
            if folder.name in videos.get(video, {}):
                raise ValueError(f"{f}: video {video!r} given twice by rater {folder.name!r}")
            video, rows, names, info = read_video_source(f)
            if info.get("seq_length") is not None:
                if lengths.setdefault(video, (info["seq_length"], f))[0] != info["seq_length"]:
                    raise ValueError(f"{f / 'seqinfo.ini'}: seqLength {info['seq_length']}, but "
                                     f"{lengths[video][1] / 'seqinfo.ini'} gives {lengths[video][0]} for the "
                                     "same video; the raters' sequences must have the same frames")
            if info.get("width") and info.get("height"):
                sizes.setdefault(video, (info["width"], info["height"]))
            if names is not None:
                cls = [labels.setdefault(n, len(labels) + 1) for n in names]
                rows = np.c_[rows, np.asarray(cls, float)]
            videos.setdefault(video, {})[folder.name] = rows
    if len(raters) < 2:
        raise ValueError(f"{root}: {len(raters)} rater folder(s); give two or more (one sub-folder per rater)")
    frames = {v: np.arange(1, n + 1) for v, (n, _) in lengths.items()}
    return video_data(videos, sizes=sizes, frames=frames, categories={v: k for k, v in labels.items()})
