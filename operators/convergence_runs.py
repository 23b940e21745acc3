"""Python entries for label-convergence runs: compute, load, delete, and the views panels show.

What the ``label_convergence`` operator calls, and what a notebook calls directly::

    from operators.convergence_runs import convergence_run
    result = convergence_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="convergence")

The run (``config.method == "kalos_convergence"``) stores ``ConvergenceResult.to_dict()``
(mAP in percent; its ``config`` as ``convergence_config``) and writes ``<run_key>_matched`` on
every rater label: ten booleans, matched at IoU .50, .55, ..., .95 in every rater pair the
label takes part in (a label unmatched in one pair is unmatched).
"""

from __future__ import annotations

import math

import fiftyone as fo

from kalos_core.convergence import ConvergenceConfig, ConvergenceResult, compute_convergence
from kalos_core.progress import rescale, run_steps, steps_of

from . import run_store
from .adapter import SetupError, read_dataset, resolve_source
from .predictions import read_predictions
from .writeback import write_label_values

METHOD = "kalos_convergence"
DEFAULT_KEY = "convergence"
TASKS = {"Detections": ("bbox", "segm"), "Polylines": ("segm",)}


def matched_attr(run_key: str) -> str:
    return f"{run_key}_matched"


def check_convergence(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                      run_key=DEFAULT_KEY, task=None, predictions_field=None, bootstrap=1000, fraction=0.1,
                      seed=0, alpha=None, overwrite=False):
    """Every check before anything is read or written; returns ``(source, task, config)``."""
    source = resolve_source(collection, rater_fields, label_field, rater_attribute)
    run_store.validate_key(collection, run_key, METHOD, overwrite=overwrite)
    tasks = TASKS.get(source.label_cls.__name__)
    if not tasks:
        raise SetupError(f"label convergence needs boxes or polygons, not {source.label_cls.__name__}",
                         "rater_fields" if source.rater_attribute is None else "label_field")
    task = task or tasks[0]
    if task not in tasks:
        raise SetupError(f"task {task!r} does not fit {source.label_cls.__name__} labels; choose {' or '.join(tasks)}",
                         "task")
    run_store.check_free_paths(collection, run_key, owned_paths(source, run_key), "run_key")
    if len(collection) == 0:
        raise SetupError("the view has no samples: nothing to compute (no run was written)", "run_key")
    if predictions_field and predictions_field in source.fields:
        raise SetupError("the predictions field is one of the rater fields", "predictions_field")
    for name, value, ok in (("bootstrap", bootstrap, lambda v: v >= 0 and v == int(v)),
                            ("fraction", fraction, lambda v: 0 < v <= 1), ("seed", seed, lambda v: v >= 0)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or not ok(value):
            raise SetupError(f"{name} has a bad value {value!r}", name)
    config = ConvergenceConfig(task=task, bootstrap=int(bootstrap), fraction=float(fraction), seed=int(seed),
                               alpha=alpha)
    return source, task, config


def owned_paths(source, run_key: str) -> list[str]:
    return [f"{f}.{source.list_name}.{matched_attr(run_key)}" for f in source.fields]


def convergence_steps(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                      run_key=DEFAULT_KEY, task=None, predictions_field=None, bootstrap=1000, fraction=0.1,
                      seed=0, alpha=None, overwrite=False):
    """:func:`convergence_run` as a generator of ``(fraction, message)`` steps; returns the result.
    Nothing is written before the last step."""
    source, task, config = check_convergence(collection, rater_fields, label_field, rater_attribute, run_key, task,
                                             predictions_field, bootstrap, fraction, seed, alpha, overwrite)
    yield 0.0, "reading labels"
    use_masks = task == "segm" and source.label_cls is fo.Detections
    data = read_dataset(collection, source, use_masks=use_masks)
    if task == "segm" and not data.meta.get("pixel_geometry"):
        raise SetupError("segm needs image sizes: run dataset.compute_metadata()", "task")
    predictions, unknown = (read_predictions(collection, predictions_field, data, task)
                            if predictions_field else (None, 0))
    try:
        result: ConvergenceResult = yield from rescale(
            steps_of(lambda progress: compute_convergence(data, config, predictions, progress)), 0.05, 0.9)
    except ValueError as e:
        raise SetupError(str(e), "rater_fields" if source.rater_attribute is None else "label_field") from None
    yield 0.92, "writing the results"
    store_convergence(collection, source, run_key, result, predictions_field, unknown)
    yield 1.0, "done"
    return result


def convergence_run(collection, progress=None, **params) -> ConvergenceResult:
    """Label convergence on ``collection`` stored under ``run_key`` (see :func:`check_convergence`
    for the parameters); ``progress(fraction, message)`` optional."""
    return run_steps(convergence_steps(collection, **params), progress)


def matched_by_label(result: ConvergenceResult) -> dict:
    """label id -> [bool × 10]: matched at each threshold in every pair the label belongs to."""
    out: dict = {}
    for pair in result.pairs:
        for lid, flags in pair.matched.items():
            prev = out.get(str(lid))
            out[str(lid)] = [bool(v) for v in flags] if prev is None else [a and bool(b) for a, b in zip(prev, flags)]
    return out


def store_convergence(collection, source, run_key, result: ConvergenceResult, predictions_field=None,
                      unknown_classes: int = 0) -> None:
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        run_store.delete_run(dataset, run_key)
    write_label_values(collection, source.fields, source.list_name, {matched_attr(run_key): matched_by_label(result)},
                       {matched_attr(run_key): fo.ListField(fo.BooleanField())})
    summary = result.to_dict()
    summary["convergence_config"] = summary.pop("config")
    summary["unknown_prediction_classes"] = unknown_classes
    cfg = result.config
    run_store.save_run(
        collection, run_key, METHOD, summary, fields=owned_paths(source, run_key),
        **source.run_config(),
        list_name=source.list_name, task=cfg.task, bootstrap=cfg.bootstrap, fraction=cfg.fraction, seed=cfg.seed,
        alpha=cfg.alpha, predictions_field=predictions_field)


def load_convergence(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored result (``ConvergenceResult.to_dict()``), as a plain dict."""
    return run_store.load_results(dataset, run_key, METHOD)


def delete_convergence_run(dataset, run_key: str) -> list[str]:
    """Remove the run and the ``<run_key>_matched`` attributes it wrote; returns their paths."""
    return run_store.delete_run(dataset, run_key, METHOD)
