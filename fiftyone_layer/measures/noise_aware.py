"""Python entries for noise-aware evaluation runs (:mod:`kalos_core.noise_aware`): evaluate, load, delete.

What the ``noise_aware_evaluation`` operator calls, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import noise_aware_run
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

from dataclasses import dataclass

import fiftyone as fo

from kalos_core.measure import MeasureData
from kalos_core.noise_aware import NoiseAwareResult
from kalos_core.params import Config, param

from .. import run_store
from ..adapter import RaterSource, SetupError, read_dataset, resolve_source
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered, human
from ..predictions import check_predictions_field, missing_predictions, read_predictions
from ..writeback import write_label_values

METHOD = "kalos_noise_aware"
DEFAULT_KEY = "noise_aware"
ATTRS = {"at50": fo.StringField(), "at75": fo.StringField(), "status": fo.ListField(fo.StringField()),
         "uncertain": fo.BooleanField(), "iou": fo.FloatField(), "iou_lower": fo.FloatField(),
         "iou_upper": fo.FloatField(), "size": fo.StringField()}


@dataclass
class ReferenceSource(RaterSource):
    """The reference rater field first, then the noise fields; and the predictions field."""

    predictions_field: str = ""


def owned_paths(source: ReferenceSource, run_key: str) -> list[str]:
    return [f"{source.predictions_field}.detections.{run_key}_{a}" for a in ATTRS]


def _source(collection, extras: dict) -> ReferenceSource:
    """The reference and noise fields (``extras["noise_fields"]`` left without the reference)."""
    predictions_field, reference_field = extras.get("predictions_field"), extras.get("reference_field")
    if not predictions_field:
        raise SetupError(missing_predictions(collection, "bbox")
                         or "choose the predictions field (Detections with a confidence)", "predictions_field")
    if not reference_field:
        raise SetupError("choose the reference rater field (the ground truth)", "reference_field")
    noise_fields = [f for f in extras.get("noise_fields") or [] if f != reference_field]
    if not noise_fields:
        raise SetupError("choose at least one other rater field to fit the corner noise against the reference",
                         "noise_fields")
    check_predictions_field(collection, predictions_field, "bbox", exclude=(reference_field, *noise_fields))
    try:
        source = resolve_source(collection, [reference_field, *noise_fields])
    except SetupError as e:
        raise SetupError(str(e), "noise_fields") from None
    if source.label_cls is not fo.Detections:
        raise SetupError("the corner-noise model needs boxes: choose Detections fields", "reference_field")
    extras["noise_fields"] = noise_fields
    return ReferenceSource(source.fields, source.label_cls, raters=source.raters, predictions_field=predictions_field)


def _read(collection, source: ReferenceSource, config, extras) -> MeasureData:
    data = read_dataset(collection, source)
    if not data.meta.get("pixel_geometry"):
        raise SetupError("the corner noise is in pixels: every sample needs metadata width/height "
                         "(run dataset.compute_metadata())", "reference_field")
    predictions, unknown = read_predictions(collection, source.predictions_field, data, "bbox")
    return MeasureData(data, predictions, {
        "reference": source.raters[source.fields[0]], "noise_raters": [source.raters[f] for f in source.fields[1:]],
        "per_detection": True, "unknown_prediction_classes": unknown})


def label_values(run_key: str, detections: dict) -> dict:
    """attribute -> {label id -> value} of the per-detection outcomes."""
    out = {f"{run_key}_{a}": {} for a in ATTRS}
    for lid, d in detections.items():
        row = {"at50": d["status"][0], "at75": d["status"][5], "status": d["status"], "uncertain": d["uncertain"],
               "iou": d["iou"], "iou_lower": d["iou_lower"], "iou_upper": d["iou_upper"], "size": d["size"]}
        for a, v in row.items():
            out[f"{run_key}_{a}"][str(lid)] = v
    return out


def _write(collection, source: ReferenceSource, run_key: str, result: NoiseAwareResult,
           data: MeasureData) -> None:
    write_label_values(collection, [source.predictions_field], "detections", label_values(run_key, result.detections),
                       {f"{run_key}_{a}": f for a, f in ATTRS.items()})


def _results(result: NoiseAwareResult, data: MeasureData, config) -> dict:
    return {"unknown_prediction_classes": data.options["unknown_prediction_classes"],
            "n_uncertain": sum(1 for d in result.detections.values() if d["uncertain"])}


@dataclass(frozen=True)
class Inputs(Config):
    """The plugin-only inputs of a noise-aware evaluation: the fields it reads."""

    predictions_field: str | None = param(None, "str", "the model's Detections, with a confidence on every label",
                                          optional=True, label="Predictions field", flag="")
    reference_field: str | None = param(None, "str", "the ground truth the predictions are evaluated against",
                                        optional=True, label="Reference rater field", flag="")
    noise_fields: tuple | None = param(None, "names", "the corner noise is fitted between the reference and these",
                                       optional=True, label="Noise fit: other rater fields", flag="")


def _ap_text(res: NoiseAwareResult) -> str:
    ap = res.to_dict()["ap"]["50:95"]
    return f"AP^l {human(ap['lower'])} ≤ AP {human(ap['ap'])} ≤ AP^u {human(ap['upper'])}"


def _card(res: NoiseAwareResult, key: str) -> tuple:
    n = res.noise
    return "KaLOS: noise-aware evaluation", [
        ("AP@[.5:.95] with bounds (%)", _ap_text(res)),
        ("Corner-noise fit", f"{n.n_pairs} pairs, {n.n_inliers} inliers, share {n.share}"),
        ("Predictions whose bounds disagree", sum(1 for d in res.detections.values() if d["uncertain"]))], \
        "Open the panel 'KaLOS: Noise-aware AP'."


RUN = MeasureRun(
    "noise-aware", "noise-aware evaluations", DEFAULT_KEY, ("box",), owned_paths, write=_write, read=_read,
    inputs=Inputs, config_key="noise_aware_config", source=_source, results=_results,
    error_param=lambda source: "noise_fields",
    app=Offered(
        "KaLOS noise-aware evaluation", "noise_aware_evaluation", "KaLOS: noise-aware evaluation",
        "A model's AP with lower and upper bounds from the raters' corner noise (AP^l ≤ AP ≤ AP^u)",
        key_help="stored as a custom run; <run_key>_* attributes on the predictions",
        operator_class="noise_aware:NoiseAwareEvaluation", panels=("noise_aware:NoiseAwarePanel",), card=_card,
        notice=lambda res, key: f"KaLOS noise-aware evaluation {key!r}: {_ap_text(res)}"))


def noise_aware_steps(collection, **params):
    """:func:`noise_aware_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def noise_aware_run(collection, progress=None, **params) -> NoiseAwareResult:
    """Noise-aware AP of ``predictions_field`` against ``reference_field`` (the corner noise fitted
    against ``noise_fields``) stored under ``run_key``: ``overwrite`` and the parameters of
    :class:`kalos_core.noise_aware.NoiseAwareConfig`; ``progress(fraction, message)`` optional."""
    return measure_run(RUN, collection, progress, **params)


def load_noise_aware(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored result (``NoiseAwareResult.to_dict()``), as a plain dict."""
    return run_store.load_results(dataset, run_key, METHOD)
