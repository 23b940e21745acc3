"""Label-convergence and noise-aware timings on the LVIS double-annotation subset.

    python benchmarks/bench_convergence.py [--bootstrap 1000] [--repeat 3]

Target (issue 11): the 1,000-subset bootstrap on the LVIS file in under 10 s on 2 cores. Each
direction is evaluated once with COCOeval; the subsets are re-accumulated from the per-image
results (kalos_core.convergence.accumulate). Prints a markdown table (wall-clock seconds, best of
``--repeat``) for docs/convergence.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kalos_core import load_coco  # noqa: E402
from kalos_core.convergence import ConvergenceConfig, compute_convergence  # noqa: E402
from kalos_core.convergence.cocoeval import rater_labels  # noqa: E402
from kalos_core.noise_aware import noise_aware_evaluation  # noqa: E402

LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=LVIS)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if not args.file.is_file():
        print(f"missing {args.file}", file=sys.stderr)
        return 2
    print("| case | full-set mAP | evaluate (s) | bootstrap (s) | total (s) |")
    print("|---|---|---|---|---|")
    for task in ("bbox", "segm"):
        ds = load_coco(args.file, task)
        best = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = compute_convergence(ds, ConvergenceConfig(task=task, bootstrap=args.bootstrap, alpha=False))
            total = time.perf_counter() - t0
            if best is None or total < best[0]:
                best = (total, r)
        total, r = best
        print(f"| LVIS {task}, {args.bootstrap} subsets of 10 % | {100 * r.full_set.map:.2f} | "
              f"{r.seconds['evaluate']:.2f} | {r.seconds.get('bootstrap', 0):.2f} | {total:.2f} |")
    ds = load_coco(args.file, "bbox")
    preds = [{k: d[k] for k in ("image_id", "category_id", "bbox", "score")}
             for d in rater_labels(ds, "r2", [im.id for im in ds.images])]
    t0 = time.perf_counter()
    noise_aware_evaluation(ds, preds, "r1")
    print(f"| LVIS noise-aware (fit r1/r2, eps grid, 3 COCOeval runs) | | | | {time.perf_counter() - t0:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
