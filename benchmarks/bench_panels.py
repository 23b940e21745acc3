"""Panel render time on a 5,000-sample dataset.

Imports N synthetic images x 3 raters (one Detections field per rater), runs agreement with
all diagnostics and LSA thresholds, stores a calibration run, then times every KaLOS panel
the way the App calls it (``execute_operator`` with ``__method__``, ``panel_id`` and the
panel state): ``on_load`` (which renders), and each panel's click handler plus counting
the samples of the view it sets (what the grid needs next). Private, throw-away database;
writes a table into docs/benchmarks.md between the panels-table markers.

Usage: ``python benchmarks/bench_panels.py [--images 5000] [--objects 10] [--repeat 5] [--no-write]``
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "@kalos/agreement"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--objects", type=int, default=10, help="reference objects per image (x 3 raters)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kalos-bench-panels-"))
    os.environ["FIFTYONE_DATABASE_DIR"] = str(tmp / "db")
    os.environ.pop("FIFTYONE_DATABASE_URI", None)
    (tmp / "plugins").mkdir()
    (tmp / "plugins" / "kalos-agreement").symlink_to(REPO, target_is_directory=True)
    os.environ["FIFTYONE_PLUGINS_DIR"] = str(tmp / "plugins")
    os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
    from bench_fiftyone import plugin_modules   # (this script's folder is on sys.path)

    plugin_modules()
    # registered before fiftyone is imported, so it runs after fiftyone's exit handler stops its mongod
    atexit.register(shutil.rmtree, tmp, True)
    setup, rows = run(args, tmp)
    if not args.no_write:
        write_doc(setup, rows, args)


class Driver:
    """Calls one panel like the App: state patched by earlier calls goes into the next call."""

    def __init__(self, ds, name):
        self.ds, self.uri, self.state, self.requests = ds, f"{PLUGIN}/{name}", {}, []

    def call(self, method, **params):
        import fiftyone.operators as foo
        import pydash

        res = foo.execute_operator(self.uri, dataset=self.ds.name, params={
            "panel_id": "bench", "__method__": method, "panel_state": json.loads(json.dumps(self.state)), **params})
        if res.error:
            raise RuntimeError(res.error)
        self.requests = res.executor.to_json()["requests"]
        for r in self.requests:
            if r["operator_uri"] == "patch_panel_state":
                for k, v in r["params"]["state"].items():
                    pydash.set_(self.state, k, v)
        return self

    def view_count(self) -> int:
        import fiftyone.core.view as fov

        stages = next(r["params"]["view"] for r in self.requests if r["operator_uri"] == "set_view")
        return fov.DatasetView._build(self.ds, stages).count()


def timed(fn, repeat: int) -> tuple[float, float]:
    """(first call, median of the following ``repeat``) in milliseconds."""
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1000
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return first, statistics.median(times)


def store_calibration(ds, fields) -> None:
    """A calibration run in the stored schema (the panel reads only these results)."""
    import numpy as np

    rng = np.random.default_rng(0)
    edges = [k / 50 for k in range(51)]
    entry = {"ks": 0.8, "ks_ci": [0.78, 0.82], "tau_star": 0.45, "tau_ci": [0.43, 0.47],
             "similarity_threshold": 0.55, "similarity_ci": [0.53, 0.57], "sigma": 0.07, "tau_method": "bench",
             "do": {"n": 100000, "mean": 0.2, "median": 0.18, "std": 0.1, "mode": 0.15},
             "de": {"n": 1000000, "mean": 0.9, "median": 0.95, "std": 0.1, "mode": 1.0},
             "histogram": {"edges": edges, "do": rng.integers(0, 9000, 50).tolist(),
                           "de": rng.integers(0, 90000, 50).tolist()}, "strata": None}
    results = {"task": "bbox", "n_images": len(ds), "seed": 0, "bootstrap": 1000, "confidence": 0.95,
               "distances": {"iou": entry, "giou": dict(entry, tau_star=0.5)},
               "recommended": {"distance": "iou", "tau_star": 0.45, "similarity_threshold": 0.55,
                               "standard_threshold": 0.55, "reason": "bench"},
               "similarity_threshold": 0.55}
    cfg = ds.init_run(method="kalos_calibration", similarity_threshold=0.55, rater_fields=fields)
    ds.register_run("calibration", cfg, overwrite=True, cleanup=False)
    ds.save_run_results("calibration", ds.init_run_results("calibration", **results), overwrite=True)


def run(args, tmp: Path):
    from kalos_core.demo_data import make_synthetic_boxes
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    path = tmp / "synthetic.json"
    coco = make_synthetic_boxes(n_images=args.images, n_raters=3, objects_per_image=args.objects, seed=0)
    path.write_text(json.dumps(coco))
    n_ann = len(coco["annotations"])
    del coco
    t = time.perf_counter()
    ds = import_multirater_coco("kalos-bench-panels", str(path), layout="rater_fields", label_field="raters")
    fields = sorted(f for f in ds.get_field_schema() if f.startswith("raters_"))
    compute_agreement_run(ds, rater_fields=fields, run_key="kalos", lsa_thresholds=(0.1, 0.3, 0.5, 0.7, 0.9))
    store_calibration(ds, fields)
    setup = (f"{len(ds):,} samples, {n_ann:,} boxes, 3 raters; set-up (import + agreement) "
             f"{time.perf_counter() - t:.0f} s")
    print(setup, flush=True)

    rows = []

    def bench(label, driver, method, **params):
        first, median = timed(lambda: driver.call(method, **params), args.repeat)
        count = None
        if any(r["operator_uri"] == "set_view" for r in driver.requests):
            t = time.perf_counter()
            n = driver.view_count()
            count = ((time.perf_counter() - t) * 1000, n)
        rows.append((label, first, median, count))
        extra = f", view count {count[0]:.0f} ms ({count[1]:,} samples)" if count else ""
        print(f"{label:<48} first {first:7.0f} ms, median {median:7.0f} ms{extra}", flush=True)
        return driver

    d = bench("Agreement overview: on_load", Driver(ds, "kalos_agreement_overview"), "on_load")
    low = next(k for k, c in enumerate(d.state["counts"]) if c)
    bench("Agreement overview: click lowest α bin", d, "on_click_bin", idx=low)
    top = max(range(len(d.state["counts"])), key=lambda k: d.state["counts"][k])
    bench("Agreement overview: click fullest α bin", d, "on_click_bin", idx=top)
    d = bench("Annotator vitality: on_load", Driver(ds, "kalos_annotator_vitality"), "on_load")
    rater = ds.get_run_info("kalos").config.raters[fields[-1]]
    bench("Annotator vitality: click a rater", d, "on_click_rater", x=rater)
    d = bench("Collaboration heatmap: on_load", Driver(ds, "kalos_collaboration"), "on_load")
    raters = d.state["raters"]
    bench("Collaboration heatmap: click a pair", d, "on_click_cell", x=raters[0], y=raters[-1])
    bench("Calibration: on_load", Driver(ds, "kalos_calibration"), "on_load")
    bench("Localisation sensitivity: on_load", Driver(ds, "kalos_localisation_sensitivity"), "on_load")
    d = bench("Class difficulty: on_load", Driver(ds, "kalos_class_difficulty"), "on_load")
    bench("Class difficulty: click hardest class", d, "on_click_class", y=d.state["classes"][0])
    ds.delete()
    return setup, rows


def write_doc(setup, rows, args) -> None:
    from _doc import write_block

    table = ["| panel call | first call (ms) | median (ms) | count the view it sets (ms) |",
             "|---|---:|---:|---:|"]
    for label, first, median, count in rows:
        c = f"{count[0]:.0f} ({count[1]:,} samples)" if count else "–"
        table.append(f"| {label} | {first:.0f} | {median:.0f} | {c} |")
    write_block("panels-table",
                f"FiftyOne 1.22.1 + MongoDB 6.0.5, {setup}. "
                f"`python benchmarks/bench_panels.py --images {args.images} --objects {args.objects}` "
                f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores); median of {args.repeat} calls "
                "after the first.\n\n" + "\n".join(table))


if __name__ == "__main__":
    main()
