"""Fitting a noise profile to multi-rater data, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core fit-noise MULTIRATER.json [--task bbox] --output PROFILE.json`` writes
the :class:`kalos_core.noise.NoiseProfile` fitted by
:func:`kalos_core.noise.fit.fit_noise_profile` (``meta.source`` = ``fit-noise FILE``), which
``simulate --profile`` and the operator ``simulate_raters`` read. The goodness of fit (KS,
AIC) is printed and kept in the profile's ``fit_report``.

What the steps read (:class:`kalos_core.measure.MeasureData`): ``dataset`` the multi-rater
data set; ``options["source"]`` where it came from, for the profile's ``meta``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..measure_cli import load_or_report
from ..measure import CliOption, Measure, MeasureData
from ..params import Config, param
from .fit import FitResult, fit_noise_profile

#: the label files' tasks it reads (polygons and keypoints through their boxes)
TASKS = ("bbox", "segm", "keypoints")


@dataclass(frozen=True)
class FitNoiseConfig(Config):
    """Settings of a noise-profile fit."""

    threshold: float = param(0.5, "fraction", "IoU at which two raters' labels are matched")
    reference_rater: str | None = param(None, "str", "a gold-standard rater (default: symmetric pairs)",
                                        optional=True)
    seed: int = param(0, "int", "seed of the estimators' subsampling", lo=0)


def steps(data: MeasureData, config: FitNoiseConfig):
    """The fit as progress steps; returns the :class:`kalos_core.noise.fit.FitResult`."""
    yield 0.0, f"fitting a noise profile to {len(data.dataset.images)} images"
    fit = fit_noise_profile(data.dataset, threshold=config.threshold, reference_rater=config.reference_rater,
                            seed=config.seed, source=data.options.get("source", ""))
    yield 1.0, f"{fit.report.get('n_matched')} matched pairs"
    return fit


def read(args: argparse.Namespace) -> MeasureData | None:
    """The multi-rater file (``--task``), named in the profile's source; None when unreadable."""
    dataset = load_or_report(args.file, args.task)
    return None if dataset is None else MeasureData(dataset, options={"source": f"fit-noise {args.file.name}"})


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
            if r.get("no_spread"):
                lines.append(f"{key}.{comp}: every value {r['a']:.3g}, no spread (no noise: scale 0)")
                continue
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


MEASURE = Measure(
    name="fit-noise", help="fit a noise profile to a multi-rater COCO file",
    config=FitNoiseConfig, steps=steps, result=FitResult, method="kalos_noise_profile", conventions=("fraction",), tasks=TASKS,
    summary=lambda result, seconds=None: format_fit_report(result.report),
    output=lambda result, data, args: result.profile.to_json(), read=read, output_required=True,
    cli_options=(CliOption(("file",), dict(type=Path)),
                 CliOption(("--task",), dict(choices=list(TASKS), default=TASKS[0]))),
    order_invariant=False)
