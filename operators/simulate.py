"""Operator ``@kalos/agreement/simulate_raters``: the form of :mod:`..fiftyone_layer.simulate`
(synthetic raters from a reference label field)."""

from __future__ import annotations

import fiftyone.operators as foo
from fiftyone.operators import types

from ..fiftyone_layer.adapter import SetupError, label_fields
from ..fiftyone_layer.simulate import check_params, form_params, measure, simulate_rater_fields, unused_prefix
from .cards import show_card
from .common import form, form_error
from .forms import param_inputs


class SimulateRaters(foo.Operator):
    """Synthetic raters (empirical noise generator) from a reference label field."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="simulate_raters", label="KaLOS: simulate raters", dynamic=True, icon="/assets/icon.svg",
            allow_delegated_execution=True, execute_as_generator=True,
            description="Create N synthetic rater fields from a reference field with the empirical noise generator")

    def __call__(self, sample_collection, reference_field, delegate=False, **params):
        """Python entry; same as :func:`simulate_rater_fields`. ``delegate=True`` queues the run
        for ``fiftyone delegated launch`` instead of running it here."""
        if not delegate:
            return simulate_rater_fields(sample_collection, reference_field, **params)
        return foo.execute_operator(self.uri, dataset=sample_collection._dataset.name,
                                    params={"reference_field": reference_field, **params}, request_delegation=True)

    def resolve_input(self, ctx):
        inputs = types.Object()
        p = ctx.params
        choices = types.Dropdown()
        for name in sorted(label_fields(ctx.dataset)):
            choices.add_choice(name, label=name)
        props = {
            "reference_field": inputs.enum("reference_field", choices.values(), required=True,
                                           label="Reference field", view=choices),
            "prefix": inputs.str("prefix", default=unused_prefix(ctx.dataset), label="Field prefix",
                                 description="new fields <prefix>_rater_1 ... are created (an existing field is "
                                             "never replaced)"),
        }
        props.update(param_inputs(ctx, inputs, measure()))
        if p.get("reference_field"):
            try:
                check_params(ctx.dataset, p["reference_field"], p.get("prefix") or unused_prefix(ctx.dataset),
                             **form_params(p))
            except (SetupError, TypeError, ValueError) as e:
                prop = props.get(getattr(e, "param", None)) or props["reference_field"]
                if not prop.invalid:
                    form_error(prop, str(e))
        return form(inputs, "KaLOS: simulate raters")

    def execute(self, ctx):
        p = ctx.params
        summary = simulate_rater_fields(ctx.dataset, p["reference_field"],
                                        prefix=p.get("prefix") or unused_prefix(ctx.dataset), **form_params(p))
        if not ctx.delegated:
            yield ctx.ops.reload_dataset()
            yield ctx.ops.notify(f"KaLOS: {summary['n_raters']} synthetic raters, {summary['n_labels']} labels",
                                 variant="success")
        fields = list(summary["fields"])
        yield show_card(ctx, "KaLOS: raters simulated", [
            ("Synthetic raters", summary["n_raters"]), ("Labels drawn", summary["n_labels"]),
            ("Reference labels", summary["n_reference"])],
            "new fields " + ", ".join(fields), None,
            f"Run 'KaLOS: compute agreement' on {', '.join(fields)}.", fields=fields, n_labels=summary["n_labels"])
