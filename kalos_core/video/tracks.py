"""Within one rater: how steady each track is (jitter) and where it is interrupted (gaps).

* **Jitter** of a box at frame t whose track also has a box at t - 1 and t + 1: how far it lies
  from the middle of its two neighbours, ``|b_t - (b_{t-1} + b_{t+1}) / 2|`` over the centre
  (Euclidean) plus the same over width and height, divided by ``sqrt(w_t h_t)``: 0 for a box
  moving at constant speed, about the relative size of the frame-to-frame wobble otherwise. A
  track's jitter is the mean over its boxes that have both neighbours.
* **Gaps**: runs of missing frames between a track's first and last frame; ``missing`` counts
  those frames.

Per video, a rater's ``jitter_ratio`` is its jitter over the median of all raters' jitter on the
same video: a hard video raises everyone's jitter, a sloppy rater only its own.
"""

from __future__ import annotations

import numpy as np

from .identity import Tracks


def track_sums(tracks: Tracks) -> dict:
    """Per track (by its id as given): frames, first and last frame position, gaps, missing frames,
    the jitter sum and the boxes it is over."""
    out = {}
    if not len(tracks.frame):
        return out
    order = np.lexsort((tracks.frame, tracks.track))
    track, frame, boxes = tracks.track[order], tracks.frame[order], tracks.boxes[order]
    bounds = np.flatnonzero(np.r_[True, track[1:] != track[:-1], True])
    centre = boxes[:, :2] + boxes[:, 2:] / 2
    for a, b in zip(bounds[:-1], bounds[1:]):
        f = frame[a:b]
        step = np.diff(f)
        jit_sum, n_jit = 0.0, 0
        if b - a >= 3:
            inner = np.flatnonzero((step[:-1] == 1) & (step[1:] == 1)) + a + 1
            if len(inner):
                c_dev = np.hypot(*(centre[inner] - (centre[inner - 1] + centre[inner + 1]) / 2).T)
                s_dev = np.hypot(*(boxes[inner, 2:] - (boxes[inner - 1, 2:] + boxes[inner + 1, 2:]) / 2).T)
                scale = np.sqrt(np.maximum(boxes[inner, 2] * boxes[inner, 3], 1e-12))
                jit_sum, n_jit = float(((c_dev + s_dev) / scale).sum()), len(inner)
        out[tracks.names[track[a]].item()] = {
            "frames": int(b - a), "first": int(f[0]), "last": int(f[-1]),
            "gaps": int((step > 1).sum()), "missing": int((step - 1).clip(0).sum()),
            "jitter_sum": jit_sum, "jitter_n": n_jit}
    return out


def rater_summary(per_track: dict) -> dict:
    """A rater's totals over its tracks (``per_track`` from :func:`track_sums`, possibly over videos)."""
    n = sum(t["jitter_n"] for t in per_track.values())
    return {"tracks": len(per_track), "boxes": sum(t["frames"] for t in per_track.values()),
            "gaps": sum(t["gaps"] for t in per_track.values()),
            "missing_frames": sum(t["missing"] for t in per_track.values()),
            "jitter": sum(t["jitter_sum"] for t in per_track.values()) / n if n else None}
