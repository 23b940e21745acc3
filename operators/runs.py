"""Python entries for agreement runs: compute, load, delete, browse.

These are what the operators call, and what a notebook calls directly::

    from operators.runs import compute_agreement_run   # or via the plugin's operators
    result = compute_agreement_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="kalos")
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace

from fiftyone import ViewField as F

from kalos_core.agreement import AgreementConfig, AgreementResult, compute_agreement

from .adapter import (
    RaterSource, SetupError, clear_fields, owned_fields, read_dataset, resolve_source,
    validate_run_key,
)
from .writeback import write_results

METHOD = "kalos_agreement"
DIAGNOSTICS = ("vitality", "class_difficulty", "collaboration", "intra_rater")


def agreement_runs(dataset) -> list[str]:
    """Run keys of the KaLOS agreement runs stored on the dataset."""
    return [k for k in dataset.list_runs() if dataset.get_run_info(k).config.method == METHOD]


def compute_agreement_run(
    collection,
    rater_fields=None,
    label_field=None,
    rater_attribute="rater_id",
    run_key="kalos",
    threshold=0.5,
    solver="greedy",
    cost="soft",
    distance=None,
    lsa_thresholds=(),
    diagnostics=DIAGNOSTICS,
    bootstrap=1000,
    seed=0,
    calibration_key=None,
    progress=None,
) -> AgreementResult:
    """Compute agreement on ``collection`` and store it under ``run_key``.

    Writes ``<run_key>_alpha`` on every processed sample, ``<run_key>_unit`` and
    ``<run_key>_status`` on every rater label, and a custom run ``run_key``
    holding the config, the summary and all diagnostics. Re-running with the
    same key replaces exactly that run's fields.
    """
    timings = {}
    t0 = time.perf_counter()
    source = resolve_source(collection, rater_fields, label_field, rater_attribute)
    validate_run_key(collection, run_key, METHOD)
    config = AgreementConfig(
        threshold=float(threshold), distance=distance or None, solver=solver, cost=cost,
        lsa_thresholds=tuple(float(t) for t in lsa_thresholds),
        bootstrap=int(bootstrap), seed=int(seed), **{d: d in diagnostics for d in DIAGNOSTICS},
    )
    use_masks = distance == "mask_iou" and source.kind == "box"
    if use_masks:  # Detections with instance masks: compare the masks
        config = replace(config, distance="iou")
    data = read_dataset(collection, source, use_masks=use_masks)
    timings["read_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    result = compute_agreement(data, config, progress=progress)
    timings["compute_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    store_run(collection, source, run_key, config, result, calibration_key)
    timings["write_s"] = time.perf_counter() - t2
    result.timings = timings
    return result


def store_run(collection, source: RaterSource, run_key: str, config: AgreementConfig,
              result: AgreementResult, calibration_key=None) -> None:
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        delete_agreement_run(dataset, run_key)
    paths = owned_fields(source, run_key)
    write_results(collection, source, run_key, result)
    run_config = collection.init_run(
        method=METHOD, rater_fields=source.fields if source.rater_attribute is None else None,
        label_field=source.fields[0] if source.rater_attribute else None,
        rater_attribute=source.rater_attribute, label_type=source.label_cls.__name__,
        raters=source.raters, fields=paths, calibration_key=calibration_key,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
    )
    collection.register_run(run_key, run_config, overwrite=True, cleanup=False)
    summary = result.to_dict()
    summary["agreement_config"] = summary.pop("config")  # "config" is the run's own attribute
    results = dataset.init_run_results(run_key, **summary)
    dataset.save_run_results(run_key, results, overwrite=True)


def load_agreement(dataset, run_key: str) -> dict:
    """The stored summary and diagnostics of a run, as a plain dict."""
    results = dataset.load_run_results(run_key, load_view=False)
    return {k: v for k, v in vars(results).items() if not k.startswith("_")}


def delete_agreement_run(dataset, run_key: str) -> list[str]:
    """Remove a run and exactly the fields it wrote; returns those field paths."""
    if run_key not in dataset.list_runs():
        raise SetupError(f"no run {run_key!r} on dataset {dataset.name!r}", "run_key")
    info = dataset.get_run_info(run_key)
    if info.config.method != METHOD:
        raise SetupError(f"run {run_key!r} is not a KaLOS agreement run", "run_key")
    paths = list(getattr(info.config, "fields", None) or [])
    clear_fields(dataset, paths)
    dataset.delete_run(run_key)
    return paths


def disagreement_view(dataset, run_key: str):
    """Samples of the run sorted by α ascending, showing only labels that do not agree."""
    info = dataset.get_run_info(run_key)
    cfg = info.config
    fields = cfg.rater_fields or [cfg.label_field]
    view = dataset.exists(f"{run_key}_alpha").sort_by(f"{run_key}_alpha")
    for f in fields:
        view = view.filter_labels(f, F(f"{run_key}_status") != "agreed", only_matches=False)
    return view
