"""``--workers`` / ``--executor``: the command line of every measure that maps chunks (of images:
agreement, consensus, variations; of bootstrap subsets: convergence), declared once (:mod:`kalos_core.agreement.executors` runs them).

A module of its own: the engines import the executors, only the measures' declarations these options.
"""

from __future__ import annotations

from ..cli_common import count
from ..measure import CliOption
from .executors import EXECUTORS

#: the command line's ``--workers`` / ``--executor`` of every measure that maps chunks of images
#: (:attr:`kalos_core.measure.Measure.cli_options`; their values reach the steps as ``MeasureData.options``)
EXECUTOR_OPTIONS = (
    CliOption(("--workers",), {"type": count, "default": 1,
                               "help": "processes (0 = all cores); results do not depend on it"}),
    CliOption(("--executor",), {
        "choices": sorted(EXECUTORS), "default": None,
        "help": "where the chunks of images run: local (this process; default for 1 worker), processes "
                "(default for more), dask (pip install .[dask]; a LocalCluster of --workers processes)"}),
)


def executor_args(options: dict) -> dict:
    """The ``workers`` / ``executor`` keywords of a measure's steps from its ``MeasureData.options``
    (absent: one worker, the default executor)."""
    return {"workers": options.get("workers", 1), "executor": options.get("executor")}
