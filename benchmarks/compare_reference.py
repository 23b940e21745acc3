#!/usr/bin/env python3
"""Cross-check kalos_core against the published reference implementation (PyPI ``kalos``).

OPT-IN DEVELOPMENT TOOL - not part of the engine, its tests or its requirements.
It needs the reference package in a SEPARATE virtual environment, e.g.

    python3 -m venv /tmp/kalos_ref_venv
    /tmp/kalos_ref_venv/bin/pip install kalos==0.8.0     # pulls pylibmgm, jsonargparse, scikit-image, ...

Then, from the repository root, with the interpreter that has kalos_core's own
dependencies (numpy, scipy, shapely):

    python3 benchmarks/compare_reference.py FILE.json --task bbox|segm \
        [--solver greedy|shm|ahc] [--cost soft|neg] [--threshold 0.5] \
        [--diagnostics] [--cli] [--show 5] [--ref-python /tmp/kalos_ref_venv/bin/python]

What it does: runs the reference (in a subprocess with the reference venv's
interpreter; this same file acts as the worker there and only calls the
package's public functions ``kalos.utils.data_loading.load_and_preprocess_data``
and ``kalos.iaa.core.calculate_iaa``) and kalos_core (in this process) on the
same file, then prints mean / global alpha, the per-image alpha differences,
optionally the diagnostics (vitality, class difficulty, pairwise collaboration),
and the wall time of each side's compute call (plus, with ``--cli``, our
end-to-end ``python -m kalos_core agreement`` time).

Known, explained differences (see the cross-check report; Greedy box/polygon
IoU agree to ~1e-15 on all generated files):
* Greedy, exact cost ties: the reference breaks them by file order (rater pairs
  in order of the raters' first annotation in the image, then annotation order);
  kalos_core by its canonical, permutation-invariant annotation order.
* SHM: the reference adds raters in order of first appearance in the file and
  visits the earlier raters by iterating a Python ``set`` (so its result depends
  on PYTHONHASHSEED; the worker runs with PYTHONHASHSEED=0 unless ``--hash-seed``
  says otherwise); kalos_core uses sorted rater order throughout.
* AHC with the soft cost: the reference's cut-off is ``cost(threshold) + offset``
  evaluated as a same-class pair, so it never merges annotations of different
  classes; kalos_core's AHC does.
* Input the kalos_core loader rejects (annotations of raters not in
  ``rater_list``, boxes with non-positive size, ...) the reference keeps or
  drops silently; use ``--skip-invalid`` to compare at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_REF_PYTHON = os.environ.get("KALOS_REF_PYTHON", "/tmp/kalos_ref_venv/bin/python")
REPO = Path(__file__).resolve().parents[1]

# our names -> the reference's registry names
REF_DISTANCE = {"bbox": "bbox_iou_similarity", "segm": "segm_iou_similarity"}
REF_COST = {"soft": "category_lenient", "neg": "negative_score"}
REF_SOLVER = {"greedy": "greedy", "shm": "shm", "ahc": "ahc"}


def _num(x):
    """JSON-safe float (NaN/inf -> None)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else x


def _mean(values):
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else None


# --------------------------------------------------------------------------- reference worker
def reference_worker(args: argparse.Namespace) -> None:
    """Runs inside the reference venv: load, calculate_iaa, write a JSON summary."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    import logging

    logging.disable(logging.CRITICAL)
    from kalos.iaa.core import calculate_iaa
    from kalos.utils.data_loading import load_and_preprocess_data

    t0 = time.perf_counter()
    package = load_and_preprocess_data(Path(args.file), "coco-json")
    t_load = time.perf_counter() - t0
    diag = args.diagnostics
    t0 = time.perf_counter()
    (mean_alpha, global_alpha, mean_vit, global_vit, mean_diff, global_diff, image_alphas,
     mean_collab, global_collab) = calculate_iaa(
        processed_data=package["processed_data"],
        categories=package["categories"],
        method=REF_SOLVER[args.solver],
        threshold_func=REF_DISTANCE[args.task],
        cost_func=REF_COST[args.cost],
        similarity_threshold=args.threshold,
        calculate_vitality=diag,
        calculate_difficulty=diag,
        collaboration_clusters=diag,
        all_raters=package["all_raters"],
    )
    t_compute = time.perf_counter() - t0
    out = {
        "mean_alpha": _num(mean_alpha),
        "global_alpha": _num(global_alpha),
        "per_image_alpha": {str(k): _num(v) for k, v in image_alphas.items()},
        "seconds_load": t_load,
        "seconds_compute": t_compute,
    }
    if diag:
        out["vitality"] = {str(r): _num(_mean(v)) for r, v in mean_vit.items() if len(v)}
        out["vitality_global"] = {str(r): _num(v) for r, v in global_vit.items()}
        out["class_difficulty"] = {str(c): _num(_mean(d["alphas"])) for c, d in mean_diff.items() if d["alphas"]}
        out["class_difficulty_global"] = {str(c): _num(d["alpha"]) for c, d in global_diff.items()}
        out["collaboration"] = {f"{a}|{b}": _num(_mean(v))
                                for a, row in mean_collab.items() for b, v in row.items() if len(v)}
        out["collaboration_global"] = {"|".join(sorted((str(a), str(b)))): _num(v)
                                       for a, row in global_collab.items() for b, v in row.items()}
    Path(args.worker_out).write_text(json.dumps(out))


def run_reference(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ref.json"
        cmd = [args.ref_python, str(Path(__file__).resolve()), str(args.file), "--task", args.task,
               "--solver", args.solver, "--cost", args.cost, "--threshold", str(args.threshold),
               "--_worker-out", str(out)]
        if args.diagnostics:
            cmd.append("--diagnostics")
        env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONHASHSEED": str(args.hash_seed)}
        env.pop("PYTHONPATH", None)  # the reference must not see kalos_core
        proc, usage = run_measured(cmd, env)
        if proc.returncode != 0:
            sys.exit(f"reference run failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
        res = json.loads(out.read_text())
    res["seconds_process"] = usage["wall"]
    res["process"] = usage
    return res


#: measures a command from a small process: a child's ``ru_maxrss`` carries the peak of the process
#: it was forked from (this one, after our in-process run, holds hundreds of MB)
TIME = "/usr/bin/time"


#: how many times each timed process runs (the fastest run is reported); ``--repeat``
REPEAT = [1]


def run_measured(cmd: list, env: dict, cwd: str | None = None):
    """Run ``cmd`` ``REPEAT`` times; the fastest (CPU) run's ``(CompletedProcess, usage)``.

    Both sides run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed), as an
    installed package does: the reference's site-packages hold compiled files from pip, and a
    warm-up run here writes ours (``__pycache__``, git-ignored)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [_run_once(cmd, env, cwd) for _ in range(max(1, REPEAT[0]))]
    return min(runs, key=lambda r: r[1]["cpu"])


def _run_once(cmd: list, env: dict, cwd: str | None = None):
    """``(CompletedProcess, {"wall", "cpu", "max_rss_mb"})`` of that process alone
    (CPU = user + system seconds; peak resident set size = its ``ru_maxrss``, taken by GNU time,
    else by ``os.wait4`` when GNU time is absent: then it may include this process's own peak)."""
    use_time = os.path.exists(TIME)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = [TIME, "-f", "%e %U %S %M", "-o", tf.name, *cmd] if use_time else cmd
        t0 = time.perf_counter()
        p = subprocess.Popen(full, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        proc = subprocess.CompletedProcess(cmd, p.returncode, out.read(), err.read())
        usage = {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024}
        if use_time:
            last = [line for line in tf.read().splitlines() if line.strip()][-1].split()
            usage.update(wall=float(last[0]), cpu=float(last[1]) + float(last[2]), max_rss_mb=int(last[3]) / 1024)
    return proc, usage


# --------------------------------------------------------------------------- our side
def run_ours(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(REPO))
    from kalos_core import AgreementConfig, InvalidInputError, compute_agreement, load_coco

    diag = args.diagnostics
    t0 = time.perf_counter()
    try:
        ds = load_coco(args.file, args.task, skip_invalid=args.skip_invalid)
    except InvalidInputError as e:
        sys.exit(f"kalos_core rejects the file (the reference accepted it); rerun with --skip-invalid:\n{e}")
    t_load = time.perf_counter() - t0
    cfg = AgreementConfig(threshold=args.threshold, solver=args.solver, cost=args.cost, vitality=diag,
                          class_difficulty=diag, collaboration=diag, intra_rater=False, bootstrap=0)
    t0 = time.perf_counter()
    r = compute_agreement(ds, cfg)
    t_compute = time.perf_counter() - t0
    out = {
        "mean_alpha": _num(r.mean_alpha),
        "global_alpha": _num(r.global_alpha),
        "per_image_alpha": {str(k): _num(v) for k, v in r.per_image_alpha.items()},
        "seconds_load": t_load,
        "seconds_compute": t_compute,
        "n_skipped": r.n_skipped,
    }
    if diag:
        out["vitality"] = {k: _num(v) for k, v in r.vitality.items()}
        out["vitality_global"] = {k: _num(v) for k, v in r.vitality_global.items()}
        out["class_difficulty"] = {k: _num(v) for k, v in r.class_difficulty.items()}
        out["class_difficulty_global"] = {k: _num(v) for k, v in r.class_difficulty_global.items()}
        out["collaboration"] = {f"{a}|{b}": _num(v) for a, row in r.collaboration.items()
                                for b, v in row.items() if a < b}
        out["collaboration_global"] = {f"{a}|{b}": _num(v) for a, row in r.collaboration_global.items()
                                       for b, v in row.items() if a < b}
    if args.cli:
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-c", "import kalos_core.cli, kalos_core.agreement.chunk_kernel"], cwd=str(REPO),
                       env={**warm, "PYTHONPATH": str(REPO)}, check=True)   # writes our bytecode cache
        out.update(run_cli(args, args.cli_args.split()))
        alpha_only = run_cli(args, ["--no-diagnostics", "--bootstrap", "0"])
        out["alpha_only"] = alpha_only["cli"]
        out["parse"] = run_parse_only(args)
        out["parse_stdlib"] = run_parse_only(args, {"KALOS_JSON": "stdlib"})
    return out


def run_cli(args: argparse.Namespace, extra: list) -> dict:
    """Our whole process, ``python -m kalos_core agreement FILE ... extra``."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "kalos_core", "agreement", str(args.file), "--task", args.task,
               "--solver", args.solver, "--cost", args.cost, "--threshold", str(args.threshold),
               "--output", str(Path(tmp) / "out.json"), *extra]
        if args.skip_invalid:
            cmd.append("--skip-invalid")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc, usage = run_measured(cmd, env, cwd=str(REPO))
        out["seconds_cli"] = usage["wall"]
        out["cli"] = {**usage, "args": " ".join(extra)}
        if proc.returncode != 0:
            out["cli_error"] = proc.stderr[-2000:]
        else:
            cli = json.loads((Path(tmp) / "out.json").read_text())
            out["cli_mean_alpha"] = cli["mean_alpha"]
    return out


def run_parse_only(args: argparse.Namespace, extra_env: dict | None = None) -> dict:
    """A process that only parses the file, as our reader does (orjson when installed; with
    ``KALOS_JSON=stdlib`` Python's ``json``): the floor of loading."""
    code = ("import sys, time; t = time.perf_counter(); from kalos_core.io import read_json; "
            "read_json(sys.argv[1]); print(time.perf_counter() - t)")
    env = {**os.environ, "PYTHONPATH": str(REPO), **(extra_env or {})}
    proc, usage = run_measured([sys.executable, "-c", code, str(args.file)], env, cwd=str(REPO))
    return {**usage, "seconds_parse": float(proc.stdout.strip() or "nan")}


# --------------------------------------------------------------------------- comparison
def _diff(a, b):
    if a is None or b is None:
        return 0.0 if a is None and b is None else math.inf
    return abs(a - b)


def compare_maps(ref: dict, ours: dict, tol: float):
    keys = sorted(set(ref) | set(ours), key=lambda k: (len(k), k))
    diffs = {k: _diff(ref.get(k), ours.get(k)) for k in keys}
    bad = [k for k, d in diffs.items() if d > tol]
    return (max(diffs.values()) if diffs else 0.0), bad, diffs


def _fmt(x, w=10):
    return f"{'-':>{w}}" if x is None else f"{x:>{w}.6f}"


def report(args, ref: dict, ours: dict) -> dict:
    tol = args.tol
    print(f"file {args.file}   task {args.task}   solver {args.solver}   cost {args.cost}   "
          f"threshold {args.threshold}")
    print(f"{'':24}{'reference':>14}{'kalos_core':>14}{'|diff|':>12}")
    for key in ("mean_alpha", "global_alpha"):
        print(f"{key:24}{_fmt(ref[key], 14)}{_fmt(ours[key], 14)}{_diff(ref[key], ours[key]):>12.2e}")
    mx, bad, diffs = compare_maps(ref["per_image_alpha"], ours["per_image_alpha"], tol)
    n = len(diffs)
    print(f"{'per-image alpha':24}{n:>14d} images{'':7}max |diff| {mx:.2e}; {len(bad)} differ by > {tol:g}")
    only_ref = sorted(set(ref["per_image_alpha"]) - set(ours["per_image_alpha"]))
    only_ours = sorted(set(ours["per_image_alpha"]) - set(ref["per_image_alpha"]))
    if only_ref or only_ours:
        print(f"  images only in reference: {only_ref[:10]}  only in ours: {only_ours[:10]}")
    for k in sorted(bad, key=lambda k: -diffs[k])[: args.show]:
        print(f"  image {k:>10}: reference {_fmt(ref['per_image_alpha'].get(k))}   "
              f"ours {_fmt(ours['per_image_alpha'].get(k))}")
    summary = {"file": str(args.file), "task": args.task, "solver": args.solver, "cost": args.cost,
               "threshold": args.threshold, "n_images": n, "max_image_diff": mx, "n_images_differ": len(bad),
               "images_differ": bad, "ref": {k: ref[k] for k in ("mean_alpha", "global_alpha")},
               "ours": {k: ours[k] for k in ("mean_alpha", "global_alpha")}}
    if args.diagnostics:
        print("diagnostics (max |diff| over keys; keys that differ by > tol)")
        for key in ("vitality", "vitality_global", "class_difficulty", "class_difficulty_global",
                    "collaboration", "collaboration_global"):
            mxd, badd, _ = compare_maps(ref.get(key, {}), ours.get(key, {}), tol)
            print(f"  {key:24} {len(ref.get(key, {})):>4} vs {len(ours.get(key, {})):>4} keys   max |diff| "
                  f"{mxd:.2e}" + (f"   differ: {badd[:6]}" if badd else ""))
            summary[f"max_diff_{key}"] = mxd
    print("timings (seconds)")
    print(f"  reference: load {ref['seconds_load']:.3f}   calculate_iaa {ref['seconds_compute']:.3f}   "
          f"whole worker process {ref['seconds_process']:.3f}")
    line = f"  kalos_core: load {ours['seconds_load']:.3f}   compute_agreement {ours['seconds_compute']:.3f}"
    if "seconds_cli" in ours:
        line += f"   CLI end-to-end (all diagnostics, bootstrap) {ours['seconds_cli']:.3f}"
    print(line)
    if ours.get("cli_error"):
        print("  CLI failed:", ours["cli_error"])
    if "cli" in ours:
        rp, cli, a1, pa = ref["process"], ours["cli"], ours["alpha_only"], ours["parse"]
        print("whole processes, side by side (CPU s = user + system; wall; peak RSS of the process)")
        rows = [("reference: load + calculate_iaa (vitality, difficulty, collaboration)" if args.diagnostics
                 else "reference: load + calculate_iaa", rp),
                (f"kalos_core CLI {cli['args']}".strip(), cli), (f"kalos_core CLI {a1['args']}", a1),
                ("python: import + parse the JSON only", pa),
                ("python: import + parse the JSON only, KALOS_JSON=stdlib (json)", ours["parse_stdlib"])]
        for name, u in rows:
            print(f"  {name:72} CPU {u['cpu']:7.2f}   wall {u['wall']:7.2f}   {u['max_rss_mb']:7.0f} MB")
        print(f"  speed-up, whole process: CPU {rp['cpu'] / cli['cpu']:.1f}x   wall {rp['wall'] / cli['wall']:.1f}x")
        ps = ours["parse_stdlib"]
        print(f"  alpha-only process / parse-only process: CPU {a1['cpu'] / pa['cpu']:.2f}   "
              f"wall {a1['wall'] / pa['wall']:.2f}  (parsing alone: {pa['seconds_parse']:.2f} s); against "
              f"json's parse: CPU {a1['cpu'] / ps['cpu']:.2f}   wall {a1['wall'] / ps['wall']:.2f}")
        summary.update(ref_process=rp, ours_cli=cli, ours_alpha_only=a1, parse_only=pa, parse_only_stdlib=ps,
                       speedup_cpu=rp["cpu"] / cli["cpu"], speedup_wall=rp["wall"] / cli["wall"])
    speed = ref["seconds_compute"] / ours["seconds_compute"] if ours["seconds_compute"] else math.inf
    print(f"  compute speed-up: {speed:.1f}x")
    summary.update(ref_seconds=ref["seconds_compute"], ours_seconds=ours["seconds_compute"],
                   ours_cli_seconds=ours.get("seconds_cli"))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", type=Path)
    p.add_argument("--task", choices=sorted(REF_DISTANCE), default="bbox")
    p.add_argument("--solver", choices=sorted(REF_SOLVER), default="greedy")
    p.add_argument("--cost", choices=sorted(REF_COST), default="soft")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--diagnostics", action="store_true",
                   help="also compare vitality, class difficulty and pairwise collaboration (slower)")
    p.add_argument("--cli", action="store_true",
                   help="also time our whole CLI process (with --cli-args), an alpha-only CLI process and a "
                        "parse-only process, side by side with the reference's process")
    p.add_argument("--cli-args", default="--lsa 0.3",
                   help="options of the timed CLI run (default: all diagnostics, bootstrap 1000, one LSA threshold)")
    p.add_argument("--skip-invalid", action="store_true",
                   help="ours: drop annotations the loader rejects (the reference drops e.g. "
                        "annotations of raters not in rater_list silently)")
    p.add_argument("--ref-python", default=DEFAULT_REF_PYTHON, help="interpreter of the reference venv")
    p.add_argument("--hash-seed", default="0", help="PYTHONHASHSEED for the reference worker")
    p.add_argument("--tol", type=float, default=1e-9, help="tolerance for 'differs'")
    p.add_argument("--show", type=int, default=5, help="list this many differing images")
    p.add_argument("--json", type=Path, help="write a summary (and both raw results) here")
    p.add_argument("--repeat", type=int, default=1,
                   help="run every timed process (both sides) this many times; report the fastest")
    p.add_argument("--_worker-out", dest="worker_out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker_out:
        reference_worker(args)
        return 0
    REPEAT[0] = args.repeat
    ref = run_reference(args)
    ours = run_ours(args)
    summary = report(args, ref, ours)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "reference": ref, "kalos_core": ours}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
