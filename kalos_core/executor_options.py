"""``--workers`` / ``--executor``: the command line of every measure that maps chunks (of images:
agreement, consensus, variations; of rater-pair directions, bootstrap subsets and images: convergence;
of images and distances: calibrate; of pairs of annotation sets: braylan), declared once (:mod:`kalos_core.executors` runs them).

A module of its own: the engines import the executors, only the measures' declarations these options.
"""

from __future__ import annotations

from .cli_common import count
from .executors import EXECUTORS, resolve_executor
from .measure import CliOption

#: the command line's ``--workers`` / ``--executor`` of every measure that maps chunks
#: (:attr:`kalos_core.measure.Measure.cli_options`; their values reach the steps as ``MeasureData.options``)
EXECUTOR_OPTIONS = (
    CliOption(("--workers",), {"type": count, "default": 1,
                               "help": "processes (0 = all cores); results do not depend on it"}),
    CliOption(("--executor",), {
        "choices": sorted(EXECUTORS), "default": None,
        "help": "where the chunks (of images, subsets, rater pairs) run: local (this process; default for "
                "1 worker), processes (default for more), dask (pip install .[dask]; a LocalCluster of --workers "
                "processes)"}),
)


def executor_args(options: dict) -> dict:
    """The ``workers`` / ``executor`` keywords of a measure's steps from its ``MeasureData.options``
    (absent: one worker, the default executor), checked here: an unknown executor or a bad worker
    count fails when the measure's steps are made, before any work (:func:`kalos_core.executors.resolve_executor`)."""
    args = {"workers": options.get("workers", 1), "executor": options.get("executor")}
    resolve_executor(**args)
    return args
