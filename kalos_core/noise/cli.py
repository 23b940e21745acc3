"""Command-line handlers for ``simulate`` and ``fit-noise`` (registered in :mod:`kalos_core.cli`).

``python -m kalos_core simulate REFERENCE.json --raters 5 --magnitude 1.0 --seed 0 [--profile P] --output OUT.json``
``python -m kalos_core fit-noise MULTIRATER.json --output PROFILE.json``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli_common import count, fraction, non_negative, positive

NOISE_COMMANDS = ("simulate", "fit-noise")


def _sizes(text: str) -> tuple[int, ...]:
    """argparse type: school sizes, e.g. ``3,3`` (each >= 1)."""
    return tuple(positive(v.strip()) for v in text.split(",") if v.strip())


def add_noise_parsers(sub) -> None:
    """Add the ``simulate`` and ``fit-noise`` subcommands to an argparse subparsers object."""
    s = sub.add_parser("simulate", help="synthetic raters from a clean COCO reference (noise generator)")
    s.add_argument("reference", type=Path, help="any COCO json; rater keys are ignored")
    s.add_argument("--raters", type=positive, default=5, help="number of synthetic raters (default 5)")
    s.add_argument("--magnitude", type=non_negative, default=1.0, help="noise magnitude lambda >= 0 (0 = exact copies)")
    s.add_argument("--seed", type=count, default=0)
    s.add_argument("--profile", type=Path, help="noise profile json (default: the shipped profile fitted on LVIS, per task)")
    s.add_argument("--reference-rater", default=None,
                   help="use only this rater's annotations as the reference (default: all annotations)")
    s.add_argument("--task", choices=["bbox", "segm", "keypoints"], default="bbox")
    s.add_argument("--schools", type=_sizes, default=(), help="school sizes, e.g. 3,3 (overrides --raters)")
    s.add_argument("--defiant", action="store_true", help="add one defiant rater")
    s.add_argument("--similarity", type=Path, help="class similarity json {name: {name: sim}}")
    s.add_argument("--output", type=Path, required=True)
    f = sub.add_parser("fit-noise", help="fit a noise profile to a multi-rater COCO file")
    f.add_argument("file", type=Path)
    f.add_argument("--task", choices=["bbox", "segm", "keypoints"], default="bbox")
    f.add_argument("--threshold", type=fraction, default=0.5)
    f.add_argument("--reference-rater", default=None, help="a gold-standard rater (default: symmetric pairs)")
    f.add_argument("--seed", type=count, default=0)
    f.add_argument("--output", type=Path, required=True)


def _read_json(path: Path | None):
    if path is None:
        return None
    return json.loads(Path(path).read_text())


def run_simulate(args: argparse.Namespace) -> int:
    from .generator import reference_from_coco, simulate
    from .profile import load_profile
    from .schools import plain_raters, school_raters

    try:
        if args.raters < 1:
            raise ValueError("--raters must be at least 1")
        profile = load_profile(args.profile, task=args.task)
        reference = reference_from_coco(args.reference, args.task, rater=args.reference_rater)
        sizes = list(args.schools)
        raters = school_raters(sizes, defiant=args.defiant) if sizes else None
        if raters is None and args.defiant:
            raters = plain_raters(args.raters) + school_raters([1], defiant=True)[1:]
        sim = simulate(reference, n_raters=args.raters, magnitude=args.magnitude, seed=args.seed,
                       profile=profile, raters=raters, similarity=_read_json(args.similarity))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(sim.coco, separators=(",", ":")) + "\n")
    n = len(sim.coco["annotations"])
    print(f"{len(sim.raters)} synthetic raters x {len(reference.images)} images: {n} annotations "
          f"(reference {reference.n_objects}; magnitude {args.magnitude}, seed {args.seed})")
    print(f"cannibalisation ratio {sim.stats.ratio:.4f}   wrote {args.output}")
    return 0


def run_fit_noise(args: argparse.Namespace) -> int:
    from ..measure_cli import load_or_report
    from .fit import fit_noise

    ds = load_or_report(args.file, args.task)
    if ds is None:
        return 2
    fit = fit_noise(ds, threshold=args.threshold, reference_rater=args.reference_rater, seed=args.seed,
                    source=f"fit-noise {args.file.name}")
    fit.profile.save(args.output)
    print(format_fit_report(fit.report))
    print(f"\nwrote {args.output}")
    return 0


def format_fit_report(rep: dict) -> str:
    """A short plain-text goodness-of-fit summary (KS, AIC) of a fit report."""
    lines = [f"matched pairs {rep.get('n_matched')}   near misses {rep.get('n_near_miss')}"]
    for key in ("localisation", "class_localisation"):
        part = rep.get(key, {})
        if part.get("source") != "fitted":
            lines.append(f"{key}: {part.get('source')}")
            continue
        for comp in ("translation", "log_width", "log_height"):
            r = part[comp]
            lines.append(f"{key}.{comp}: t(df={r['df']:.2f}) KS {r['ks']:.3f} (normal {r['ks_normal']:.3f}), "
                         f"AIC {r['aic']:.0f} (normal {r['aic_normal']:.0f})")
        d = part.get("direction") or {}
        if d:
            lines.append(f"{key}.direction: {d['chosen']}  AIC cardinal {d['aic_cardinal']:.0f}, "
                         f"axial {d['aic_axial']:.0f}, uniform {d['aic_uniform']:.0f}")
    for key in ("unmatched_count", "unmatched_select", "topology_parent"):
        if key in rep:
            r = rep[key]
            lines.append(f"{key}: a {r['a']:.3f} b {r['b']:.4f}  AIC {r['aic']:.0f} "
                         f"(intercept only {r['aic_intercept_only']:.0f})")
    if "topology_angle" in rep:
        r = rep["topology_angle"]
        lines.append(f"topology_angle: Beta({r['alpha']:.2f}, {r['beta']:.2f}) KS {r['ks']:.3f}")
    c = rep.get("classes", {})
    lines.append(f"class mistakes: {c.get('n_class_mistakes')} of {c.get('n_matched')} matched "
                 f"(rate {c.get('rate', 0):.4f})")
    return "\n".join(lines)


def run_noise_command(args: argparse.Namespace) -> int:
    return run_simulate(args) if args.command == "simulate" else run_fit_noise(args)
