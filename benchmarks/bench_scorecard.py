"""Rater scorecards against FiftyOne's ``evaluate_detections`` on the LVIS two-rater subset.

Imports ../shared/data/lvis_v1_val_double_annotations_subset200.json (one field per rater) into a
private, throw-away database, then times, fastest of ``--repeat`` runs each:

* the engine's scorecards from the file (both raters, each against the other);
* the plugin's scorecard run on the dataset (read the two fields, compute, store the run);
* FiftyOne's ``evaluate_detections`` (``method="coco"``, ``classwise=True``, ``iou=0.5``) twice,
  each rater field against the other: the same numbers (tests/fiftyone/test_scorecard_oracle.py).

Writes the table into docs/benchmarks.md between the scorecard-table markers.
Usage: ``python benchmarks/bench_scorecard.py [--repeat 3] [--no-write]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from bench_fiftyone import plugin_modules, private_mongod

REPO = Path(__file__).resolve().parents[1]
LVIS = REPO / ".." / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(repeat: int) -> list[tuple[str, float]]:
    from kalos_core import load_coco
    from kalos_core.scorecard import compute_scorecards

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run

    rows = [("engine: load the file + scorecards of both raters",
             best(lambda: compute_scorecards(load_coco(LVIS, "bbox")), repeat))]
    ds = import_multirater_coco("kalos-bench-scorecard", str(LVIS), layout="rater_fields", label_field="raters",
                                placeholders=False)
    fields = ["raters_r1", "raters_r2"]
    rows.append(("plugin: scorecard run of both raters (read, compute, store)",
                 best(lambda: scorecard_run(ds, rater_fields=fields, run_key="sc", overwrite=True), repeat)))

    def evaluate():
        for pred, gt in (fields, fields[::-1]):
            ds.evaluate_detections(pred, gt_field=gt, eval_key="bench", method="coco", classwise=True, iou=0.5)
            ds.delete_evaluation("bench")
    rows.append(("FiftyOne evaluate_detections, each rater field against the other", best(evaluate, repeat)))
    ds.delete()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kalos-bench-"))
    proc = private_mongod(tmp / "db")
    plugin_modules()
    try:
        rows = run(args.repeat)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    for label, secs in rows:
        print(f"{label:<70}{secs:8.3f}")
    if not args.no_write:
        from _doc import write_block

        ref = rows[-1][1]
        table = ["| step (LVIS subset: 200 images, 3,521 boxes, 2 raters) | seconds | evaluate_detections ÷ it |",
                 "|---|---:|---:|"] + [f"| {label} | {secs:.3f} | {ref / secs:.0f}x |" for label, secs in rows]
        write_block("scorecard-table", f"`python benchmarks/bench_scorecard.py` ({time.strftime('%Y-%m-%d')}; "
                    f"fastest of {args.repeat} runs, wall seconds on a shared 2-core machine).\n\n" + "\n".join(table),
                    heading="## Rater scorecards against FiftyOne's evaluate_detections")


if __name__ == "__main__":
    main()
