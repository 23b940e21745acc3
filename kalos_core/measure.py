"""The measures' registry: one :class:`Measure` declaration per measure package.

A measure (agreement, calibration, convergence, variations, ...) is a package of
``kalos_core`` whose ``MEASURE`` attribute declares it: its name, its config class (whose
fields declare the typed parameters once, :mod:`kalos_core.params`), its steps
(a generator of ``(fraction, message)`` that returns the result; ``Measure.run(data, config,
progress=None) -> Result`` runs them), its result type and the run kind the
FiftyOne plugin stores it under. The command line (:mod:`kalos_core.measure_cli`), the
plugin's operator forms and the panels' Recompute are built from it.

Adding a measure is one package plus one line in :data:`MEASURE_MODULES`.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from .executors import dask_session, resolve_executor
from .params import Config, params_of
from .progress import run_steps

#: measure name -> the module (under kalos_core) whose ``MEASURE`` declares it, in workflow order.
#: Imported on first use: a command never pays for another measure's imports.
MEASURE_MODULES: dict[str, str] = {
    "agreement": "agreement.measure",
    "calibrate": "calibration.measure",
    "braylan": "calibration.braylan_measure",
    "variations": "variations.measure",
    "consensus": "consensus.measure",
    "bae": "bae.measure",
    "attributes": "attributes.measure",
    "masks": "masks.measure",
    "scorecard": "scorecard.measure",
    "next-rater": "next_rater.measure",
    "convergence": "convergence.measure",
    "noise-aware": "noise_aware.measure",
    "simulate": "noise.simulate_measure",
    "fit-noise": "noise.fit_measure",
    "video": "video.measure",
}


@dataclass
class MeasureData:
    """What a measure reads: the raters' labels, and a model's predictions where it takes them.

    ``dataset`` is a :class:`kalos_core.data.MultiRaterDataset`; ``predictions`` a list of
    COCO result dicts (``image_id``, ``category_id``, ``bbox``/``segmentation``, ``score``);
    ``options`` inputs of one measure that are neither labels nor parameters (e.g. the
    FiftyOne plugin's per-label ids).
    """

    dataset: Any
    predictions: list | None = None
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CliOption:
    """A command-line option of one measure that is not a parameter (an input file, an output switch)."""

    flags: tuple[str, ...]
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Measure:
    """The declaration of one measure.

    Parameters
    ----------
    name : the registry key and the command-line sub-command.
    help : one line, for ``--help`` and the docs.
    config : the config dataclass (a :class:`kalos_core.params.Config`); its fields are the parameters.
    steps : ``steps(data: MeasureData, config)``, a generator of ``(fraction, message)`` progress
        steps that returns the result (no threads: the caller drives it).
    result : the result type (``to_dict()`` is its JSON contract).
    method : the run kind the FiftyOne plugin stores the result under.
    tasks : the label files' tasks it reads (``--task``; the first is the default).
    summary : ``summary(result, seconds) -> str``, the command line's text.
    cli_options : options of the command line that are not parameters.
    output : ``output(result, data, args) -> dict | str`` written by ``--output`` (a dict as indented
        JSON, a str as it is); default ``result.to_dict()``.
    read : ``read(args) -> MeasureData`` for a command that declares its own inputs in
        ``cli_options`` (default: ``file``, ``--task``, ``--skip-invalid`` and ``--predictions``).
    from_args : ``from_args(values, args) -> values``: the parameter values as command-line
        options that are not parameters change them (``--no-diagnostics``).
    example : ``example(demo) -> MeasureData``, a small seeded input made from ``demo``, the demo scenes
        (:func:`kalos_core.demo_data.demo_example`), e.g. with the measure's own inputs added; None:
        the demo scenes as they are.
    example_params : parameter values of a run on it whose result depends on the data alone: no
        resampling, so that a permutation of the images changes nothing (the registry-wide tests).
    order_invariant : False where seeded draws pick images by their position in the input: the
        same data in another order draws other pairs (measures that draw from a data set walk
        :func:`kalos_core.data.in_canonical_order` instead). The registry-wide tests then permute
        only the raters' names.
    output_required : ``--output`` must be given (a command whose result is the file it writes).
    result_conventions : False where ``to_dict()`` names no convention of its own (no ``convention``
        key, :func:`kalos_core.conventions.conventions_of`): the command line then builds it only to
        write it (a large result's ``to_dict()`` costs as much as its computation).
    """

    name: str
    help: str
    config: type
    steps: Callable[[MeasureData, Any], Generator[tuple[float, str], None, Any]]
    result: type
    method: str
    conventions: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ("bbox", "segm")
    summary: Callable[[Any, float | None], str] | None = None
    cli_options: tuple[CliOption, ...] = ()
    output: Callable[[Any, MeasureData, Any], dict | str] | None = None
    read: Callable[[Any], MeasureData | None] | None = None
    from_args: Callable[[dict, Any], dict] | None = None
    example: Callable[[MeasureData], MeasureData] | None = None
    example_params: dict = field(default_factory=dict)
    order_invariant: bool = True
    output_required: bool = False
    result_conventions: bool = True

    def run(self, data: MeasureData, config: Config, progress: Callable[[float, str], None] | None = None):
        """The measure on ``data``: ``progress(fraction, message)`` per step (optional); returns the result.
        With ``executor="dask"`` among ``data.options``, every map step of the run shares one cluster
        (:func:`kalos_core.executors.dask_session`)."""
        session = nullcontext()
        if (data.options or {}).get("executor") == "dask":
            workers = data.options.get("workers", 1)
            resolve_executor(workers, "dask")     # a bad worker count fails before a cluster starts
            session = dask_session(workers)
        with session:
            return run_steps(self.steps(data, config), progress)

    @property
    def params(self):
        """The declared parameters (:class:`kalos_core.params.Param`), in order."""
        return params_of(self.config)

    def make_config(self, values: dict | None = None) -> Config:
        """The config from (possibly stored) values: unknown keys ignored, missing ones default."""
        return self.config.from_dict(values)


def get_measure(name: str) -> Measure:
    """The declaration of measure ``name`` (imports its package on first use)."""
    try:
        module = MEASURE_MODULES[name]
    except KeyError:
        raise ValueError(f"unknown measure {name!r}; known: {', '.join(MEASURE_MODULES)}") from None
    return importlib.import_module(f"{__package__}.{module}").MEASURE


def measure_of_method(method: str) -> Measure | None:
    """The measure whose runs are of kind ``method`` (None: none); the measures imported already
    are looked at first, so that a command never imports another measure's package for it."""
    loaded = sorted(MEASURE_MODULES, key=lambda n: f"{__package__}.{MEASURE_MODULES[n]}" not in sys.modules)
    return next((m for m in map(get_measure, loaded) if m.method == method), None)


def measures() -> list[Measure]:
    """Every registered measure, in workflow order."""
    return [get_measure(name) for name in MEASURE_MODULES]
