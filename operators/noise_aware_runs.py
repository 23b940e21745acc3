"""Python entries for noise-aware evaluation runs: evaluate, load, delete, and the panel's views.

What the ``noise_aware_evaluation`` operator calls, and what a notebook calls directly::

    from operators.noise_aware_runs import noise_aware_run
    result = noise_aware_run(dataset, predictions_field="model", reference_field="raters_a",
                             noise_fields=["raters_b"], run_key="noise_aware")

The corner noise is fitted between the reference rater field and the ``noise_fields`` (other
raters of the same images); the predictions are evaluated against the reference with IoU − ε̄,
IoU and IoU + ε̄. The run (``config.method == "kalos_noise_aware"``) stores
``NoiseAwareResult.to_dict()`` (AP in percent; its ``config`` as ``noise_aware_config``) and
writes on every evaluated prediction: ``<key>_at50`` / ``<key>_at75`` (``matched``,
``unmatched`` or ``uncertain``: the lower and upper bounds disagree), ``<key>_status`` (the same
at .50:.05:.95), ``<key>_uncertain`` (at some threshold), ``<key>_iou``, ``<key>_iou_lower``,
``<key>_iou_upper`` and ``<key>_size`` (COCO size of the prediction's box: small / medium / large).
"""

from __future__ import annotations

import fiftyone as fo

from kalos_core.noise_aware import NoiseAwareConfig, NoiseAwareResult, noise_aware_evaluation
from kalos_core.progress import run_steps

from . import run_store
from .adapter import SetupError, read_dataset, resolve_source
from .predictions import read_predictions
from .writeback import write_label_values

METHOD = "kalos_noise_aware"
DEFAULT_KEY = "noise_aware"
ATTRS = {"at50": fo.StringField(), "at75": fo.StringField(), "status": fo.ListField(fo.StringField()),
         "uncertain": fo.BooleanField(), "iou": fo.FloatField(), "iou_lower": fo.FloatField(),
         "iou_upper": fo.FloatField(), "size": fo.StringField()}


def owned_paths(predictions_field: str, run_key: str) -> list[str]:
    return [f"{predictions_field}.detections.{run_key}_{a}" for a in ATTRS]


def check_noise_aware(collection, predictions_field=None, reference_field=None, noise_fields=None,
                      share="split", run_key=DEFAULT_KEY, overwrite=False):
    """Every check before anything is read or written; returns ``(source, config)``."""
    if not predictions_field:
        raise SetupError("choose the predictions field (Detections with a confidence)", "predictions_field")
    if not reference_field:
        raise SetupError("choose the reference rater field (the ground truth)", "reference_field")
    noise_fields = [f for f in noise_fields or [] if f != reference_field]
    if not noise_fields:
        raise SetupError("choose at least one other rater field to fit the corner noise against the reference",
                         "noise_fields")
    if predictions_field in (reference_field, *noise_fields):
        raise SetupError("the predictions field is one of the rater fields", "predictions_field")
    try:
        source = resolve_source(collection, [reference_field, *noise_fields])
    except SetupError as e:
        raise SetupError(str(e), "noise_fields") from None
    if source.label_cls is not fo.Detections:
        raise SetupError("the corner-noise model needs boxes: choose Detections fields", "reference_field")
    run_store.validate_key(collection, run_key, METHOD, overwrite=overwrite)
    run_store.check_free_paths(collection, run_key, owned_paths(predictions_field, run_key))
    if len(collection) == 0:
        raise SetupError("the view has no samples: nothing to compute (no run was written)", "run_key")
    try:
        config = NoiseAwareConfig(share=share)
    except ValueError as e:
        raise SetupError(str(e), "share") from None
    return source, config


def noise_aware_steps(collection, predictions_field=None, reference_field=None, noise_fields=None, share="split",
                      run_key=DEFAULT_KEY, overwrite=False):
    """:func:`noise_aware_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    source, config = check_noise_aware(collection, predictions_field, reference_field, noise_fields, share, run_key,
                                       overwrite)
    yield 0.0, "reading labels"
    data = read_dataset(collection, source)
    if not data.meta.get("pixel_geometry"):
        raise SetupError("the corner noise is in pixels: every sample needs metadata width/height "
                         "(run dataset.compute_metadata())", "reference_field")
    predictions, unknown = read_predictions(collection, predictions_field, data, "bbox")
    reference = source.raters[reference_field]
    yield 0.1, "fitting the corner noise, AP with IoU bounds"
    try:
        result = noise_aware_evaluation(data, predictions, reference, config=config, per_detection=True,
                                        noise_raters=[source.raters[f] for f in source.fields[1:]])
    except ValueError as e:
        raise SetupError(str(e), "noise_fields") from None
    yield 0.9, "writing the results"
    store_noise_aware(collection, source, run_key, result, predictions_field, reference_field, unknown,
                      {p["id"]: p["bbox"] for p in predictions})
    yield 1.0, "done"
    return result


def noise_aware_run(collection, progress=None, **params) -> NoiseAwareResult:
    """Noise-aware AP of a predictions field stored under ``run_key`` (parameters: see
    :func:`check_noise_aware`); ``progress(fraction, message)`` optional."""
    return run_steps(noise_aware_steps(collection, **params), progress)


def size_of(box) -> str:
    """COCO size of a pixel box (area < 32², < 96², else large)."""
    area = box[2] * box[3]
    return "small" if area < 32 ** 2 else "medium" if area < 96 ** 2 else "large"


def label_values(run_key: str, detections: dict, boxes: dict) -> dict:
    """attribute -> {label id -> value} of the per-detection outcomes."""
    out = {f"{run_key}_{a}": {} for a in ATTRS}
    for lid, d in detections.items():
        row = {"at50": d["status"][0], "at75": d["status"][5], "status": d["status"], "uncertain": d["uncertain"],
               "iou": d["iou"], "iou_lower": d["iou_lower"], "iou_upper": d["iou_upper"], "size": size_of(boxes[lid])}
        for a, v in row.items():
            out[f"{run_key}_{a}"][str(lid)] = v
    return out


def store_noise_aware(collection, source, run_key, result: NoiseAwareResult, predictions_field, reference_field,
                      unknown_classes: int, boxes: dict) -> None:
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        run_store.delete_run(dataset, run_key)
    write_label_values(collection, [predictions_field], "detections", label_values(run_key, result.detections, boxes),
                       {f"{run_key}_{a}": f for a, f in ATTRS.items()})
    summary = result.to_dict()
    summary["noise_aware_config"] = summary.pop("config")
    summary["unknown_prediction_classes"] = unknown_classes
    summary["n_uncertain"] = sum(1 for d in result.detections.values() if d["uncertain"])
    run_store.save_run(
        collection, run_key, METHOD, summary, fields=owned_paths(predictions_field, run_key),
        rater_fields=source.fields, label_field=None, rater_attribute=None, label_type="Detections",
        raters=source.raters, predictions_field=predictions_field, reference_field=reference_field,
        noise_fields=source.fields[1:], share=result.config.share)


def load_noise_aware(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored result (``NoiseAwareResult.to_dict()``), as a plain dict."""
    return run_store.load_results(dataset, run_key, METHOD)


def delete_noise_aware_run(dataset, run_key: str) -> list[str]:
    """Remove the run and the prediction attributes it wrote; returns their paths."""
    return run_store.delete_run(dataset, run_key, METHOD)
