"""Operator compute_attribute_agreement and its Python entries: Krippendorff's α of the rater
labels' attributes (:mod:`kalos_core.attributes`) over the units of a stored agreement run.

::

    from fiftyone.plugins.orgs.kalos.agreement.operators.attributes import attribute_run
    result = attribute_run(dataset, agreement_key="kalos", names=["pose"], metrics=["pose:ordinal"])

The run (``config.method == "kalos_attributes"``) stores ``AttributeResult.to_dict()`` and the
agreement key; it writes nothing on the labels (:mod:`..fiftyone_layer.attribute_runs`).
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.attributes import AttributeResult

from ..fiftyone_layer import run_store
from ..fiftyone_layer.attribute_runs import DEFAULT_KEY, RUN, agreement_raters, found_attributes
from ..fiftyone_layer.errors import SetupError
from ..fiftyone_layer.measure_runs import check_run, measure_run, measure_steps, run_params
from .cards import show_card, written_by
from .common import agreement_run_input, check_form, drive, finish_run, form, form_error, report_errors, run_or_delegate
from .forms import param_inputs

TITLE = "KaLOS: attribute agreement"


def attribute_steps(collection, **params):
    """:func:`attribute_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def attribute_run(collection, progress=None, **params) -> AttributeResult:
    """Attribute α on ``collection`` stored under ``run_key``: ``agreement_key`` (default the newest
    agreement run), ``run_key``, ``overwrite`` and ``names`` (the attributes) / ``metrics`` of
    :class:`kalos_core.attributes.AttributeConfig`."""
    return measure_run(RUN, collection, progress, **params)


def _choices(view, agreement_key) -> list[str] | None:
    try:
        return found_attributes(view, agreement_raters(view, {"agreement_key": agreement_key}))
    except SetupError:
        return None


class ComputeAttributeAgreement(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="compute_attribute_agreement", label=TITLE, dynamic=True, execute_as_generator=True,
            allow_delegated_execution=True, icon="/assets/icon.svg",
            description="Krippendorff's α of the rater labels' attributes (occluded, pose, a colour, free text) over "
                        "the units of an agreement run, per attribute and per class")

    def __call__(self, sample_collection, delegate=False, **params):
        return run_or_delegate(self, attribute_run, sample_collection, delegate, params)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        view = ctx.target_view()
        inputs = types.Object()
        props = {"agreement_key": agreement_run_input(ctx, inputs, "agreement_key", "Agreement run (its units)")}
        if props["agreement_key"] is None:
            return form(inputs, TITLE)
        key = p.get("run_key") or run_store.unused_key(ds, DEFAULT_KEY, RUN.method)
        props["run_key"] = inputs.str("run_key", default=key, label="Run key",
                                      description="stored as a custom run; nothing is written on the labels")
        if run_store.described(ds, RUN.method)(key):
            props["overwrite"] = inputs.bool("overwrite", default=False, label=f"Overwrite the existing run {key!r}")
        found = _choices(view, p.get("agreement_key") or run_store.runs_of(ds, run_store.AGREEMENT)[-1])
        props.update(param_inputs(ctx, inputs, RUN.spec, skip=RUN.hidden,
                                  overrides={"names": {"choices": found}} if found else None))
        check_form(props, lambda: check_run(RUN, view, **run_params(RUN, p)))
        if not found and not props["agreement_key"].invalid:
            form_error(props["agreement_key"], "the labels of this agreement run carry no attribute to compare")
        return form(inputs, TITLE)

    def execute(self, ctx):
        p = ctx.params
        key = p.get("run_key") or DEFAULT_KEY
        res = yield from report_errors(ctx, drive(ctx, attribute_steps(ctx.target_view(), **run_params(RUN, p))))
        yield from finish_run(ctx, f"KaLOS attribute agreement {key!r}: {len(res.per_attribute)} attributes")
        rows = [(f"α {name} ({a['metric']}, {a['n_units']} units)", a["alpha"] if a["alpha"] is not None
                 else a["reason"]) for name, a in res.per_attribute.items()]
        yield show_card(ctx, TITLE, rows, written_by(ctx.dataset, key), key,
                        "Open the panel 'KaLOS: Attribute agreement'.")
