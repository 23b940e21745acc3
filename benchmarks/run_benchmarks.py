"""Engine benchmarks; writes docs/benchmarks.md.

Each case runs in a fresh subprocess so that its peak memory (max RSS) is its own.
Usage: ``python benchmarks/run_benchmarks.py [--quick] [--no-write]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"

CASE_CODE = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from kalos_core import AgreementConfig, compute_agreement, load_coco
spec = json.loads(sys.argv[2])
def own_peak_kb():
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's peak over fork + exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
t0, c0 = time.perf_counter(), cpu()
ds = load_coco(spec["file"], spec["task"])
t1, c1 = time.perf_counter(), cpu()
res = compute_agreement(ds, AgreementConfig(**spec["config"]), workers=spec["workers"])
t2, c2 = time.perf_counter(), cpu()
print(json.dumps({"load_s": t1 - t0, "compute_s": t2 - t1, "load_cpu_s": c1 - c0, "compute_cpu_s": c2 - c1,
                  "images": res.n_images,
                  "annotations": res.n_annotations, "mean_alpha": res.mean_alpha,
                  "global_alpha": res.global_alpha,
                  "peak_rss_mb": max(own_peak_kb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024}))
"""

ALPHA_ONLY = dict(bootstrap=0, vitality=False, class_difficulty=False, collaboration=False, intra_rater=False)
ALL_DIAG = dict(bootstrap=1000, lsa_thresholds=[0.1, 0.3, 0.5, 0.7, 0.9])  # + vitality, classes, pairs
ALL_DIAG_1LSA = dict(bootstrap=1000, lsa_thresholds=[0.3])


def run_case(file: Path, task: str, config: dict, repeats: int = 1, workers: int = 1) -> dict:
    best = None
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CASE_CODE, str(REPO),
                              json.dumps({"file": str(file), "task": task, "config": config, "workers": workers})],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or r["compute_s"] < best["compute_s"]:
            best = r
    return best


def make_inputs(tmp: Path, quick: bool) -> dict[str, Path]:
    sys.path.insert(0, str(REPO))
    from kalos_core.demo_data import build_demo, make_synthetic_boxes

    files = {"demo200": build_demo(tmp / "demo", n_images=200, seed=0, with_images=False)}
    n = 500 if quick else 5000
    syn = tmp / f"synthetic_{n}.json"
    syn.write_text(json.dumps(make_synthetic_boxes(n_images=n, n_raters=3, objects_per_image=20, seed=0)))
    files["synthetic"] = syn
    if not quick:   # 50,000 images x 3 raters, 2.9M boxes: peak memory at scale (about 480 MB of JSON)
        big = tmp / "synthetic_50000.json"
        with big.open("w") as f:
            json.dump(make_synthetic_boxes(n_images=50_000, n_raters=3, objects_per_image=20, seed=0), f)
        files["synthetic_large"] = big
    if LVIS.is_file():
        files["lvis"] = LVIS
    return files


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="500 synthetic images instead of 5,000")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = make_inputs(Path(tmp), args.quick)
        cases = []
        if "lvis" in files:
            cases += [("LVIS subset200, boxes, alpha only", files["lvis"], "bbox", ALPHA_ONLY, 1),
                      ("LVIS subset200, polygons, alpha only", files["lvis"], "segm", ALPHA_ONLY, 1),
                      ("LVIS subset200, polygons, alpha only, 2 workers", files["lvis"], "segm", ALPHA_ONLY, 2),
                      ("LVIS subset200, polygons, all diagnostics, 2 workers", files["lvis"], "segm", ALL_DIAG, 2)]
        cases += [("demo 200 scenes x 4 raters, polygons, alpha only", files["demo200"], "segm", ALPHA_ONLY, 1),
                  ("demo 200 scenes x 4 raters, polygons, all diagnostics", files["demo200"], "segm", ALL_DIAG, 1),
                  ("demo 200 scenes x 4 raters, polygons, all diagnostics, 2 workers", files["demo200"], "segm",
                   ALL_DIAG, 2),
                  ("synthetic boxes, 3 raters, alpha only", files["synthetic"], "bbox", ALPHA_ONLY, 1),
                  ("synthetic boxes, 3 raters, all diagnostics", files["synthetic"], "bbox", ALL_DIAG, 1),
                  ("synthetic boxes, 3 raters, all diagnostics, 2 workers", files["synthetic"], "bbox", ALL_DIAG, 2)]
        if "synthetic_large" in files:
            cases += [("synthetic boxes 50k images, 3 raters, alpha only", files["synthetic_large"], "bbox",
                       ALPHA_ONLY, 1),
                      ("synthetic boxes 50k images, 3 raters, all diagnostics + 1 LSA + bootstrap",
                       files["synthetic_large"], "bbox", ALL_DIAG_1LSA, 1)]
        for name, f, task, cfg, workers in cases:
            r = run_case(f, task, cfg, repeats=1 if "synthetic" in name else 3, workers=workers)
            rows.append((name, r))
            print(f"{name:<66} {r['images']:>6} img {r['annotations']:>8} ann  load {r['load_s']:6.2f} s  "
                  f"compute {r['compute_s']:6.2f} s (cpu {r['compute_cpu_s']:6.2f} s)  peak {r['peak_rss_mb']:6.0f} MB  "
                  f"mean {r['mean_alpha']:.4f} global {r['global_alpha']:.4f}", flush=True)
        side = side_by_side(files["synthetic"]) if not args.quick else None
    if not args.no_write:
        write_doc(rows)
        write_readme(rows)
        if side is not None:
            write_side_by_side(side)


#: kalos 0.8.0's interpreter (a separate venv: ``pip install kalos==0.8.0``); absent: no side-by-side rows
REF_PYTHON = Path(os.environ.get("KALOS_REF_PYTHON", "/tmp/kalos_ref_venv/bin/python"))


def side_by_side(file: Path) -> dict | None:
    """``compare_reference.py FILE --diagnostics --cli --repeat 3``'s summary, when the reference runs here."""
    if not REF_PYTHON.is_file():
        print(f"(no side-by-side rows: {REF_PYTHON} is not there; see benchmarks/compare_reference.py)")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cmp.json"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "compare_reference.py"), str(file), "--diagnostics",
                        "--cli", "--repeat", "3", "--ref-python", str(REF_PYTHON), "--json", str(out)], check=True)
        return json.loads(out.read_text())["summary"]


def write_side_by_side(s: dict) -> None:
    """The ``reference-table`` block of docs/benchmarks.md: whole processes side by side."""
    rows = [("kalos 0.8.0: load + `calculate_iaa` (vitality, class difficulty, collaboration)", s["ref_process"]),
            ("`python -m kalos_core agreement FILE --lsa 0.3` (all diagnostics, 1 LSA threshold, bootstrap 1000)",
             s["ours_cli"]),
            ("`... --no-diagnostics --bootstrap 0` (α only)", s["ours_alpha_only"]),
            ("import + parse the file only (`kalos_core.io.read_json`: orjson)", s["parse_only"]),
            ("the same with `KALOS_JSON=stdlib` (Python's `json`)", s["parse_only_stdlib"])]
    table = ["| process | CPU s | wall s | peak RSS (MB) |", "|---|---:|---:|---:|"]
    table += [f"| {name} | {u['cpu']:.2f} | {u['wall']:.2f} | {u['max_rss_mb']:.0f} |" for name, u in rows]
    a, p, j = s["ours_alpha_only"], s["parse_only"], s["parse_only_stdlib"]
    from _doc import write_block

    write_block("reference-table", f"`make bench`, {time.strftime('%Y-%m-%d')}, {machine()}: "
                f"`compare_reference.py` on the {s['n_images']:,}-image synthetic box file, every process run "
                f"three times, the fastest (CPU) run shown.\n\n" + "\n".join(table) + "\n\n"
                f"Whole process: **{s['speedup_cpu']:.1f}x CPU, {s['speedup_wall']:.1f}x wall**; α only / parse "
                f"only: {a['cpu'] / p['cpu']:.2f} CPU, {a['wall'] / p['wall']:.2f} wall (against `json`'s parse: "
                f"{a['cpu'] / j['cpu']:.2f} CPU, {a['wall'] / j['wall']:.2f} wall); per-image α max |diff| "
                f"{s['max_image_diff']:.1e}.")


def write_doc(rows) -> None:
    table = ["| case | images | annotations | load (s) | compute (s) | compute CPU (s) | peak RSS (MB) | mean α | global α |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows:
        table.append(f"| {name} | {r['images']} | {r['annotations']} | {r['load_s']:.2f} | {r['compute_s']:.2f} | "
                     f"{r['compute_cpu_s']:.2f} | {r['peak_rss_mb']:.0f} | {r['mean_alpha']:.4f} | {r['global_alpha']:.4f} |")
    from _doc import write_block

    write_block("engine-table", f"Measured {time.strftime('%Y-%m-%d')} on {machine()} with "
                f"`python benchmarks/run_benchmarks.py` (best of 3 for the small cases; compute CPU = user + system "
                f"seconds of the process and its workers, steadier than wall time on a shared machine; peak RSS = "
                f"the case process's own high-water mark `VmHWM`, or its largest worker's `ru_maxrss`).\n\n"
                + "\n".join(table))


#: README speed table: these rows of the engine table, under shorter names
README_ROWS = {
    "demo 200 scenes x 4 raters, polygons, alpha only": "demo scenes, 4 raters, polygons, α only",
    "demo 200 scenes x 4 raters, polygons, all diagnostics": "demo scenes, 4 raters, polygons, all diagnostics",
    "synthetic boxes, 3 raters, alpha only": "synthetic boxes, 3 raters, α only",
    "synthetic boxes, 3 raters, all diagnostics":
        "synthetic boxes, 3 raters, all diagnostics + 5 LSA thresholds + bootstrap",
    "synthetic boxes 50k images, 3 raters, all diagnostics + 1 LSA + bootstrap":
        "synthetic boxes, 3 raters, all diagnostics + 1 LSA threshold + bootstrap",
}


def write_readme(rows) -> None:
    """The ``readme-bench`` block of README.md."""
    table = ["| case | images | annotations | load (s) | compute (s) | peak RSS (MB) |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in rows:
        if name in README_ROWS:
            table.append(f"| {README_ROWS[name]} | {r['images']:,} | {r['annotations']:,} | {r['load_s']:.1f} | "
                         f"{r['compute_s']:.1f} | {r['peak_rss_mb']:.0f} |")
    from _doc import write_block

    write_block("readme-bench", "\n".join(table), doc=REPO / "README.md")


if __name__ == "__main__":
    main()
