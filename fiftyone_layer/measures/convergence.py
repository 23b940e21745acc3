"""Python entries for label-convergence runs (:mod:`kalos_core.convergence`): compute, load, delete.

What the ``label_convergence`` operator calls, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run
    result = convergence_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="convergence")

The run (``config.method == "kalos_convergence"``) stores ``ConvergenceResult.to_dict()``
(mAP in percent; its ``config`` as ``convergence_config``) and writes ``<run_key>_matched`` on
every rater label: ten booleans, matched at IoU .50, .55, ..., .95 in every rater pair the
label takes part in (a label unmatched in one pair is unmatched). A ``predictions_field`` (a
model's labels with confidence) is placed against the interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import fiftyone as fo

from kalos_core.convergence import ConvergenceResult
from kalos_core.measure import MeasureData
from kalos_core.params import Config, param

from .. import run_store
from ..adapter import SetupError, label_fields, read_dataset
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered, human, interval
from ..predictions import check_predictions_field, read_predictions
from ..writeback import write_label_values

METHOD = "kalos_convergence"
DEFAULT_KEY = "convergence"
#: the tasks each rater label type allows, the default first
TASKS = {"Detections": ("bbox", "segm"), "Polylines": ("segm",)}


def matched_attr(run_key: str) -> str:
    return f"{run_key}_matched"


def owned_paths(source, run_key: str) -> list[str]:
    return [f"{f}.{source.list_name}.{matched_attr(run_key)}" for f in source.fields]


def _check(collection, source, config, extras) -> None:
    tasks = TASKS[source.label_cls.__name__]
    if config.task not in tasks:
        raise SetupError(f"task {config.task!r} does not fit {source.label_cls.__name__} labels; choose "
                         f"{' or '.join(tasks)}", "task")
    if extras.get("predictions_field") is not None:
        check_predictions_field(collection, extras["predictions_field"], config.task, exclude=source.fields)


def _read(collection, source, config, extras) -> MeasureData:
    use_masks = config.task == "segm" and source.label_cls is fo.Detections
    data = read_dataset(collection, source, use_masks=use_masks)
    if config.task == "segm" and not data.meta.get("pixel_geometry"):
        raise SetupError("segm needs image sizes: run dataset.compute_metadata()", "task")
    field = extras.get("predictions_field")
    predictions, unknown = read_predictions(collection, field, data, config.task) if field else (None, 0)
    return MeasureData(data, predictions, {"unknown_prediction_classes": unknown})


def matched_by_label(result: ConvergenceResult) -> dict:
    """label id -> [bool × 10]: matched at each threshold in every pair the label belongs to."""
    out: dict = {}
    for pair in result.pairs:
        for lid, flags in pair.matched.items():
            prev = out.get(str(lid))
            out[str(lid)] = [bool(v) for v in flags] if prev is None else [a and bool(b) for a, b in zip(prev, flags)]
    return out


def _write(collection, source, run_key: str, result: ConvergenceResult, data: MeasureData) -> None:
    write_label_values(collection, source.fields, source.list_name, {matched_attr(run_key): matched_by_label(result)},
                       {matched_attr(run_key): fo.ListField(fo.BooleanField())})


@dataclass(frozen=True)
class Inputs(Config):
    """The plugin-only input of a label convergence run."""

    predictions_field: str | None = param(
        None, "str", "a model's labels with confidence: its mAP against each rater, placed against the interval",
        optional=True, label="Predictions field (optional)", flag="")


def _card(res: ConvergenceResult, key: str) -> tuple:
    d = res.to_dict()
    model = d["model"]
    return "KaLOS: label convergence", [
        ("mAP@[.5:.95] between raters (%)", d["full_set"]["map"]), ("AP50 (%)", d["full_set"]["ap50"]),
        ("AP75 (%)", d["full_set"]["ap75"]), ("Convergence interval (mean ± 1.96 SD of the subsets)", _ci(d)),
        ("Model mAP (%)", f"{human(model['map'])}: {model['placement']['ci_normal']} the interval" if model
         else "none (no predictions field chosen)")], "Open the panel 'KaLOS: Label convergence'."


def _ci(d: dict) -> str:
    return interval((d["bootstrap"] or {}).get("ci_normal")) or "none (bootstrap off)"


def _notice(res: ConvergenceResult, key: str) -> str:
    d = res.to_dict()
    return f"KaLOS label convergence {key!r}: mAP between raters {human(d['full_set']['map'])} (interval {_ci(d)})"


RUN = MeasureRun("convergence", "label convergence runs", DEFAULT_KEY, ("box", "polygon"), owned_paths,
                 write=_write, read=_read, check=_check, inputs=Inputs,
                 config_key="convergence_config", hidden=("raters",),
                 results=lambda result, data, config: {
                     "unknown_prediction_classes": data.options["unknown_prediction_classes"]},
                 error_param=lambda source: "rater_fields" if source.rater_attribute is None else "label_field",
                 app=Offered(
                     "KaLOS label convergence", "label_convergence", "KaLOS: label convergence",
                     "Modified mAP between raters (an upper bound for model mAP), its bootstrap interval, and a "
                     "model's mAP placed against it", operator_class="convergence:LabelConvergence",
                     key_help="stored as a custom run; <run_key>_matched goes on every rater label",
                     panels=("convergence:LabelConvergencePanel",), card=_card, notice=_notice))


def with_task(collection, params: dict) -> dict:
    """``params`` with ``task`` filled in where it is left out: the first the rater labels allow
    (:data:`TASKS`: boxes bbox, polylines segm)."""
    if params.get("task") is not None:
        return params
    field = (params.get("rater_fields") or [params.get("label_field")])[0]
    cls = label_fields(collection).get(field)
    return {**params, "task": TASKS.get(getattr(cls, "__name__", ""), ("bbox",))[0]}


def convergence_steps(collection, **params):
    """:func:`convergence_run` as a generator of ``(fraction, message)`` steps; returns the result.
    Nothing is written before the last step."""
    return measure_steps(RUN, collection, **with_task(collection, params))


def convergence_run(collection, progress=None, **params) -> ConvergenceResult:
    """Label convergence on ``collection`` stored under ``run_key``: the rater source
    (``rater_fields`` or ``label_field`` + ``rater_attribute``), ``run_key``, ``overwrite``,
    ``predictions_field`` (optional) and the parameters of
    :class:`kalos_core.convergence.ConvergenceConfig` (``task`` left out: the labels' first of
    :data:`TASKS`); ``progress(fraction, message)`` optional."""
    return measure_run(RUN, collection, progress, **with_task(collection, params))


def load_convergence(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored result (``ConvergenceResult.to_dict()``), as a plain dict."""
    return run_store.load_results(dataset, run_key, METHOD)
