#!/usr/bin/env python3
"""The import of video exports into FiftyOne, whole process, and video agreement on what it wrote.

Writes seeded tracks (``synthetic_videos``: 1 video of 1,000 frames, 3 raters, 50 tracks, as in
``bench_video.py``) as MOT text files, one folder per rater, and times

* ``python -m fiftyone_layer.imports NEW --rater R ROOT/R MOT VIDEOS ... --frame-size 1920x1080``
  as a whole process (a new dataset each time), beside the start-up alone (``python -c "import
  fiftyone_layer.imports"``), and
* video agreement (``video_run``) on the imported frame fields in this process,

and checks that the pairs' HOTA and IDF1 equal ``kalos_core``'s on the same folders. Uses a
private, throw-away database directory. ``--write`` puts the table into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.bench_video import timed  # noqa: E402  (one whole process: wall, CPU, stdout)


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
        os.environ.setdefault("FIFTYONE_DATABASE_DIR", str(root / "db"))
        from kalos_core.measure import get_measure
        from kalos_core.video.data import synthetic_videos
        from kalos_core.video.mot import read_rater_folders

        videos, _ = synthetic_videos(n_videos=1, n_frames=args.frames, n_raters=3, n_tracks=args.tracks, switches=5,
                                     seed=args.seed)
        (root / "videos").mkdir()
        for video, raters in videos.items():
            (root / "videos" / f"{video}.mp4").write_bytes(b"")   # the file a new sample points to
            for rater, rows in raters.items():
                (root / "mot" / rater).mkdir(parents=True, exist_ok=True)
                (root / "mot" / rater / f"{video}.txt").write_text("".join(
                    f"{int(f)},{int(t)},{x!r},{y!r},{w!r},{h!r},1,-1,-1,-1\n" for f, t, x, y, w, h in rows.tolist()))
        raters = sorted(next(iter(videos.values())))
        n_boxes = sum(len(r) for v in videos.values() for r in v.values())
        rater_args = [x for r in raters for x in ("--rater", r, str(root / "mot" / r), "MOT", str(root / "videos"))]
        startup = min(timed([sys.executable, "-c", "import fiftyone_layer.imports"])[:2] for _ in range(args.repeat))
        runs = [timed([sys.executable, "-m", "fiftyone_layer.imports", f"bench-video-import-{i}", *rater_args,
                       "--frame-size", "1920x1080"])[:2] for i in range(args.repeat)]
        import fiftyone as fo

        from fiftyone_layer.measures.video import video_run

        ds = fo.load_dataset("bench-video-import-0")
        start = time.perf_counter()
        got = video_run(ds, rater_fields=[f"frames.raters_{r}" for r in raters], run_key="bench")
        agreement = time.perf_counter() - start
        measure = get_measure("video")
        want = measure.run(read_rater_folders(root / "mot"), measure.config())
        diff = max(abs(got.pairs[k][m] - want.pairs[k][m]) for k in want.pairs for m in ("HOTA", "IDF1"))
        for i in range(args.repeat):
            fo.delete_dataset(f"bench-video-import-{i}")
    (iw, ic), (sw, sc) = min(runs), startup
    body = (f"The same video as MOT files, one folder per rater ({n_boxes:,} boxes), imported into a new FiftyOne video "
            f"dataset (one frame field per rater); best of {args.repeat}, wall (CPU) seconds:\n\n"
            "| | seconds |\n| --- | --- |\n"
            f"| `python -m fiftyone_layer.imports NEW --rater R FOLDER MOT VIDEOS` × 3, whole process | "
            f"{iw:.2f} ({ic:.2f}) |\n"
            f"| of which the start-up (`import fiftyone_layer.imports`) | {sw:.2f} ({sc:.2f}) |\n"
            f"| video agreement (`video_run`) on the imported fields, in process | {agreement:.2f} |\n\n"
            f"The pairs' HOTA and IDF1 on the imported fields equal `kalos_core`'s on the folders to {diff:.1e}.")
    print(body)
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _doc import write_block

        write_block("bench-video-import", body, heading="## Video agreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
