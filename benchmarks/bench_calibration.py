"""Calibration timings (100 bootstrap resamples) -> the "## Calibration" section of docs/benchmarks.md.

    python benchmarks/bench_calibration.py [FILE.json --task bbox ...] [--no-write]

Default cases: the demo scenes (boxes and polygons) and a 5,000-image synthetic box
set (``kalos_core.demo_data.make_synthetic_boxes``); the LVIS double-annotation subset
(boxes and polygons) is added when ../shared/data holds it. Each case compares all the
task's default distances; times are wall-clock seconds of one run in this process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from kalos_core import load_coco  # noqa: E402
from kalos_core.calibration import CalibrationConfig, calibrate  # noqa: E402
from kalos_core.demo_data import build_demo, make_synthetic_boxes  # noqa: E402

LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"


def cases(tmp: Path, extra: list[tuple[str, Path, str]]):
    demo = build_demo(tmp / "demo", n_images=200, seed=0, with_images=False)
    out = [("demo scenes, 200 images x 4 raters", demo, "bbox"), ("demo scenes, 200 images x 4 raters", demo, "segm"),
           ("synthetic boxes, 5,000 images x 3 raters", make_synthetic_boxes(5000, seed=0), "bbox")]
    if LVIS.is_file():
        out += [("LVIS subset, 200 images", LVIS, "bbox"), ("LVIS subset, 200 images", LVIS, "segm")]
    return out + extra


def run(name, source, task, bootstrap: int, stratify: bool) -> dict:
    t0 = time.perf_counter()
    data = load_coco(source, task)
    load_s = time.perf_counter() - t0
    res = calibrate(data, CalibrationConfig(bootstrap=bootstrap, stratify=stratify))
    t = res.timings
    rec = res.recommended
    best = res.distances[rec.distance]
    row = {"case": name, "task": task, "images": res.n_images, "annotations": res.n_annotations,
           "pairs": best.do.n, "load_s": load_s, "total_s": t["total_s"],
           "distances_s": sum(v for k, v in t.items() if k.endswith("_distances_s")),
           "bootstrap_s": sum(v for k, v in t.items() if k.endswith("_bootstrap_s")),
           "ks": {n: d.ks for n, d in res.distances.items()}, "recommended": rec.distance,
           "tau": best.tau_star, "tau_ci": best.tau_ci, "stratify": stratify}
    print(f"{name} [{task}]: {row['total_s']:.2f} s (distances {row['distances_s']:.2f}, bootstrap "
          f"{row['bootstrap_s']:.2f}); {rec.distance} tau* {best.tau_star:.3f} KS "
          + ", ".join(f"{n} {k:.3f}" for n, k in row["ks"].items()), flush=True)
    return row


def table(rows, bootstrap: int) -> str:
    from run_benchmarks import machine

    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {machine()} with `python benchmarks/bench_calibration.py`: "
             f"all default distances of the task, {bootstrap} bootstrap resamples, seed 0.", "",
             "| case | task | images | Do pairs | load (s) | Do/De distances (s) | bootstrap (s) | total (s) "
             "| KS per distance | recommended: τ* (95 % CI) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        ks = ", ".join(f"{n} {k:.3f}" for n, k in r["ks"].items())
        ci = f" [{r['tau_ci'][0]:.3f}, {r['tau_ci'][1]:.3f}]" if r["tau_ci"] else ""
        lines.append(f"| {r['case']}{' (strata)' if r['stratify'] else ''} | {r['task']} | {r['images']:,} | "
                     f"{r['pairs']:,} | {r['load_s']:.2f} | {r['distances_s']:.2f} | {r['bootstrap_s']:.2f} | "
                     f"{r['total_s']:.2f} | {ks} | {r['recommended']}: {r['tau']:.3f}{ci} |")
    return "\n".join(lines)


def write_doc(block: str) -> None:
    from _doc import write_block

    write_block("calibration-table", block, heading="## Calibration")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?", type=Path, help="an extra multi-rater COCO file to time")
    ap.add_argument("--task", default="bbox", choices=["bbox", "segm", "keypoints"])
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args()
    extra = [(args.file.name, args.file, args.task)] if args.file else []
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(name, src, task, args.bootstrap, False) for name, src, task in cases(Path(tmp), extra)]
        name, src, task = cases(Path(tmp), [])[0]
        rows.append(run(name, src, task, args.bootstrap, True))
    block = table(rows, args.bootstrap)
    print("\n" + block)
    if not args.no_write:
        write_doc(block)


if __name__ == "__main__":
    main()
