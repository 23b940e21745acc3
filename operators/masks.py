"""Operator compute_mask_agreement: the form of :mod:`..fiftyone_layer.measures.masks`: one
Segmentation field per rater instead of the label-list rater inputs, then the run key and the
declared parameters."""

from __future__ import annotations

import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.measure_runs import check_run, measure_steps, run_params
from ..fiftyone_layer.measures.masks import DEFAULT_KEY, RUN, rater_mask_fields, segmentation_fields
from .common import check_form, form, form_error
from .forms import param_inputs
from .measure_operator import MeasureOperator


class ComputeMaskAgreement(MeasureOperator):
    RUN = RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        view = ctx.target_view()
        inputs = types.Object()
        found = segmentation_fields(ds)
        choices = types.Dropdown(multiple=True)
        for name in found:
            choices.add_choice(name, label=name)
        props = {"mask_fields": inputs.list("mask_fields", types.String(), label="Rater mask fields", required=True,
                                            default=rater_mask_fields(ds) or None,
                                            description="one Segmentation field per rater (values = class indices)",
                                            view=choices)}
        if len(found) < 2:
            form_error(props["mask_fields"], "this dataset has fewer than two Segmentation fields")
            return form(inputs, RUN.app.label)
        key = p.get("run_key") or run_store.unused_key(ds, DEFAULT_KEY, RUN.method)
        props["run_key"] = inputs.str("run_key", default=key, label="Run key", description=RUN.app.key_help)
        if run_store.described(ds, RUN.method)(key):
            props["overwrite"] = inputs.bool("overwrite", default=False, label=f"Overwrite the existing run {key!r}")
        props.update(param_inputs(ctx, inputs, RUN.spec, skip=RUN.hidden))
        if p.get("mask_fields"):
            check_form(props, lambda: check_run(RUN, view, **run_params(RUN, p)))
        return form(inputs, RUN.app.label)

    def steps(self, ctx):
        """The raters are the chosen Segmentation fields: no label-list rater inputs."""
        return measure_steps(RUN, ctx.target_view(), **run_params(RUN, ctx.params))
