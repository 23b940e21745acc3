#!/usr/bin/env python3
"""Video agreement, whole process, beside TrackEval's own run on the same pairs.

Writes seeded tracks (``synthetic_videos``: 1 video of 1,000 frames, 3 raters, 50 tracks, planted
identity switches) as MOT text files, one folder per rater, then times

* ``python -m kalos_core video ROOT --output OUT.json`` (frames' α, HOTA/IDF1/switches per pair,
  jitter and gaps) as a whole process, and
* TrackEval (``trackeval.Evaluator`` with ``MotChallenge2DBox``, metrics HOTA, CLEAR and Identity,
  no preprocessing, nothing printed or written) on the same 3 pairs, each pair's first rater as the
  ground truth, as a whole process;

and checks that the pairs' HOTA and IDF1 agree. ``--write`` puts the table into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TRACKEVAL = """
import sys, json, trackeval
root, refs = sys.argv[1], json.loads(sys.argv[2])
out = {}
for ref, others in refs.items():
    ev = trackeval.Evaluator({"PRINT_RESULTS": False, "PRINT_CONFIG": False, "TIME_PROGRESS": False,
                              "OUTPUT_SUMMARY": False, "OUTPUT_DETAILED": False, "PLOT_CURVES": False,
                              "DISPLAY_LESS_PROGRESS": True, "USE_PARALLEL": False})
    ds = trackeval.datasets.MotChallenge2DBox({
        "GT_FOLDER": f"{root}/gt_{ref}", "TRACKERS_FOLDER": f"{root}/tr_{ref}", "TRACKERS_TO_EVAL": others,
        "SEQ_INFO": json.loads(sys.argv[3]), "DO_PREPROC": False, "PRINT_CONFIG": False,
        "OUTPUT_FOLDER": f"{root}/out"})
    res, _ = ev.evaluate([ds], [trackeval.metrics.HOTA(), trackeval.metrics.CLEAR(), trackeval.metrics.Identity()])
    for other in others:
        r = res["MotChallenge2DBox"][other]["COMBINED_SEQ"]["pedestrian"]
        out[f"{ref} / {other}"] = {"HOTA": float(r["HOTA"]["HOTA"].mean()), "IDF1": float(r["Identity"]["IDF1"])}
print(json.dumps(out))
"""


def write_inputs(root: Path, n_frames: int, n_tracks: int, seed: int) -> tuple[dict, dict]:
    from kalos_core.video.data import synthetic_videos

    videos, planted = synthetic_videos(n_videos=1, n_frames=n_frames, n_raters=3, n_tracks=n_tracks,
                                       switches=5, seed=seed)
    seq_info = {}
    for video, raters in videos.items():
        seq_info[video] = n_frames
        for rater, rows in raters.items():
            mot = "".join(f"{int(f)},{int(t)},{x!r},{y!r},{w!r},{h!r},1,-1,-1,-1\n" for f, t, x, y, w, h in rows.tolist())
            gt = "".join(f"{int(f)},{int(t)},{x!r},{y!r},{w!r},{h!r},1,1,1\n" for f, t, x, y, w, h in rows.tolist())
            (root / "kalos" / rater).mkdir(parents=True, exist_ok=True)
            (root / "kalos" / rater / f"{video}.txt").write_text(mot)
            seq = root / "te" / f"gt_{rater}" / "MOT17-train" / video
            (seq / "gt").mkdir(parents=True, exist_ok=True)
            (seq / "gt" / "gt.txt").write_text(gt)
            (seq / "seqinfo.ini").write_text(f"[Sequence]\nname={video}\nseqLength={n_frames}\n")
        for ref, other in combinations(sorted(raters), 2):
            data = root / "te" / f"tr_{ref}" / "MOT17-train" / other / "data"
            data.mkdir(parents=True, exist_ok=True)
            (data / f"{video}.txt").write_text((root / "kalos" / other / f"{video}.txt").read_text())
    refs = {}
    for ref, other in combinations(sorted(next(iter(videos.values()))), 2):
        refs.setdefault(ref, []).append(other)
    return refs, seq_info


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the child) of one whole process, and its stdout."""
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--tracks", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        refs, seq_info = write_inputs(root, args.frames, args.tracks, args.seed)
        n_boxes = sum(len(p.read_text().splitlines()) for p in (root / "kalos").rglob("*.txt"))
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(timed([sys.executable, "-m", "kalos_core", "video", str(root / "kalos"),
                               "--output", str(root / "out.json")])[:2])
            wall, cpu, out = timed([sys.executable, "-c", TRACKEVAL, str(root / "te"), json.dumps(refs),
                                    json.dumps(seq_info)])
            theirs.append((wall, cpu))
        te = json.loads(out.strip().splitlines()[-1])
        result = json.loads((root / "out.json").read_text())
    diff = max(abs(result["pairs"][k][m] - te[k][m]) for k in te for m in ("HOTA", "IDF1"))
    best = lambda runs: min(runs, key=lambda r: r[0])
    (ow, oc), (tw, tc) = best(ours), best(theirs)
    body = (f"1 video, {args.frames:,} frames, 3 raters, {args.tracks} tracks ({n_boxes:,} boxes, 5 planted identity "
            f"switches, seed {args.seed}); best of {args.repeat} whole processes, wall (CPU) seconds:\n\n"
            "| | what it computes | seconds |\n| --- | --- | --- |\n"
            f"| `python -m kalos_core video` | every frame's α, 3 pairs' HOTA (DetA, AssA, LocA), IDF1, switches and "
            f"fragmentations both ways, jitter and gaps | {ow:.2f} ({oc:.2f}) |\n"
            f"| TrackEval {_version('trackeval')} | the same 3 pairs' HOTA, CLEAR and Identity, one rater as the ground "
            f"truth | {tw:.2f} ({tc:.2f}) |\n\n"
            f"The pairs' HOTA and IDF1 agree with TrackEval's to {diff:.1e}.")
    print(body)
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _doc import write_block

        write_block("bench-video", body, heading="## Video agreement")
    return 0


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    sys.exit(main())
