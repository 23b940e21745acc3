"""Operator compute_attribute_agreement: the form of :mod:`..fiftyone_layer.measures.attributes`
(Krippendorff's α of the rater labels' attributes over the units of a stored agreement run): the
agreement run instead of rater inputs, and its labels' attributes offered by name."""

from __future__ import annotations

import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.errors import SetupError
from ..fiftyone_layer.measure_runs import check_run, measure_steps, run_params
from ..fiftyone_layer.measures.attributes import DEFAULT_KEY, RUN, agreement_raters, found_attributes
from .common import agreement_run_input, check_form, form, form_error
from .forms import param_inputs
from .measure_operator import MeasureOperator


def _choices(view, agreement_key) -> list[str] | None:
    try:
        return found_attributes(view, agreement_raters(view, {"agreement_key": agreement_key}))
    except SetupError:
        return None


class ComputeAttributeAgreement(MeasureOperator):
    RUN = RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        view = ctx.target_view()
        inputs = types.Object()
        props = {"agreement_key": agreement_run_input(ctx, inputs, "agreement_key", "Agreement run (its units)")}
        if props["agreement_key"] is None:
            return form(inputs, RUN.app.label)
        key = p.get("run_key") or run_store.unused_key(ds, DEFAULT_KEY, RUN.method)
        props["run_key"] = inputs.str("run_key", default=key, label="Run key", description=RUN.app.key_help)
        if run_store.described(ds, RUN.method)(key):
            props["overwrite"] = inputs.bool("overwrite", default=False, label=f"Overwrite the existing run {key!r}")
        found = _choices(view, p.get("agreement_key") or run_store.runs_of(ds, run_store.AGREEMENT)[-1])
        props.update(param_inputs(ctx, inputs, RUN.spec, skip=RUN.hidden,
                                  overrides={"names": {"choices": found}} if found else None))
        check_form(props, lambda: check_run(RUN, view, **run_params(RUN, p)))
        if not found and not props["agreement_key"].invalid:
            form_error(props["agreement_key"], "the labels of this agreement run carry no attribute to compare")
        return form(inputs, RUN.app.label)

    def steps(self, ctx):
        """The raters are the agreement run's: no rater inputs."""
        return measure_steps(RUN, ctx.target_view(), **run_params(RUN, ctx.params))
