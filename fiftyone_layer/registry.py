"""The plugin's registry: every measure's FiftyOne side, found from the engine's registry.

A measure of the engine (:data:`kalos_core.measure.MEASURE_MODULES`) has a FiftyOne side when
``fiftyone_layer/measures/<name>.py`` exists (``-`` in the name read as ``_``); its ``RUN``
(:class:`..measure_runs.MeasureRun`) declares how a run is read, computed, written and stored, and
its ``RUN.app`` (:class:`Offered`) how the App offers it: the run kind's name, the operator, the
panels, the result card. Everything else is derived from these declarations, in the engine's
workflow order: the run kinds of the run store (:func:`kinds`), the operators and panels the plugin
registers (:func:`operator_paths`, :func:`panel_paths`) and ``fiftyone.yml`` (:func:`manifest`,
checked by a test).

Adding a measure's FiftyOne side is that one module; the plugin's tools that are no measure
(imports, simulated raters, deleting a run) are listed in :data:`TOOLS_FIRST` / :data:`TOOLS_LAST`.
The measure modules are imported on first use (this module imports none of them), as the engine's.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from dataclasses import dataclass
from functools import cache
from numbers import Integral, Real
from typing import Any, Callable

from kalos_core.measure import MEASURE_MODULES

#: the plugin's name (fiftyone.yml's ``name``): an operator's URI is ``<PLUGIN>/<operator name>``
PLUGIN = "@kalos/agreement"

#: "module:Class" under ``operators/`` of the operators that are no measure's, before and after the measures'
TOOLS_FIRST = ("importing:ImportMultiraterCoco", "rater_import:ImportRaterExports")
TOOLS_LAST = ("simulate:SimulateRaters", "delete:DeleteKalosRun")

#: the operator class that serves every measure that declares none (``operators/measure_operator.py``)
GENERIC_OPERATOR = "measure_operator:MeasureOperator"


@dataclass(frozen=True)
class Offered:
    """How the App offers one measure (``MeasureRun.app``).

    kind_name : the run kind's name in messages and lists ("KaLOS variation types").
    operator : the name of the operator that computes a run ("compute_variations").
    label : its label in the operator browser, also its form's title ("KaLOS: variation types").
    description : its one-line description.
    key_help : the help text under the run key input (what a run writes).
    operator_class : ``"module:Class"`` under ``operators/`` when the form needs more than the generic
        operator's (:data:`GENERIC_OPERATOR`, whose subclass it is); None: the generic operator.
    also : ``"module:Class"`` under ``operators/`` of the operators that act on a stored run of it
        (browse, export, tag, delete), registered after it.
    panels : ``"module:Class"`` under ``panels/`` of the panels that show its runs.
    marker : ``marker(key)``: the sample field that betrays a run under ``key`` (a key whose marker
        exists without the run is refused: it would overwrite the user's data), or None.
    views : ``views(key)``: saved view names such a run may create under ``key`` (so that the
        proposed key's names are free; a run owns only the views it recorded creating).
    card : ``card(result, key) -> (title, rows, next step)``: the result card (rows of ``(label, value)``).
    notice : ``notice(result, key) -> str``: the success notification.
    failure : the title of the card that says a run failed.
    recolours : its runs colour the labels by status: the open App takes the new colour scheme.
    """

    kind_name: str
    operator: str
    label: str
    description: str
    key_help: str = "stored as a custom run"
    operator_class: str | None = None
    also: tuple[str, ...] = ()
    panels: tuple[str, ...] = ()
    marker: Callable[[str], str] | None = None
    views: Callable[[str], list] | None = None
    card: Callable[[Any, str], tuple[str, list, str]] | None = None
    notice: Callable[[Any, str], str] | None = None
    failure: str = "KaLOS: the operation failed"
    recolours: bool = False


def module_of(measure: str) -> str:
    """The module that declares ``measure``'s FiftyOne side (it may not exist)."""
    return f"{__package__}.measures.{measure.replace('-', '_')}"


@cache
def plugin_runs() -> tuple:
    """The ``RUN`` of every measure with a FiftyOne side, in the engine's workflow order."""
    runs = []
    for name in MEASURE_MODULES:
        module = module_of(name)
        if importlib.util.find_spec(module) is not None:
            runs.append(importlib.import_module(module).RUN)
    return tuple(runs)


def run_of(method: str):
    """The ``RUN`` whose run kind is ``method`` (None: no KaLOS run kind)."""
    return next((r for r in plugin_runs() if r.method == method), None)


def get_run(measure: str):
    """The ``RUN`` of ``measure`` (an engine measure name); ValueError when it has no FiftyOne side."""
    found = next((r for r in plugin_runs() if r.measure == measure), None)
    if found is None:
        raise ValueError(f"measure {measure!r} has no FiftyOne side; those that have: "
                         f"{', '.join(r.measure for r in plugin_runs())}")
    return found


def operator_uri(measure: str) -> str:
    """The URI of the operator that computes a run of ``measure``."""
    return f"{PLUGIN}/{get_run(measure).app.operator}"


def kinds() -> dict:
    """``method -> RUN.app`` of every run kind."""
    return {r.method: r.app for r in plugin_runs()}


def operator_paths() -> list[str]:
    """``"module:Class"`` under ``operators/`` of every operator, in the order the plugin registers
    and fiftyone.yml lists them; a measure served by the generic operator is ``"=<measure>"``."""
    paths = list(TOOLS_FIRST)
    for run in plugin_runs():
        paths.append(run.app.operator_class or f"={run.measure}")
        paths.extend(run.app.also)
    return paths + list(TOOLS_LAST)


def panel_paths() -> list[str]:
    """``"module:Class"`` under ``panels/`` of every panel, in the order they are registered."""
    return [p for run in plugin_runs() for p in run.app.panels]


def manifest(operators: list[str], panels: list[str], head: str) -> str:
    """The text of fiftyone.yml: ``head`` (name, version, ...) then the operators' and panels' names."""
    lines = [head.rstrip("\n"), "operators:   # in workflow order (the operator browser lists them so)"]
    lines += [f"  - {n}" for n in operators] + ["panels:"] + [f"  - {n}" for n in panels]
    return "\n".join(lines) + "\n"


# -- the one number format of every result card and notification ----------------------------------

def human(value, digits: int = 3) -> str:
    """A number as a person reads it: ``digits`` decimals below 10 (α 0.512, t 0.965), one
    decimal from 10 (mAP 45.7 %), none from 1000; whole numbers as they are; an em dash when
    missing. Text passes through."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if isinstance(value, Integral):
        return str(int(value))
    v = float(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if v and abs(v) < 10 ** -digits:
        return f"{v:.{digits - 1}g}"
    return f"{v:.{digits}f}"


def interval(ci, digits: int = 3) -> str | None:
    """``"lo – hi"`` of a confidence interval; None when there is none."""
    if not ci or any(v is None for v in ci):
        return None
    return f"{human(ci[0], digits)} – {human(ci[1], digits)}"
