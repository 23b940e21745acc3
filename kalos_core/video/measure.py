"""The video measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core video ROOT`` reads ``ROOT/<rater>/<video>.txt`` (the MOT challenge text
format, :mod:`.mot`), ``<video>/gt/gt.txt`` (MOTChallenge ground truth) or ``<video>.xml`` (CVAT
for video 1.1, :mod:`.cvat`) and writes ``VideoResult.to_dict()``: each frame's α, each video's mean and
pooled α, each pair of raters' HOTA (DetA, AssA, LocA), IDF1, identity switches and
fragmentations, each rater's jitter and gaps.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..measure import CliOption, Measure, MeasureData
from .engine import VideoConfig, VideoResult, video_steps


def steps(data: MeasureData, config: VideoConfig):
    """Video agreement of ``data.dataset`` (frames as images) with ``data.options["frames"]`` (image id ->
    ``(video, frame number)``) and ``data.options["tracks"]`` (label id -> track id)."""
    options = data.options or {}
    return video_steps(data.dataset, options.get("frames") or {}, options.get("tracks") or {}, config,
                       **executor_args(options))


def read(args: argparse.Namespace) -> MeasureData | None:
    """The raters' MOT folders (None after an error line: exit 2)."""
    from .mot import read_rater_folders

    try:
        data = read_rater_folders(args.root)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    data.options.update(workers=args.workers, executor=args.executor)
    return data


def _f(x) -> str:
    return "—" if x is None else f"{x:.4f}"


def summary(result: VideoResult, seconds: float | None = None) -> str:
    """Plain text: the frames' α, then one line per pair of raters, then one per rater."""
    lines = [f"videos {result.n_videos}   frames {result.n_frames}   annotations {result.n_annotations}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             f"mean alpha    {_f(result.mean_alpha)}   (over frames)",
             f"global alpha  {_f(result.global_alpha)}",
             f"\n{'pair (reference / other)':<32}{'HOTA':>8}{'DetA':>8}{'AssA':>8}{'LocA':>8}{'IDF1':>8}"
             f"{'IDsw':>6}{'Frag':>6}"]
    for name, p in [*result.pairs.items(), ("pooled", result.pooled)]:
        lines.append(f"{name:<32}" + "".join(f"{_f(p[k]):>8}" for k in ("HOTA", "DetA", "AssA", "LocA", "IDF1"))
                     + f"{p['id_switches']:>6}{p['fragmentations']:>6}")
    lines.append(f"\n{'rater':<24}{'tracks':>8}{'gaps':>6}{'missing':>9}{'jitter':>9}{'ratio':>8}")
    for r, s in result.raters.items():
        lines.append(f"{r:<24}{s['tracks']:>8}{s['gaps']:>6}{s['missing_frames']:>9}{_f(s['jitter']):>9}"
                     f"{_f(s['jitter_ratio']):>8}")
    if result.skipped_videos:
        lines.append(f"\nleft out (fewer than two raters): {', '.join(str(v['video']) for v in result.skipped_videos)}")
    return "\n".join(lines)


def example(data: MeasureData) -> MeasureData:
    """Two seeded videos of three raters with planted identity switches (the registry-wide tests)."""
    from .data import synthetic_videos, video_data

    videos, _ = synthetic_videos(n_videos=2, n_frames=12, n_raters=3, n_tracks=4, switches=1, seed=0)
    return video_data(videos)


MEASURE = Measure(
    name="video",
    help="video agreement: alpha frame by frame, identity agreement (HOTA, IDF1, switches) track by track",
    config=VideoConfig, steps=steps, result=VideoResult, method="kalos_video",
    conventions=("alpha_per_frame", "alpha_global", "track_identity"), tasks=("bbox",),
    summary=summary, read=read, example=example,
    cli_options=(
        CliOption(("root",), {"type": Path, "metavar": "ROOT",
                              "help": "folder with one sub-folder per rater, each holding one file per video: "
                                      "<video>.txt (MOT: frame,id,x,y,w,h,conf,-1,-1,-1), <video>/gt/gt.txt "
                                      "(MOTChallenge ground truth, with seqinfo.ini) or <video>.xml "
                                      "(CVAT for video 1.1)"}),
        *EXECUTOR_OPTIONS,
    ))
