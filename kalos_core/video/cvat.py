"""CVAT for video 1.1 XML, one file per rater and video (docs/video.md).

Each ``<track id=... label=...>`` holds ``<box frame xtl ytl xbr ybr outside keyframe ...>``
shapes. They are expanded to one box per frame as CVAT expands a track: sorted by frame,
between two shapes the box is linearly interpolated (corner by corner, at ``(f - f0) / (f1 -
f0)``) unless the earlier one is ``outside``; after the last shape, a shape that is not
outside is carried to the end of the task (``<stop_frame>`` of the file's meta, else the last
frame of any track); ``outside`` shapes are not boxes. Frame numbers stay as CVAT writes them
(from 0). A file CVAT could not have written is refused, naming the file, the track and the
frame: a track of another shape (polygon, points, ...), a missing or non-numeric coordinate, a
box without area, a rotated box, one frame given twice in a track.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np


def _float(box: ET.Element, name: str, where: str) -> float:
    text = box.get(name)
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name}={text!r} is not a number (a CVAT box has xtl, ytl, xbr, ybr)") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {name}={text!r}; give a finite number")
    return x


def _shapes(track: ET.Element, where: str) -> list[tuple]:
    """``(frame, outside, (xtl, ytl, xbr, ybr))`` of a track's boxes, sorted by frame."""
    out, seen = [], set()
    for child in track:
        if child.tag != "box":
            raise ValueError(f"{where}: a <{child.tag}> track; video agreement compares boxes (<box>) only")
        try:
            frame = int(child.get("frame"))
        except (TypeError, ValueError):
            raise ValueError(f"{where}: a box with frame={child.get('frame')!r}; frames are integers") from None
        at = f"{where}, frame {frame}"
        if frame in seen:
            raise ValueError(f"{at}: given twice; a track has one box per frame")
        seen.add(frame)
        corners = tuple(_float(child, k, at) for k in ("xtl", "ytl", "xbr", "ybr"))
        if float(child.get("rotation") or 0) % 360:
            raise ValueError(f"{at}: rotated by {child.get('rotation')} degrees; only axis-aligned boxes are compared")
        outside = child.get("outside", "0") == "1"
        if not outside and (corners[2] <= corners[0] or corners[3] <= corners[1]):
            raise ValueError(f"{at}: box ({', '.join(map(str, corners))}) has no area (xbr > xtl and ybr > ytl)")
        out.append((frame, outside, corners))
    return sorted(out)


def expand_track(shapes: list[tuple], end_frame: int) -> list[tuple]:
    """The track's ``(frame, xtl, ytl, xbr, ybr)`` on every frame where it is visible (``end_frame``
    excluded), as CVAT interpolates it."""
    rows = []
    for (f0, out0, p0), (f1, _, p1) in zip(shapes, shapes[1:]):
        if not out0:
            rows.append((f0, *p0))
            a, b = np.asarray(p0), np.asarray(p1)
            rows += [(f, *(a + (b - a) * ((f - f0) / (f1 - f0))).tolist()) for f in range(f0 + 1, min(f1, end_frame))]
    if shapes and not shapes[-1][1]:
        f0, _, p0 = shapes[-1]
        rows += [(f, *p0) for f in range(f0, end_frame)]
    return [r for r in rows if r[0] < end_frame]


def read_cvat_video(path: Path) -> tuple[np.ndarray, list]:
    """``(rows (frame, track id, x, y, w, h), each row's label)`` of a CVAT for video 1.1 file; a
    ValueError says what is wrong."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ValueError(f"{path}: not readable XML ({e})") from None
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    if root.tag != "annotations":
        raise ValueError(f"{path}: the root element is <{root.tag}>; CVAT for video 1.1 writes <annotations>")
    if root.find("image") is not None and root.find("track") is None:
        raise ValueError(f"{path}: <image> elements, no <track>: this is CVAT for images; export the task as "
                         "CVAT for video 1.1")
    tracks = root.findall("track")
    stop = [int(e.text) for e in root.iter("stop_frame") if (e.text or "").strip().lstrip("-").isdigit()]
    parsed = []
    for track in tracks:
        where = f"{path}: track {track.get('id')!r}"
        if track.get("id") is None:
            raise ValueError(f"{path}: a <track> without id")
        try:
            tid = int(track.get("id"))
        except ValueError:
            raise ValueError(f"{where}: track ids are integers (CVAT numbers its tracks)") from None
        parsed.append((tid, track.get("label") or "", _shapes(track, where)))
    last = max((s[-1][0] for _, _, s in parsed if s), default=-1)
    end_frame = (max(stop) if stop else last) + 1
    rows, names = [], []
    for tid, label, shapes in parsed:
        for f, x0, y0, x1, y1 in expand_track(shapes, end_frame):
            rows.append((f + 1, tid, x0, y0, x1 - x0, y1 - y0))
            names.append(label)
    return np.asarray(rows, float).reshape(-1, 6), names
