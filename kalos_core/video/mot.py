"""The raters' folders: the MOT challenge text format (or CVAT for video, :mod:`.cvat`) (docs/video.md).

``ROOT/<rater>/<video>.txt``: one line per box, ``frame,id,x,y,w,h,conf,-1,-1,-1`` as the MOT
challenge writes tracker results (frames numbered from 1; ``x, y`` the top-left corner in
pixels; columns after ``h`` are read and ignored, so ground-truth files with their class and
visibility columns read too). A rater without a file for a video is not a rater of that
video. Each bad line is refused, naming its file and line: a missing or non-numeric column,
a frame below 1 or a non-integer frame or id, a box without width or height, a track id given
twice in one frame.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..measure import MeasureData
from .data import video_data


def _number(text: str, what: str, where: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} {text.strip()!r} is not a number (MOT lines are "
                         "frame,id,x,y,w,h,conf,-1,-1,-1)") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {what} is {text.strip()}; give a finite number")
    return x


def _fast(text: str) -> np.ndarray | None:
    """The rows parsed by NumPy when every line is good (None: let the line-by-line reader say why)."""
    import io
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = np.loadtxt(io.StringIO(text), delimiter=",", usecols=range(6), ndmin=2, dtype=float)
    except ValueError:
        return None
    f, t, wh = rows[:, 0], rows[:, 1], rows[:, 4:6]
    ok = (np.isfinite(rows).all() and (f >= 1).all() and (f == np.round(f)).all() and (t == np.round(t)).all()
          and (wh > 0).all())
    if not ok or len(np.unique(rows[:, :2], axis=0)) < len(rows):
        return None
    return rows


def read_mot_file(path: Path) -> np.ndarray:
    """The rows ``(frame, id, x, y, w, h)`` of one MOT text file; a ValueError names the bad line."""
    rows, seen = [], {}
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    fast = _fast(text) if text.strip() else np.zeros((0, 6))
    if fast is not None:
        return fast
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        cols = line.split(",")
        if len(cols) < 6:
            raise ValueError(f"{where}: {len(cols)} column(s); a MOT line has at least 6: frame,id,x,y,w,h "
                             "(as the MOT challenge writes: frame,id,x,y,w,h,conf,-1,-1,-1)")
        frame, tid, x, y, w, h = (_number(c, what, where) for c, what in
                                  zip(cols, ("frame", "id", "x", "y", "width", "height")))
        if frame < 1 or frame != int(frame):
            raise ValueError(f"{where}: frame {cols[0].strip()!r} must be an integer from 1 (MOT numbers frames from 1)")
        if tid != int(tid):
            raise ValueError(f"{where}: track id {cols[1].strip()!r} must be an integer")
        if w <= 0 or h <= 0:
            raise ValueError(f"{where}: box of width {cols[4].strip()} and height {cols[5].strip()}; both must be > 0")
        key = (int(frame), int(tid))
        if key in seen:
            raise ValueError(f"{where}: track {key[1]} is given twice in frame {key[0]} (first on line {seen[key]}); "
                             "a track has one box per frame")
        seen[key] = n
        rows.append((frame, tid, x, y, w, h))
    return np.asarray(rows, float).reshape(-1, 6)


def read_rater_folders(root: Path) -> MeasureData:
    """``ROOT/<rater>/<video>.txt`` (MOT) or ``<video>.xml`` (CVAT for video 1.1, :mod:`.cvat`) as the
    measure's input; a ValueError says what is missing or bad, naming the file."""
    from .cvat import read_cvat_video

    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder; give a folder with one sub-folder per rater, each holding "
                         "<video>.txt (MOT) or <video>.xml (CVAT for video 1.1) files")
    raters = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    videos: dict = {}
    labels = {"object": 1}
    for folder in raters:
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".txt", ".xml"))
        if not files:
            raise ValueError(f"{folder}: no .txt or .xml file; each rater's folder holds one file per video "
                             "(<video>.txt in the MOT format or <video>.xml from CVAT for video 1.1)")
        for f in files:
            if folder.name in videos.get(f.stem, {}):
                raise ValueError(f"{f}: video {f.stem!r} given twice by rater {folder.name!r} (.txt and .xml)")
            if f.suffix.lower() == ".xml":
                rows, names = read_cvat_video(f)
                cls = [labels.setdefault(n, len(labels) + 1) for n in names]
                rows = np.c_[rows, np.asarray(cls, float)]
            else:
                rows = read_mot_file(f)
            videos.setdefault(f.stem, {})[folder.name] = rows
    if len(raters) < 2:
        raise ValueError(f"{root}: {len(raters)} rater folder(s); give two or more (one sub-folder per rater)")
    return video_data(videos, categories={v: k for k, v in labels.items()})
