"""Video agreement: KαLOS frame by frame, identity agreement track by track (docs/video.md).

Per video (one mergeable :class:`VideoPartial` each, so the executors spread videos over workers):

* **frames**: each frame is an image of the agreement measure, matched and scored by the same
  engine (:func:`kalos_core.agreement.pipeline.map_partial`: solvers, distances, statuses); the
  video's α is the mean of its frames' α and the pooled α of all its frames' units;
* **pairs of raters**: HOTA with DetA, AssA and LocA, IDF1, identity switches and fragmentations
  (:mod:`.identity`), the first rater of the pair in name order as the reference;
* **each rater**: jitter and gaps of its tracks (:mod:`.tracks`).

Over videos: the pooled frame α over all frames' units, the mean over all frames, and each pair's
scores from its counts summed over videos (as TrackEval combines sequences).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np

from ..agreement.config import DIAGNOSTICS, AgreementConfig
from ..agreement.diagnostics import ALPHA
from ..agreement.pipeline import map_partial
from ..coincidence import AlphaSums
from ..columns import AnnotationColumns
from ..data import MultiRaterDataset
from ..executors import map_chunks
from ..jsonsafe import json_safe
from ..matching.params import MATCHING_PARAMS, MatchingConfig
from ..params import Config, param, same_param
from .identity import PairCounts, Tracks, pair_counts
from .tracks import rater_summary, track_sums

#: the worst tracks a video's result lists (highest jitter first)
WORST_TRACKS = 10


@dataclass(frozen=True)
class VideoConfig(Config):
    """Settings of a video run: the frames' matching (the agreement's parameters) and the IoU at which
    two raters' boxes are the same object for IDF1 and the identity switches."""

    threshold: float = same_param(MatchingConfig, "threshold")
    distance: str | None = same_param(MatchingConfig, "distance")
    solver: str = same_param(MatchingConfig, "solver")
    cost: str = same_param(MatchingConfig, "cost")
    id_threshold: float = param(0.5, "fraction", "IoU at or above which two raters' boxes in a frame are the same "
                                "object for IDF1, identity switches and fragmentations (CLEAR-MOT's 0.5)",
                                lo_open=True, label="Identity IoU threshold")
    window: int = param(10, "int", "frames per block of the pooled α curve drawn beside each frame's α: one "
                        "reliability matrix over a block's units, steadier than one frame's (0: none)", lo=0,
                        label="Frames per pooled block", advanced=True)

    def agreement(self) -> AgreementConfig:
        return AgreementConfig(**{n: getattr(self, n) for n in MATCHING_PARAMS}, bootstrap=0,
                               **dict.fromkeys(DIAGNOSTICS, False))


def pair_name(a: str, b: str) -> str:
    return f"{a} / {b}"


@dataclass
class VideoPartial:
    """What a set of videos contributes: per video its frames' α, its pairs' counts and its raters'
    tracks; merged by union (videos are disjoint)."""

    videos: dict = field(default_factory=dict)

    def merge(self, other: "VideoPartial") -> "VideoPartial":
        self.videos.update(other.videos)
        return self


def _tracks_of(images: list, raters: tuple, track_of) -> dict[str, Tracks]:
    """Each rater's :class:`Tracks` over the frames (``images`` with their frame numbers)."""
    at = {r: k for k, r in enumerate(raters)}
    frame, rater, ids, boxes = [], [], [], []
    for number, im in images:
        anns = im.annotations
        if isinstance(anns, AnnotationColumns):
            codes = np.array([at[n] for n in anns.names], np.int64)
            rater.append(codes[anns.rater] if len(anns.names) else np.zeros(0, np.int64))
            ids += anns.ids
            boxes.append(np.asarray(anns.boxes, float).reshape(-1, 4))
        else:
            rater.append(np.array([at[a.rater] for a in anns], np.int64))
            ids += [a.id for a in anns]
            boxes.append(np.array([a.geometry[:4] for a in anns], float).reshape(-1, 4))
        frame.append(np.full(len(anns), number, np.int64))
    frame, rater = np.concatenate(frame or [np.zeros(0, np.int64)]), np.concatenate(rater or [np.zeros(0, np.int64)])
    boxes = np.concatenate(boxes or [np.zeros((0, 4))])
    tracks = [track_of[a] for a in ids]
    tracks = (np.array([str(t) for t in tracks]) if any(isinstance(t, str) for t in tracks)
              else np.asarray(tracks, np.int64))
    return {r: Tracks.of(frame[rater == k], tracks[rater == k], boxes[rater == k]) for k, r in enumerate(raters)}


def _blocks(images: list, numbers: np.ndarray, categories, kind: str, agreement: AgreementConfig, window: int):
    """The video's merged partial, matched block by block (each frame is matched on its own, so the
    frames' values are those of one whole run), and each block of ``window`` frames' pooled α:
    ``{"first", "last", "alpha", "n_units"}`` (none when ``window`` is 0)."""
    size = window or max(len(images), 1)
    part, blocks = None, []
    for start in range(0, len(images), size):
        block = map_partial(MultiRaterDataset(images[start:start + size], categories, kind), agreement)
        if window:
            sums = block.sums.get(ALPHA, AlphaSums())
            blocks.append({"first": int(numbers[start]), "last": int(numbers[min(start + size, len(images)) - 1]),
                           "alpha": sums.alpha() if sums.n else None, "n_units": block.n_units})
        part = block if part is None else part.merge(block)
    return part, blocks


def analyse_videos(items: list, first: int, context) -> VideoPartial:
    """The map step over videos: ``items`` are ``(video, [(frame number, image)], track_of)``."""
    kind, categories, config = context
    out = VideoPartial()
    agreement = config.agreement()
    for video, frames, track_of in items:
        images = [im for _, im in frames]
        numbers = np.array([n for n, _ in frames], np.int64)
        raters = tuple(sorted({r for im in images for r in im.raters}))
        part, blocks = _blocks(images, numbers, categories, kind, agreement, config.window)
        alpha_of = dict(zip(map(str, part.image_ids), part.alphas))
        tracks = _tracks_of(frames, raters, track_of)
        pairs = {(a, b): pair_counts(tracks[a], tracks[b], numbers, config.id_threshold)
                 for a, b in combinations(raters, 2)}
        out.videos[video] = {"frames": numbers.tolist(), "alphas": [alpha_of[str(im.id)] for im in images],
                             "sums": part.sums.get(ALPHA, AlphaSums()), "pairs": pairs, "blocks": blocks,
                             "tracks": {r: track_sums(t) for r, t in tracks.items()}, "n_annotations":
                             sum(len(im.annotations) for im in images)}
    return out


@dataclass
class VideoResult:
    """``mean_alpha`` (mean over all frames of each frame's α) and ``global_alpha`` (one reliability
    matrix over all frames' units); ``pairs`` (``"A / B"``, A the reference) and ``pooled`` (all pairs'
    counts summed) the identity scores over all videos; ``raters`` each rater's tracks (jitter, gaps);
    ``per_video`` the same per video with each frame's α (``frames`` and ``frame_alpha`` aligned) and the
    frames where each pair switches identity."""

    mean_alpha: float
    global_alpha: float
    pairs: dict
    pooled: dict
    raters: dict
    per_video: dict
    n_videos: int = 0
    n_frames: int = 0
    n_annotations: int = 0
    #: videos with fewer than two raters: ``[{"video", "raters"}]``, not compared
    skipped_videos: list = field(default_factory=list)
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe(asdict(self))


def _jitter_ratios(summaries: dict) -> None:
    values = [s["jitter"] for s in summaries.values() if s["jitter"] is not None]
    median = float(np.median(values)) if values else None
    for s in summaries.values():
        s["jitter_ratio"] = (s["jitter"] / median if s["jitter"] is not None and median else None)


def _video_entry(v: dict) -> dict:
    alphas = np.asarray(v["alphas"], float)
    raters = {r: rater_summary(t) for r, t in v["tracks"].items()}
    _jitter_ratios(raters)
    worst = sorted(((t["jitter_sum"] / t["jitter_n"], r, tid) for r, ts in v["tracks"].items()
                    for tid, t in ts.items() if t["jitter_n"]), key=lambda x: (-x[0], x[1], str(x[2])))
    return {"n_frames": len(alphas), "mean_alpha": float(alphas.mean()) if len(alphas) else None,
            "global_alpha": v["sums"].alpha(), "frames": v["frames"], "frame_alpha": alphas.tolist(),
            "blocks": v["blocks"],
            "pairs": {pair_name(*k): {**p.scores(), "switch_frames": p.switch_frames} for k, p in v["pairs"].items()},
            "raters": raters,
            "tracks": {r: {str(tid): {k: t[k] for k in ("frames", "first", "last", "gaps", "missing")}
                           | {"jitter": t["jitter_sum"] / t["jitter_n"] if t["jitter_n"] else None}
                           for tid, t in ts.items()} for r, ts in v["tracks"].items()},
            "worst_tracks": [{"rater": r, "track": tid, "jitter": j} for j, r, tid in worst[:WORST_TRACKS]]}


def finish(merged: VideoPartial, config: VideoConfig, skipped: list = ()) -> VideoResult:
    """The reduce step: every video's entry and the scores over all videos."""
    videos = {k: merged.videos[k] for k in sorted(merged.videos, key=str)}
    sums, alphas, pairs = AlphaSums(), [], {}
    for v in videos.values():
        sums.add(v["sums"])
        alphas += v["alphas"]
        for k, p in v["pairs"].items():
            pairs[k] = PairCounts().merge(pairs[k]).merge(p) if k in pairs else PairCounts().merge(p)
    pooled = PairCounts()
    for p in pairs.values():
        pooled.merge(p)
    raters: dict = {}
    for video, v in videos.items():
        for r, ts in v["tracks"].items():
            raters.setdefault(r, {}).update({(video, tid): t for tid, t in ts.items()})
    summaries = {r: rater_summary(t) for r, t in sorted(raters.items())}
    ratios = {}
    entries = {str(video): _video_entry(v) for video, v in videos.items()}
    for e in entries.values():
        for r, s in e["raters"].items():
            if s["jitter_ratio"] is not None:
                ratios.setdefault(r, []).append(s["jitter_ratio"])
    for r, s in summaries.items():
        s["jitter_ratio"] = float(np.mean(ratios[r])) if r in ratios else None
    scored = {pair_name(*k): p.scores() for k, p in sorted(pairs.items())}
    pooled_scores = pooled.scores()
    pooled_scores.pop("n_boxes")
    return VideoResult(
        mean_alpha=float(np.mean(alphas)) if alphas else float("nan"), global_alpha=sums.alpha(),
        pairs=scored, pooled=pooled_scores, raters=summaries, per_video=entries,
        n_videos=len(videos), n_frames=len(alphas),
        n_annotations=sum(v["n_annotations"] for v in videos.values()), skipped_videos=list(skipped),
        config=config.to_dict())


def video_items(dataset: MultiRaterDataset, frames: dict, tracks: dict) -> list:
    """The videos of the data: ``(video, [(frame number, image)] in frame order, track_of)``; a ValueError
    names a frame or a label the maps do not place."""
    by_video: dict = {}
    for im in dataset.images:
        if im.id not in frames:
            raise ValueError(f"frame {im.id!r}: no video and frame number given for it")
        video, number = frames[im.id]
        by_video.setdefault(video, []).append((int(number), im))
    items = []
    for video in sorted(by_video, key=str):
        rows = sorted(by_video[video], key=lambda x: x[0])
        numbers = [n for n, _ in rows]
        if len(set(numbers)) < len(numbers):
            dup = next(n for n in numbers if numbers.count(n) > 1)
            raise ValueError(f"video {video!r}: frame {dup} is given twice")
        ids = [a for _, im in rows for a in (im.annotations.ids if isinstance(im.annotations, AnnotationColumns)
                                              else [a.id for a in im.annotations])]
        missing = [a for a in ids if a not in tracks]
        if missing:
            raise ValueError(f"video {video!r}: label {missing[0]!r} has no track id ({len(missing)} labels "
                             "without one); every box of a video needs its rater's track id")
        items.append((video, rows, {a: tracks[a] for a in ids}))
    return items


def video_steps(dataset: MultiRaterDataset, frames: dict, tracks: dict, config: VideoConfig = VideoConfig(),
                workers: int = 1, executor: str | None = None):
    """The run as a generator of ``(fraction, message)`` steps (one per video); returns the result."""
    if dataset.kind != "box":
        raise ValueError(f"video agreement compares boxes; these labels are {dataset.kind}")
    config.agreement().distance_spec(dataset.kind)       # a distance of another kind: refused before any work
    items, skipped = [], []
    for item in video_items(dataset, frames, tracks):
        raters = sorted({r for _, im in item[1] for r in im.raters})
        (items if len(raters) >= 2 else skipped).append(item if len(raters) >= 2 else
                                                        {"video": item[0], "raters": raters})
    if not items:
        raise ValueError(f"no video has two or more raters (raters: {', '.join(dataset.raters) or 'none'}): "
                         "nothing to compare")
    merged = VideoPartial()
    context = (dataset.kind, dataset.categories, config)
    for done, part in map_chunks(analyse_videos, items, context, 1, workers, executor):
        merged.merge(part)
        yield done / max(len(items), 1), f"{done}/{len(items)} videos"
    return finish(merged, config, skipped)
