"""Operator label_convergence: the form of :mod:`..fiftyone_layer.measures.convergence` (the task, a
model's predictions field among those that fit it, then the parameters)."""

from __future__ import annotations

import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.measure_runs import check_run, run_params, source_params
from ..fiftyone_layer.measures.convergence import DEFAULT_KEY as CONVERGENCE_KEY
from ..fiftyone_layer.measures.convergence import METHOD as CONVERGENCE
from ..fiftyone_layer.measures.convergence import RUN as CONVERGENCE_RUN
from ..fiftyone_layer.measures.convergence import TASKS, convergence_steps
from ..fiftyone_layer.predictions import check_predictions_field, missing_predictions, prediction_fields
from .common import check_form, form, setup_inputs
from .forms import field_choices, param_inputs
from .measure_operator import MeasureOperator


class LabelConvergence(MeasureOperator):
    RUN = CONVERGENCE_RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, run_store.unused_key(ds, CONVERGENCE_KEY, CONVERGENCE),
            lambda key: run_store.validate_key(ds, key, CONVERGENCE, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, CONVERGENCE), required=True,
            description=CONVERGENCE_RUN.app.key_help)
        props = dict(inputs.properties)
        tasks = TASKS.get(source.label_cls.__name__, ("bbox",)) if source else ("bbox", "segm")
        task_view = types.RadioGroup(orientation="horizontal")
        for t in tasks:
            task_view.add_choice(t, label={"bbox": "boxes (bbox)", "segm": "masks / polygons (segm)"}[t])
        not_task = [q.name for q in CONVERGENCE_RUN.spec.params if q.name != "task"]
        props.update(param_inputs(ctx, inputs, CONVERGENCE_RUN.spec, skip=not_task,
                                  overrides={"task": {"view": task_view, "default": tasks[0]}}))
        task = p.get("task") if p.get("task") in tasks else tasks[0]
        preds = {k: v for k, v in prediction_fields(ds, task).items()
                 if not source or k not in source.fields}
        props["predictions_field"] = inputs.enum(
            "predictions_field", list(preds), label="Predictions field (optional)", view=field_choices(preds),
            description="a model's labels with confidence: its mAP against each rater, placed against the interval")
        missing = missing_predictions(ds, task, source.fields if source else ())
        if missing:
            inputs.view("no_predictions", types.Notice(label=missing + " (Optional: the raters' convergence "
                                                               "is computed without it.)"))
        if p.get("predictions_field") not in (None, ""):
            check_form(props, lambda: check_predictions_field(ds, p["predictions_field"], task,
                                                              exclude=source.fields if source else ()))
        props.update(param_inputs(ctx, inputs, CONVERGENCE_RUN.spec, skip=("task", *CONVERGENCE_RUN.hidden)))
        if source is not None:
            check_form(props, lambda: check_run(CONVERGENCE_RUN, ctx.target_view(), **source_params(p),
                                                **{**run_params(CONVERGENCE_RUN, p), "task": task}))
        return form(inputs, CONVERGENCE_RUN.app.label)

    def steps(self, ctx):
        params = run_params(CONVERGENCE_RUN, ctx.params)
        if not params.get("alpha"):   # the box left unticked: the default rule (alpha with > 2 raters)
            params.pop("alpha", None)
        return convergence_steps(ctx.target_view(), **source_params(ctx.params), **params)
