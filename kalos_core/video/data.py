"""Video input: several raters' tracks over the same frames, as the engine's frames-as-images data.

A video's frames are images of a :class:`~kalos_core.data.MultiRaterDataset` (every rater of the
video assigned to every frame: a rater who drew nothing on a frame saw nothing there), and two
maps in :attr:`MeasureData.options <kalos_core.measure.MeasureData>` say what makes them a video:
``frames`` (image id -> ``(video id, frame number)``) and ``tracks`` (annotation id -> the
rater's track id). :func:`video_data` builds them from per-rater rows; :func:`synthetic_videos`
makes seeded rows with planted identity switches (tests, benchmarks, demos).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..columns import AnnotationColumns
from ..data import ImageRecord, MultiRaterDataset
from ..measure import MeasureData


def frame_image_id(video, frame: int) -> str:
    return f"{video}#{int(frame)}"


def video_data(videos: Mapping, sizes: Mapping | None = None, frames: Mapping | None = None,
               categories: Mapping | None = None) -> MeasureData:
    """The measure's input from ``videos``: ``{video: {rater: rows}}``, rows ``(frame, track id, x, y, w,
    h)`` (and a class id as a 7th column, default 1); ``sizes``: ``{video: (width, height)}``;
    ``frames``: ``{video: frame numbers}`` (default: first to last labelled frame, each one)."""
    images, frame_of, track_of, next_id = [], {}, {}, 0
    for video, by_rater in videos.items():
        raters = tuple(sorted(by_rater))
        rows = {r: np.asarray(by_rater[r], float).reshape(-1, len(by_rater[r][0]) if len(by_rater[r]) else 6)
                for r in raters}
        numbers = (np.asarray(frames[video], np.int64) if frames and video in frames else None)
        if numbers is None:
            labelled = [x[:, 0] for x in rows.values() if len(x)]
            lo, hi = (int(min(x.min() for x in labelled)), int(max(x.max() for x in labelled))) if labelled else (1, 1)
            numbers = np.arange(lo, hi + 1)
        width, height = (sizes or {}).get(video, (0.0, 0.0))
        if not width or not height:
            ext = [x[:, 2:4] + x[:, 4:6] for x in rows.values() if len(x)]
            width, height = (np.concatenate(ext).max(0).tolist() if ext else (1.0, 1.0))
        frame_col = np.concatenate([x[:, 0] for x in rows.values()]).astype(np.int64)
        rater_col = np.concatenate([np.full(len(x), k) for k, x in enumerate(rows.values())]).astype(np.int64)
        table = np.concatenate([np.c_[x[:, :6], x[:, 6] if x.shape[1] > 6 else np.ones(len(x))]
                                for x in rows.values()]) if frame_col.size else np.zeros((0, 7))
        order = np.lexsort((rater_col, frame_col))
        frame_col, rater_col, table = frame_col[order], rater_col[order], table[order]
        ids = np.arange(next_id, next_id + len(table))
        next_id += len(table)
        lo, hi = np.searchsorted(frame_col, numbers), np.searchsorted(frame_col, numbers, side="right")
        tracks = table[:, 1]
        for f, a, b in zip(numbers.tolist(), lo.tolist(), hi.tolist()):
            iid = frame_image_id(video, f)
            anns = AnnotationColumns(ids[a:b].tolist(), raters, rater_col[a:b], table[a:b, 6].astype(np.int64),
                                     table[a:b, 2:6].copy())
            images.append(ImageRecord(iid, float(width), float(height), raters, anns))
            frame_of[iid] = (video, f)
        whole = np.all(tracks == np.round(tracks))
        track_of.update(zip(ids.tolist(), (tracks.astype(np.int64) if whole else tracks).tolist()))
    cats = dict(categories or {1: "object"})
    for im in images:
        for c in np.unique(im.annotations.category).tolist():
            cats.setdefault(int(c), str(c))
    return MeasureData(MultiRaterDataset(images, cats, "box"), options={"frames": frame_of, "tracks": track_of})


def synthetic_videos(n_videos: int = 1, n_frames: int = 100, n_raters: int = 3, n_tracks: int = 10,
                     size: tuple[float, float] = (1920.0, 1080.0), noise: float = 0.03, miss: float = 0.02,
                     switches: int = 1, seed: int = 0) -> tuple[dict, list]:
    """Seeded raters' tracks: ``({video: {rater: rows (frame, id, x, y, w, h)}}, planted switches)``.

    Objects move at constant speed with a random life span; each rater draws each box with
    Gaussian noise (``noise`` x the box's size), misses a box with probability ``miss``, and in
    each video ``switches`` times a rater's track takes a new id from a random frame on (the planted
    switches: ``(video, rater, old id, new id, first frame)``). Frames are numbered from 1."""
    rng = np.random.default_rng(seed)
    width, height = size
    videos, planted = {}, []
    for v in range(n_videos):
        video = f"video{v:03d}"
        start = rng.integers(1, max(2, n_frames // 3), n_tracks)
        stop = np.minimum(n_frames, start + rng.integers(max(2, n_frames // 3), n_frames + 1, n_tracks))
        wh = rng.uniform(0.04, 0.15, (n_tracks, 2)) * (width, height)
        xy0 = rng.uniform(0, 1, (n_tracks, 2)) * ((width, height) - wh)
        vel = rng.normal(0, 0.002, (n_tracks, 2)) * (width, height)
        truth = []
        for k in range(n_tracks):
            f = np.arange(start[k], stop[k] + 1)
            xy = np.clip(xy0[k] + vel[k] * (f - start[k])[:, None], 0, (width, height) - wh[k])
            truth.append(np.c_[f, np.full(len(f), k + 1), xy, np.tile(wh[k], (len(f), 1))])
        truth = np.concatenate(truth)
        raters = {}
        for r in range(n_raters):
            rows = truth.copy()
            rows[:, 2:6] += rng.normal(0, noise, (len(rows), 4)) * np.c_[rows[:, 4:6], rows[:, 4:6]]
            rows[:, 4:6] = np.maximum(rows[:, 4:6], 1.0)
            raters[f"rater{r}"] = rows[rng.random(len(rows)) >= miss]
        for _ in range(switches):
            name = f"rater{int(rng.integers(n_raters))}"
            rows = raters[name]
            old = int(rng.integers(1, n_tracks + 1))
            mine = np.flatnonzero(rows[:, 1] == old)
            if len(mine) < 4:
                continue
            first = int(np.sort(rows[mine, 0])[len(mine) // 2])
            new = int(rows[:, 1].max()) + 1
            rows[mine[rows[mine, 0] >= first], 1] = new
            planted.append((video, name, old, new, first))
        videos[video] = raters
    return videos, planted
