"""Re-create the shipped noise profiles from the real LVIS double-annotation file.

``kalos_core/noise/profiles/default.json`` (boxes, ``--task bbox``) and ``default_segm.json``
(polygons, ``--task segm``) are what ``fit-noise`` gives on
``lvis_v1_val_double_annotations_subset200.json`` (200 images, raters r1 / r2), plus their
provenance in ``meta``: file name, sha256, the command, and a λ = 1 check (one synthetic
rater simulated from r1, KαLOS α against r1, mean over 5 seeds, next to the real α(r1, r2)).
The fit report (KS, AIC per component) is the profile's ``fit_report``.

Usage: ``python benchmarks/noise_default_profile.py [--data FILE] [--outdir DIR]``
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kalos_core import load_coco  # noqa: E402
from kalos_core.noise.fit import fit_noise_profile  # noqa: E402
from kalos_core.noise.lambda_check import lambda_one_check  # noqa: E402

DATA = (REPO / ".." / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json").resolve()
OUTPUTS = {"bbox": "default.json", "segm": "default_segm.json"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--outdir", type=Path, default=REPO / "kalos_core" / "noise" / "profiles")
    args = ap.parse_args(argv)
    raw = args.data.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    for task, name in OUTPUTS.items():
        ds = load_coco(args.data, task)
        fit = fit_noise_profile(ds, seed=0, source=f"fit-noise {args.data.name} --task {task}")
        prof = fit.profile
        check = lambda_one_check(args.data, prof, task=task, seeds=range(5))
        prof.meta.update({
            "file": args.data.name, "sha256": sha, "task": task, "raters": sorted(ds.raters),
            "command": f"python -m kalos_core fit-noise {args.data.name} --task {task} --output {name}",
            "lambda_1_check": check.to_dict(),
        })
        out = prof.save(args.outdir / name)
        print(f"{task}: real alpha mean {check.real_mean:.4f} global {check.real_global:.4f}; synthetic "
              f"(lambda 1, 5 seeds) mean {check.synthetic_mean:.4f} global {check.synthetic_global:.4f} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
