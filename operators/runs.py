"""Python entries for agreement runs: compute, load, delete, browse.

These are what the operators call, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.operators.runs import compute_agreement_run
    result = compute_agreement_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="kalos")
"""

from __future__ import annotations

import time

from fiftyone import ViewField as F

from kalos_core.agreement import DIAGNOSTICS, AgreementConfig, AgreementResult  # noqa: F401  (re-exported)
from kalos_core.agreement.falls_apart import falls_apart
from kalos_core.geometry import distances_for
from kalos_core.measure import MeasureData, get_measure
from kalos_core.progress import rescale, run_steps

from ..fiftyone_layer import run_store, status_colors
from ..fiftyone_layer.adapter import RaterSource, SetupError, check_label_attributes, owned_fields, read_dataset, resolve_source
from ..fiftyone_layer.values import make_config
from ..fiftyone_layer.measure_runs import checked_names
from .model_inputs import add_models, check_model_fields, write_source
from .model_inputs import run_config as model_run_config
from ..fiftyone_layer.status_colors import DISAGREEMENT, STATUSES, disagreement_view_name, status_view_names  # noqa: F401
from ..fiftyone_layer.writeback import write_results

METHOD = run_store.AGREEMENT


def agreement_runs(dataset) -> list[str]:
    """Run keys of the KaLOS agreement runs stored on the dataset, oldest first."""
    return run_store.runs_of(dataset, METHOD)


AGREEMENT = get_measure("agreement")


def compute_agreement_run(collection, progress=None, **params) -> AgreementResult:
    """Compute agreement on ``collection`` and store it under ``run_key``.

    Writes ``<run_key>_alpha`` on every processed sample, ``<run_key>_unit`` and
    ``<run_key>_status`` on every rater label, and a custom run ``run_key``
    holding the config, the summary and all diagnostics. An existing run
    ``run_key`` is replaced (exactly its fields) only with ``overwrite=True``.
    Every check happens before anything is written (:class:`SetupError`).

    ``params``: the rater source (``rater_fields`` or ``label_field`` + ``rater_attribute``),
    ``run_key`` (default ``"kalos"``), ``overwrite``, every parameter of
    :class:`kalos_core.agreement.AgreementConfig` (``diagnostics=[...]`` names the diagnostics
    switched on; ``distance="mask_iou"`` compares Detections' instance masks), ``model_fields``:
    prediction fields (the raters' label type) that join as one more rater each, flagged as a
    model, keeping the labels with ``confidence >= score_threshold`` (:mod:`.model_inputs`), and
    ``calibration_key``: the calibration run whose threshold is used. ``progress``: optional
    ``callable(fraction, message)``.
    """
    return run_steps(compute_agreement_steps(collection, **params), progress)


def check_run(collection, rater_fields=None, label_field=None, rater_attribute="rater_id", run_key="kalos",
              overwrite=False, **values):
    """Every check a run needs before it writes anything; returns ``(source, config, use_masks)``.

    Raises :class:`SetupError` naming the parameter at fault."""
    source = resolve_source(collection, rater_fields, label_field, rater_attribute)
    run_store.validate_key(collection, run_key, METHOD, overwrite=overwrite)
    check_label_attributes(collection, source, run_key)
    if len(collection) == 0:
        raise SetupError("the view has no samples: nothing to compute (no run was written)", "run_key")
    values = checked_names(AGREEMENT, values, "agreement")
    if values.get("distance") == "":
        values["distance"] = None
    use_masks = values.get("distance") == "mask_iou" and source.kind == "box"
    if use_masks:  # Detections with instance masks: compare the masks
        values["distance"] = "iou"
    config = make_config(AGREEMENT, values)
    if config.distance is not None and config.distance not in distances_for(source.kind):
        raise SetupError(f"{config.distance!r} is not a {source.kind} distance; choose among "
                         f"{list(distances_for(source.kind))}", "distance")
    return source, config, use_masks


def compute_agreement_steps(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                            run_key="kalos", overwrite=False, calibration_key=None, model_fields=None,
                            score_threshold=0.5, **values):
    """:func:`compute_agreement_run` as a generator of ``(fraction, message)`` steps; returns the result.

    Nothing is written before the last step: a failing check, read or computation leaves the
    dataset as it was."""
    timings = {}
    t0 = time.perf_counter()
    source, config, use_masks = check_run(collection, rater_fields, label_field, rater_attribute, run_key,
                                          overwrite, **values)
    models = check_model_fields(collection, source, model_fields, score_threshold)
    check_label_attributes(collection, write_source(source, models), run_key)
    yield 0.0, "reading labels"
    data = add_models(collection, source, read_dataset(collection, source, use_masks=use_masks),
                      models, score_threshold)
    timings["read_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    result = yield from rescale(AGREEMENT.steps(MeasureData(data), config), 0.05, 0.9)
    timings["compute_s"] = time.perf_counter() - t1
    more = {}
    if config.lsa_thresholds:
        yield 0.9, "units that fall apart at each sensitivity threshold"
        t3 = time.perf_counter()
        more["lsa_falls_apart"] = falls_apart(data, config)
        timings["lsa_falls_apart_s"] = time.perf_counter() - t3
    yield 0.92, "writing the results"
    t2 = time.perf_counter()
    store_run(collection, source, run_key, config, result, calibration_key, use_masks=use_masks,
              model_fields=models, score_threshold=score_threshold, more=more)
    timings["write_s"] = time.perf_counter() - t2
    result.timings = timings
    yield 1.0, "done"
    return result


def store_run(collection, source: RaterSource, run_key: str, config: AgreementConfig,
              result: AgreementResult, calibration_key=None, use_masks: bool = False,
              model_fields=(), score_threshold=0.5, more: dict | None = None) -> None:
    """Write the run's fields and store it; ``more``: results kept beside ``result.to_dict()`` (the
    ``lsa_falls_apart`` drill-down of :func:`kalos_core.agreement.falls_apart.falls_apart`)."""
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        run_store.delete_run(dataset, run_key)
    written = write_source(source, model_fields)
    paths = owned_fields(written, run_key)
    write_results(collection, written, run_key, result)
    status_colors.show_statuses(dataset, run_key, written.fields)
    summary = result.to_dict()
    summary["agreement_config"] = summary.pop("config")  # "config" is the run's own attribute
    summary.update(more or {})
    run_store.save_run(
        collection, run_key, METHOD, summary, fields=paths,
        **source.run_config(), calibration_key=calibration_key, use_masks=bool(use_masks),
        **model_run_config(model_fields, score_threshold),
        **config.to_dict(),
    )


def delete_agreement_run(dataset, run_key: str) -> list[str]:
    """Remove a run, exactly the fields it wrote and its saved view; returns those field paths."""
    return run_store.delete_run(dataset, run_key, METHOD)


def get_agreement_run(dataset, run_key):
    """The run info of the KaLOS agreement run ``run_key``; :class:`SetupError` when there is none."""
    return run_store.get_run(dataset, run_key, METHOD)


def disagreement_view(dataset, run_key: str, statuses=DISAGREEMENT):
    """The samples holding a rater label of the run with one of ``statuses`` (default: the
    disagreements, ``class_disagreement`` and ``unmatched``), sorted by α ascending, showing only
    the run's fields and, in every rater field at once, only the labels with those statuses."""
    statuses = list(statuses or ())
    unknown = [s for s in statuses if s not in STATUSES]
    if not statuses or unknown:
        raise SetupError(f"choose statuses among {list(STATUSES)}, got {statuses!r}", "statuses")
    cfg = get_agreement_run(dataset, run_key).config
    fields = cfg.rater_fields or [cfg.label_field]
    list_name = {"Detections": "detections", "Polylines": "polylines", "Keypoints": "keypoints"}.get(
        getattr(cfg, "label_type", None)) or dataset.get_field(fields[0]).document_type.__name__.lower()
    keep = F(f"{run_key}_status").is_in(statuses)
    has = None
    for f in fields:
        cond = F(f"{f}.{list_name}").filter(keep).length() > 0
        has = cond if has is None else has | cond
    extra = [p for p in (f"{run_key}_alpha", f"{run_key}_statuses") if dataset.has_sample_field(p)]
    view = dataset.exists(f"{run_key}_alpha").match(has).select_fields(extra + fields).sort_by(f"{run_key}_alpha")
    for f in fields:
        view = view.filter_labels(f, keep, only_matches=False)
    return view


def unused_run_key(dataset, base: str = "kalos") -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first key no run, ``<key>_alpha`` field or
    ``<key>_disagreements`` view uses (what the forms propose, so nothing is replaced by default)."""
    return run_store.unused_key(dataset, base, METHOD)


describe_run = run_store.describe_run
