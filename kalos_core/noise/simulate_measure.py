"""The noise generator as a measure: synthetic raters from a clean reference, declared once
(:mod:`kalos_core.measure`).

``python -m kalos_core simulate REFERENCE.json --raters 5 --magnitude 1.0 --seed 0 [--profile P]
--output OUT.json`` writes the multi-rater COCO dict of :class:`kalos_core.noise.Simulation`
(compact JSON), which ``load_coco`` and every measure read. The operator
``@kalos/agreement/simulate_raters`` (``operators/simulate.py``) takes the same parameters
(:class:`SimulateConfig`) and reads its reference from a label field instead of a file.

What the steps read (:class:`kalos_core.measure.MeasureData`): ``dataset`` is the clean
:class:`kalos_core.noise.Reference` (not a multi-rater data set); ``options["similarity"]`` an
optional ``{class name: {class name: similarity}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ..measure import CliOption, Measure, MeasureData
from ..params import Config, ParamError, param
from .generator import Simulation, reference_from_coco, reference_from_dataset, simulate
from .profile import load_profile
from .schools import rater_specs

#: the tasks a reference is read as (the first is the default)
TASKS = ("bbox", "segm", "keypoints")
#: the most synthetic raters one simulation draws (the operator writes a label field per rater)
MAX_RATERS = 100


@dataclass(frozen=True)
class SimulateConfig(Config):
    """Settings of a simulation: how many raters, how noisy, which noise profile."""

    n_raters: int = param(5, "int", "number of synthetic raters", lo=1, hi=MAX_RATERS, flag="--raters",
                          label="Number of synthetic raters")
    magnitude: float = param(1.0, "float", "noise magnitude λ >= 0: 0 = exact copies of the reference, "
                             "1 = the fitted (empirical) noise level", lo=0.0, label="Noise magnitude λ")
    seed: int = param(0, "int", "same seed, same synthetic raters", lo=0)
    profile: str | None = param(None, "str", "noise profile json from `python -m kalos_core fit-noise` "
                                "(default: the shipped profile fitted on LVIS, per task)", optional=True,
                                label="Noise profile json (optional)")
    schools: tuple[int, ...] = param((), "ints", "school sizes, e.g. 3,3: raters in schools of thought "
                                     "(default none; given, they override the number of raters)", lo=1, hi=MAX_RATERS,
                                     advanced=True)
    defiant: bool = param(False, "bool", "add one defiant rater (a convention of its own, twice as noisy)",
                          advanced=True)

    def check(self) -> None:
        total = (sum(self.schools) if self.schools else self.n_raters) + self.defiant
        if total > MAX_RATERS:
            raise ParamError("schools" if self.schools else "n_raters",
                             f"at most {MAX_RATERS} synthetic raters (one label field each in FiftyOne), got {total}")

    def raters(self) -> list:
        """The synthetic raters (:class:`kalos_core.noise.RaterSpec`) these settings draw."""
        return rater_specs(self.n_raters, self.schools, self.defiant)


def steps(data: MeasureData, config: SimulateConfig):
    """Synthetic raters for the reference ``data.dataset`` as progress steps; returns the
    :class:`kalos_core.noise.Simulation`."""
    reference = data.dataset
    yield 0.0, "loading the noise profile"
    profile = load_profile(config.profile, task=reference.task)
    raters = config.raters()
    yield 0.1, f"drawing {len(raters)} synthetic raters on {len(reference.images)} images"
    sim = simulate(reference, n_raters=config.n_raters, magnitude=config.magnitude, seed=config.seed,
                   profile=profile, raters=raters, similarity=data.options.get("similarity"))
    yield 1.0, f"{len(sim.coco['annotations'])} synthetic labels"
    return sim


def read(args: argparse.Namespace) -> MeasureData | None:
    """The reference file (``--task``, ``--reference-rater``) and ``--similarity``; None after
    one ``error:`` line when they cannot be read."""
    try:
        reference = reference_from_coco(args.reference, args.task, rater=args.reference_rater)
        similarity = json.loads(Path(args.similarity).read_text()) if args.similarity else None
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    return MeasureData(reference, options={"similarity": similarity})


def example(demo: MeasureData) -> MeasureData:
    """The demo scenes' careful rater as a clean reference (the registry-wide tests)."""
    return MeasureData(reference_from_dataset(demo.dataset, rater="careful"))


def summary(result: Simulation, seconds: float | None = None) -> str:
    """Raters x images, labels drawn, the reference's size, λ and seed; the cannibalisation ratio."""
    info = result.coco["info"]["kalos_simulation"]
    return (f"{len(result.raters)} synthetic raters x {len(result.coco['images'])} images: "
            f"{len(result.coco['annotations'])} annotations (reference {result.n_reference}; "
            f"magnitude {info['magnitude']}, seed {info['seed']})\n"
            f"cannibalisation ratio {result.stats.ratio:.4f}")


def output(result: Simulation, data: MeasureData, args: argparse.Namespace) -> str:
    """The multi-rater COCO file: compact JSON, one line."""
    return json.dumps(result.coco, separators=(",", ":")) + "\n"


MEASURE = Measure(
    name="simulate", help="synthetic raters from a clean COCO reference (noise generator)",
    config=SimulateConfig, steps=steps, result=Simulation, method="kalos_simulation", conventions=("fraction",), tasks=TASKS,
    summary=summary, output=output, read=read, output_required=True,
    cli_options=(
        CliOption(("reference",), dict(type=Path, help="any COCO json; rater keys are ignored")),
        CliOption(("--task",), dict(choices=list(TASKS), default=TASKS[0])),
        CliOption(("--reference-rater",), dict(
            default=None, help="use only this rater's annotations as the reference (default: all annotations)")),
        CliOption(("--similarity",), dict(type=Path, help="class similarity json {name: {name: sim}}")),
    ),
    example=example, order_invariant=False)
