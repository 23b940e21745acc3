"""Every measure's whole process, before and after a change, on files that look like real exports.

Runs ``python -m kalos_core <measure> ...`` for every measure on the 5,000-image x 3-rater synthetic
box file written at full float precision (as ``json.dump`` writes computed coordinates), and on
the LVIS two-rater file when ``../shared`` is there; each command in two trees: this checkout
("after") and ``--before REV`` (a throw-away ``git worktree`` of that commit, same interpreter).
The runs of both trees alternate, so a busy machine slows both alike; every process runs
``--repeat`` times and the median wall and CPU (user + system) are reported, with the peak RSS
and whether both trees wrote byte-identical result JSON (less the run's own ``"seconds"``). kalos 0.8.0's whole process (load +
``calculate_iaa`` with its diagnostics) is a row of its own when its venv is there
(``KALOS_REF_PYTHON``, see compare_reference.py).

Usage: ``python benchmarks/bench_measures.py [--before REV] [--repeat 5] [--images 5000] [--no-write]``;
writes the ``measures-table`` block of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare_reference import _run_once
from result_digests import LVIS, digest

REPO = Path(__file__).resolve().parents[1]
#: a process that takes longer than this (CPU s) in either tree on its first run is not repeated
SLOW_CPU_S = 60.0
REF_PYTHON = Path(os.environ.get("KALOS_REF_PYTHON", "/tmp/kalos_ref_venv/bin/python"))

#: (row label, CLI arguments); ``{file}`` and ``{pred}`` are filled in per input file
CASES = [
    ("agreement, all diagnostics, bootstrap 1000", ["agreement", "{file}"]),
    ("agreement, α only", ["agreement", "{file}", "--no-diagnostics", "--bootstrap", "0"]),
    ("calibrate (every box distance)", ["calibrate", "{file}"]),
    ("braylan", ["braylan", "{file}"]),
    ("variations (10 thresholds)", ["variations", "{file}"]),
    ("consensus", ["consensus", "{file}"]),
    ("convergence, bootstrap 1000", ["convergence", "{file}"]),
    ("convergence, bootstrap 1000, with a model", ["convergence", "{file}", "--predictions", "{pred}"]),
    ("noise-aware (a model's AP bounds)", ["noise-aware", "--reference", "{file}", "--predictions", "{pred}"]),
]


def write_inputs(tmp: Path, n_images: int) -> dict[str, tuple[Path, Path]]:
    """``{name: (multi-rater COCO file, predictions file)}``: the synthetic file at full precision
    and, when present, LVIS; predictions are the last rater's boxes moved by up to 2 px, seeded scores."""
    sys.path.insert(0, str(REPO))
    import numpy as np

    from kalos_core.demo_data import make_synthetic_boxes

    coco = make_synthetic_boxes(n_images=n_images, n_raters=3, objects_per_image=20, seed=0, decimals=None)
    files = {f"synthetic {n_images:,} images, full precision": coco}
    if LVIS.is_file():
        files["LVIS subset200"] = json.loads(LVIS.read_text())
    out = {}
    for i, (name, data) in enumerate(files.items()):
        rng = np.random.default_rng(i)
        last = sorted({a["rater_id"] for a in data["annotations"]})[-1]
        preds = [{"image_id": a["image_id"], "category_id": a["category_id"],
                  "bbox": [float(v + d) for v, d in zip(a["bbox"], [*rng.uniform(-2, 2, 2), 0, 0], strict=True)],
                  "score": float(rng.random())} for a in data["annotations"] if a["rater_id"] == last]
        path, pred = tmp / f"input_{i}.json", tmp / f"predictions_{i}.json"
        path.write_text(json.dumps(coco) if data is coco else LVIS.read_text())
        pred.write_text(json.dumps(preds))
        out[name] = (path, pred)
    return out


def before_tree(tmp: Path, rev: str) -> Path:
    where = tmp / "before"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), rev], check=True)
    return where


def measure(tree: Path, args: list[str], out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    proc, usage = _run_once([sys.executable, "-m", "kalos_core", *args, "--output", str(out)], env, cwd=str(tree))
    if proc.returncode != 0:
        sys.exit(f"failed in {tree}: {' '.join(args)}\n{proc.stderr[-3000:]}")
    return usage


def median_usage(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "max_rss_mb")}


def run_cases(trees: dict[str, Path], inputs: dict, repeat: int, tmp: Path, only: str | None = None) -> list[dict]:
    rows = []
    for fname, (path, pred) in inputs.items():
        for label, template in CASES:
            if only and not re.search(only, f"{fname} | {label}"):
                continue
            args = [a.format(file=path, pred=pred) for a in template]
            runs = {side: [] for side in trees}
            outs = {side: tmp / f"out_{side}.json" for side in trees}
            warm = {side: measure(tree, args, outs[side]) for side, tree in trees.items()}   # writes the bytecode cache
            slow = max(u["cpu"] for u in warm.values()) > SLOW_CPU_S
            for _ in range(0 if slow else repeat):
                for side, tree in trees.items():
                    runs[side].append(measure(tree, args, outs[side]))
            if slow:                               # one run is the figure (the cache was warm for the others)
                runs = {side: [u] for side, u in warm.items()}
            row = {"file": fname, "case": label + (" (1 run)" if slow else ""),
                   **{side: median_usage(r) for side, r in runs.items()}}
            if len(trees) == 2:
                row["identical"] = digest(outs["before"]) == digest(outs["after"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def reference_row(path: Path, repeat: int) -> dict | None:
    """kalos 0.8.0's whole process on the same file (load + ``calculate_iaa``, all its diagnostics)."""
    if not REF_PYTHON.is_file():
        print(f"(no kalos 0.8.0 row: {REF_PYTHON} is not there; see benchmarks/compare_reference.py)")
        return None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["TQDM_DISABLE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(REF_PYTHON), str(REPO / "benchmarks" / "compare_reference.py"), str(path), "--diagnostics",
               "--_worker-out", str(Path(tmp) / "ref.json")]
        runs = [_run_once(cmd, env)[1] for _ in range(repeat)]
    return median_usage(runs)


def table(rows: list[dict], ref: dict | None, before: str | None) -> str:
    sides = ["before", "after"] if before else ["after"]
    head = "| file | process | " + " | ".join(
        f"{s} wall s | {s} CPU s | {s} peak MB" for s in sides) + (" | same JSON |" if before else "")
    lines = [head, "|" + "---|" * 2 + "---:|" * (3 * len(sides)) + ("---|" if before else "")]
    for r in rows:
        cells = " | ".join(f"{r[s]['wall']:.2f} | {r[s]['cpu']:.2f} | {r[s]['max_rss_mb']:.0f}" for s in sides)
        same = (" | " + ("yes" if r["identical"] else "**no**")) if before else ""
        lines.append(f"| {r['file']} | {r['case']} | {cells}{same} |")
    if ref:
        dash = " | ".join(["–"] * 3 * (len(sides) - 1))
        cells = (dash + " | " if dash else "") + f"{ref['wall']:.2f} | {ref['cpu']:.2f} | {ref['max_rss_mb']:.0f}"
        lines.append(f"| {rows[0]['file']} | kalos 0.8.0: load + `calculate_iaa` (its diagnostics) | {cells}"
                     + (" | |" if before else " |"))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="a commit to compare with (run in a throw-away git worktree)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per process and tree; medians are reported")
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--only", help="run only the cases whose 'file | process' matches this regular expression")
    ap.add_argument("--no-reference", action="store_true", help="leave out kalos 0.8.0's row")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kalos-bench-") as t:
        tmp = Path(t)
        inputs = write_inputs(tmp, args.images)
        trees = {"after": REPO}
        if args.before:
            trees = {"before": before_tree(tmp, args.before), "after": REPO}
        try:
            rows = run_cases(trees, inputs, args.repeat, tmp, args.only)
            ref = None if args.no_reference else reference_row(next(iter(inputs.values()))[0], args.repeat)
        finally:
            if args.before:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(trees["before"])])
    body = table(rows, ref, args.before)
    print(body)
    if not args.no_write:
        from _doc import write_block

        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        intro = (f"`python benchmarks/bench_measures.py{' --before ' + args.before if args.before else ''} "
                 f"--repeat {args.repeat}`, {when}, after = {rev}: whole processes "
                 f"(`python -m kalos_core <measure> FILE --output OUT`), median of {args.repeat} runs per "
                 f"tree, runs of both trees alternating (a process over {SLOW_CPU_S:.0f} s CPU: one run); CPU = user + "
                 f"system; peak = the process's max RSS.")
        write_block("measures-table", intro + "\n\n" + body)


if __name__ == "__main__":
    main()
