"""The form's inputs of models as raters (:mod:`..fiftyone_layer.measures.agreement` says what a model
field is and how it joins an agreement run)."""

from __future__ import annotations

import fiftyone.operators.types as types

from ..fiftyone_layer.adapter import RaterSource, label_fields
from ..fiftyone_layer.errors import SetupError
from ..fiftyone_layer.measures.agreement import PARAM, check_model_fields
from .common import form_error, number_input


def model_inputs(ctx, inputs, source: RaterSource | None) -> None:
    """The form's model fields (same label type as the raters) and score threshold."""
    if source is None:
        return
    choices = types.Dropdown(multiple=True)
    for name, cls in label_fields(ctx.dataset).items():
        if cls is source.label_cls and name not in source.fields:
            choices.add_choice(name, label=name)
    if not choices.values() and not ctx.params.get(PARAM):
        return
    prop = inputs.list(PARAM, types.String(), default=[], label="Model fields (optional)",
                       description="predictions that join as one more rater each, flagged as a model",
                       view=choices)
    if ctx.params.get(PARAM):
        number_input(ctx, inputs, "score_threshold", lo=0.0, hi=1.0, default=0.5, label="Model score threshold",
                     description="model labels with confidence >= this are kept (within [0, 1])")
        try:
            check_model_fields(ctx.dataset, source, ctx.params.get(PARAM), ctx.params.get("score_threshold", 0.5))
        except SetupError as e:
            form_error(prop, str(e))


def model_params(params) -> dict:
    """``model_fields`` / ``score_threshold`` keyword arguments from form params."""
    return {"model_fields": list(params.get(PARAM) or []), "score_threshold": params.get("score_threshold", 0.5)}
