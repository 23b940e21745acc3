#!/usr/bin/env python3
"""Simulate a cluster run: the chunked map/reduce of an agreement run, measured per chunk, extrapolated.

Runs the map step (:func:`kalos_core.agreement.partial.analyse_chunk`) on ``--chunks`` chunks of a box
file one after the other in this process and measures, per chunk: CPU seconds, the peak of
Python allocations (``tracemalloc``, on one chunk: it slows the run) and the size of the
pickled :class:`~kalos_core.agreement.partial.Partial` a worker would send (with and without the
per-label blocks (``labels``: unit and status of every box), which grow with the boxes; the summed coincidences
do not). Then the reduce: merging the partials and ``finish``. From these it extrapolates to
``--target`` boxes on ``--workers`` cores.

Usage: ``python benchmarks/simulate_scale.py FILE.json [--chunks 20] [--target 10e6] [--workers 64]``
(all diagnostics, one LSA threshold, bootstrap 1000 unless ``--alpha-only``).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kalos_core import AgreementConfig, load_coco  # noqa: E402
from kalos_core.agreement import finish  # noqa: E402
from kalos_core.agreement.partial import Partial, analyse_chunk, chunk_bounds  # noqa: E402


def measure(path: Path, n_chunks: int, config: AgreementConfig) -> dict:
    t0 = time.process_time()
    ds = load_coco(path, "bbox")
    load_cpu = time.process_time() - t0
    n_images, n_boxes = len(ds.images), ds.n_annotations
    bounds = chunk_bounds(n_images, -(-n_images // n_chunks))
    n_rows = len(ds.raters)
    parts, cpu, size, size_sums = [], [], [], []
    for start, stop in bounds:
        c0 = time.process_time()
        p = analyse_chunk(ds.images[start:stop], start, ds.kind, config, n_rows)
        cpu.append(time.process_time() - c0)
        size.append(len(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)))
        size_sums.append(len(pickle.dumps(replace(p, labels=[]), protocol=pickle.HIGHEST_PROTOCOL)))
        parts.append(p)
    start, stop = bounds[0]
    tracemalloc.start()
    analyse_chunk(ds.images[start:stop], start, ds.kind, config, n_rows)
    chunk_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    c0 = time.process_time()
    merged = Partial()
    for p in parts:
        merged.merge(p)
    merge_cpu = time.process_time() - c0
    c0 = time.process_time()
    result = finish(ds, config, merged)
    finish_cpu = time.process_time() - c0
    return {"images": n_images, "boxes": n_boxes, "chunks": len(bounds), "load_cpu": load_cpu,
            "chunk_cpu": cpu, "chunk_bytes": size, "chunk_bytes_sums": size_sums, "chunk_peak_bytes": chunk_peak,
            "merge_cpu": merge_cpu, "finish_cpu": finish_cpu, "mean_alpha": result.mean_alpha}


def extrapolate(m: dict, target: float, workers: int) -> dict:
    per_box_cpu = sum(m["chunk_cpu"]) / m["boxes"]
    per_box_bytes = sum(m["chunk_bytes"]) / m["boxes"]
    sums_bytes = sum(m["chunk_bytes_sums"]) / m["chunks"]          # per chunk, with per-image alphas
    boxes_per_chunk = m["boxes"] / m["chunks"]
    n_chunks = target / boxes_per_chunk
    map_core_s = per_box_cpu * target
    load_core_s = m["load_cpu"] / m["boxes"] * target
    reduce_s = (m["merge_cpu"] + m["finish_cpu"]) / m["boxes"] * target   # grows with images (per-image lists)
    return {"target_boxes": target, "workers": workers, "chunks": n_chunks, "map_core_s": map_core_s,
            "load_core_s": load_core_s, "wall_s": (map_core_s + load_core_s) / workers + reduce_s,
            "reduce_s": reduce_s, "partials_mb": per_box_bytes * target / 1e6,
            "partials_without_label_maps_mb": sums_bytes * n_chunks / 1e6,
            "boxes_per_core_s": 1 / per_box_cpu}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--target", type=float, default=10e6)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--alpha-only", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    diag = not args.alpha_only
    config = AgreementConfig(lsa_thresholds=(0.3,) if diag else (), bootstrap=1000 if diag else 0,
                             vitality=diag, class_difficulty=diag, collaboration=diag, intra_rater=diag)
    m = measure(args.file, args.chunks, config)
    x = extrapolate(m, args.target, args.workers)
    c, b = m["chunk_cpu"], m["chunk_bytes"]
    print(f"{m['images']} images, {m['boxes']} boxes, {m['chunks']} chunks of ~{m['boxes'] / m['chunks']:.0f} boxes")
    print(f"per chunk: CPU {min(c):.2f}-{max(c):.2f} s (mean {sum(c) / len(c):.2f}); partial "
          f"{min(b) / 1e6:.2f}-{max(b) / 1e6:.2f} MB pickled ({sum(m['chunk_bytes_sums']) / len(b) / 1e3:.0f} kB "
          f"without the per-label blocks); peak Python allocations {m['chunk_peak_bytes'] / 1e6:.0f} MB (tracemalloc)")
    print(f"load {m['load_cpu']:.2f} CPU s; reduce: merge {m['merge_cpu']:.3f} s + finish {m['finish_cpu']:.3f} s")
    print(f"extrapolated to {x['target_boxes']:.3g} boxes on {x['workers']} cores: {x['chunks']:.0f} chunks, map "
          f"{x['map_core_s']:.0f} core-s + load {x['load_core_s']:.0f} core-s -> wall ~{x['wall_s']:.0f} s "
          f"(reduce {x['reduce_s']:.1f} s); partials {x['partials_mb']:.0f} MB "
          f"({x['partials_without_label_maps_mb']:.1f} MB without the per-label maps); "
          f"{x['boxes_per_core_s']:.0f} boxes per core-second (map)")
    if args.json:
        args.json.write_text(json.dumps({"measured": m, "extrapolated": x}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
