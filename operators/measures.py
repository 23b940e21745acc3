"""Operators: label_convergence, noise_aware_evaluation, delete_kalos_run.

Thin adapters: the forms are built here (the parameters' inputs from the engine's declarations,
:func:`.forms.param_inputs`), the work is done by :mod:`..fiftyone_layer.measures.convergence`, :mod:`..fiftyone_layer.measures.noise_aware`
and the run store (:mod:`.run_store`).
"""

from __future__ import annotations

import fiftyone as fo
import fiftyone.operators as foo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.adapter import SetupError, label_fields
from .cards import delete_and_confirm
from .common import form, check_form, form_error, setup_inputs, source_params
from .measure_operator import MeasureOperator
from ..fiftyone_layer.measures.convergence import DEFAULT_KEY as CONVERGENCE_KEY
from ..fiftyone_layer.measures.convergence import METHOD as CONVERGENCE
from ..fiftyone_layer.measures.convergence import RUN as CONVERGENCE_RUN
from ..fiftyone_layer.measures.convergence import TASKS, convergence_steps
from .forms import param_inputs
from ..fiftyone_layer.measure_runs import check_run, run_params
from ..fiftyone_layer.measures.noise_aware import DEFAULT_KEY as NOISE_KEY
from ..fiftyone_layer.measures.noise_aware import METHOD as NOISE_AWARE
from ..fiftyone_layer.measures.noise_aware import RUN as NOISE_RUN
from ..fiftyone_layer.measures.noise_aware import noise_aware_steps
from ..fiftyone_layer.predictions import check_predictions_field, missing_predictions, prediction_fields, scored_fields


def _choices(names: dict, multiple: bool = False) -> types.Dropdown:
    choices = types.Dropdown(multiple=multiple)
    for name, cls in names.items():
        choices.add_choice(name, label=f"{name} ({cls.__name__})")
    return choices


class LabelConvergence(MeasureOperator):
    RUN = CONVERGENCE_RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, run_store.unused_key(ds, CONVERGENCE_KEY, CONVERGENCE),
            lambda key: run_store.validate_key(ds, key, CONVERGENCE, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, CONVERGENCE), required=True,
            description="stored as a custom run; <run_key>_matched goes on every rater label")
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
            "predictions_field", list(preds), label="Predictions field (optional)", view=_choices(preds),
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
        return form(inputs, "KaLOS: label convergence")

    def steps(self, ctx):
        params = run_params(CONVERGENCE_RUN, ctx.params)
        if not params.get("alpha"):   # the box left unticked: the default rule (alpha with > 2 raters)
            params.pop("alpha", None)
        return convergence_steps(ctx.target_view(), **source_params(ctx.params), **params)


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
            return form(inputs, "KaLOS: noise-aware evaluation")
        picked = p.get("predictions_field")
        offered = {k: boxes[k] for k in scored + ([picked] if picked in boxes and picked not in scored else [])}
        props["predictions_field"] = inputs.enum(
            "predictions_field", list(offered), required=True, label="Predictions field", view=_choices(offered),
            description="the model's Detections, with a confidence on every label (fields that have them: "
                        + ", ".join(scored) + ")")
        if picked not in (None, ""):
            check_form(props, lambda: check_predictions_field(ds, picked, "bbox", exclude=chosen))
        raters = {k: v for k, v in boxes.items() if k != p.get("predictions_field")}
        props["reference_field"] = inputs.enum("reference_field", list(raters), required=True,
                                               label="Reference rater field", view=_choices(raters),
                                               description="the ground truth the predictions are evaluated against")
        others = {k: v for k, v in raters.items() if k != p.get("reference_field")}
        props["noise_fields"] = inputs.list("noise_fields", types.String(), required=True,
                                            label="Noise fit: other rater fields", view=_choices(others, True),
                                            description="the corner noise is fitted between the reference and these")
        default = run_store.unused_key(ds, NOISE_KEY, NOISE_AWARE)
        props["run_key"] = inputs.str("run_key", default=default, required=True, label="Run key",
                                      description="stored as a custom run; <run_key>_* attributes on the predictions")
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
        return form(inputs, "KaLOS: noise-aware evaluation")

    def steps(self, ctx):
        return noise_aware_steps(ctx.target_view(), **run_params(NOISE_RUN, ctx.params))


class DeleteKalosRun(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="delete_kalos_run", label="KaLOS: delete a run", dynamic=True,
                                  view_target=False, execute_as_generator=True, icon="/assets/icon.svg")

    def resolve_input(self, ctx):
        inputs = types.Object()
        runs = [k for m in run_store.kinds() for k in run_store.runs_of(ctx.dataset, m)]
        if not runs and ctx.params.get("run_key") is None:
            inputs.view("none", types.Warning(label="No KaLOS run on this dataset."))
            return form(inputs, "KaLOS: delete a run")
        choices = types.Dropdown()
        for k in runs:
            choices.add_choice(k, label=k, description=run_store.describe_run(ctx.dataset, k))
        prop = inputs.enum("run_key", choices.values(), required=True, label="Run to delete", view=choices)
        key = ctx.params.get("run_key")
        if key in runs:
            paths, views = run_store.owned(ctx.dataset, key)
            owned = paths + [f"saved view {v}" for v in views]
            inputs.view("fields", types.Notice(label=f"{run_store.describe_run(ctx.dataset, key)}. Removes: "
                                               + (", ".join(owned) or "the run only (it wrote no field)")))
        elif key is not None:
            form_error(prop, f"no KaLOS run {key!r} on this dataset")
        return form(inputs, "KaLOS: delete a run")

    def execute(self, ctx):
        key = ctx.params["run_key"]
        method = run_store.run_method(ctx.dataset, key)
        if method not in run_store.kinds():
            raise SetupError(f"no KaLOS run {key!r} on this dataset", "run_key")
        yield from delete_and_confirm(ctx, key, run_store.delete_run)
