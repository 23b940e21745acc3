"""Operator noise_aware_evaluation: the form of :mod:`..fiftyone_layer.measures.noise_aware` (the
predictions, the reference rater and the raters the corner noise is fitted against)."""

from __future__ import annotations

import fiftyone as fo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.adapter import label_fields
from ..fiftyone_layer.measure_runs import check_run, run_params
from ..fiftyone_layer.measures.noise_aware import DEFAULT_KEY as NOISE_KEY
from ..fiftyone_layer.measures.noise_aware import METHOD as NOISE_AWARE
from ..fiftyone_layer.measures.noise_aware import RUN as NOISE_RUN
from ..fiftyone_layer.measures.noise_aware import noise_aware_steps
from ..fiftyone_layer.predictions import check_predictions_field, missing_predictions, scored_fields
from .common import check_form, form, form_error
from .forms import field_choices, param_inputs
from .measure_operator import MeasureOperator


class NoiseAwareEvaluation(MeasureOperator):
    RUN = NOISE_RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs = types.Object()
        ctx.target_view()
        boxes = {k: v for k, v in label_fields(ds).items() if v is fo.Detections}
        props = {}
        chosen = [f for f in (p.get("reference_field"), *(p.get("noise_fields") or [])) if f]
        scored = scored_fields(ds, "bbox", exclude=chosen)
        if not scored:   # nothing to evaluate: say what is missing and what to do, offer nothing to pick
            missing = missing_predictions(ds, "bbox", chosen)
            inputs.view("no_predictions", types.Error(label=missing))
            form_error(inputs.str("predictions_field", view=types.HiddenView()), missing)
            return form(inputs, NOISE_RUN.app.label)
        picked = p.get("predictions_field")
        offered = {k: boxes[k] for k in scored + ([picked] if picked in boxes and picked not in scored else [])}
        props["predictions_field"] = inputs.enum(
            "predictions_field", list(offered), required=True, label="Predictions field", view=field_choices(offered),
            description="the model's Detections, with a confidence on every label (fields that have them: "
                        + ", ".join(scored) + ")")
        if picked not in (None, ""):
            check_form(props, lambda: check_predictions_field(ds, picked, "bbox", exclude=chosen))
        raters = {k: v for k, v in boxes.items() if k != p.get("predictions_field")}
        props["reference_field"] = inputs.enum("reference_field", list(raters), required=True,
                                               label="Reference rater field", view=field_choices(raters),
                                               description="the ground truth the predictions are evaluated against")
        others = {k: v for k, v in raters.items() if k != p.get("reference_field")}
        props["noise_fields"] = inputs.list("noise_fields", types.String(), required=True,
                                            label="Noise fit: other rater fields", view=field_choices(others, True),
                                            description="the corner noise is fitted between the reference and these")
        default = run_store.unused_key(ds, NOISE_KEY, NOISE_AWARE)
        props["run_key"] = inputs.str("run_key", default=default, required=True, label="Run key",
                                      description=NOISE_RUN.app.key_help)
        key = p.get("run_key", default)
        about = run_store.described(ds, NOISE_AWARE)(key) if isinstance(key, str) else None
        if about:
            props["overwrite"] = inputs.bool("overwrite", default=False, label=f"Overwrite the existing run {key!r}",
                                             description=f"Replaces it and the fields it wrote: {about}")
        share = types.RadioGroup()
        share.add_choice("split", label="both raters noisy (each carries the noise / √2)")
        share.add_choice("reference", label="the reference is noise-free")
        props.update(param_inputs(ctx, inputs, NOISE_RUN.spec, overrides={"share": {"view": share}}))
        if p.get("predictions_field") and p.get("reference_field") and p.get("noise_fields"):
            check_form(props, lambda: check_run(NOISE_RUN, ctx.target_view(), **run_params(NOISE_RUN, p)))
        else:
            check_form(props, lambda: run_store.validate_key(ds, key, NOISE_AWARE, overwrite=bool(p.get("overwrite"))))
        return form(inputs, NOISE_RUN.app.label)

    def steps(self, ctx):
        return noise_aware_steps(ctx.target_view(), **run_params(NOISE_RUN, ctx.params))
