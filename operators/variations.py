"""Operator compute_variations: the type of each disagreement (agreed, merged, wrong class,
missed, additional) per rater pair and IoU threshold. The work is done by :mod:`..fiftyone_layer.measures.variations`."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from .cards import show_card, written_by
from .common import form, drive, report_errors, run_or_delegate, setup_inputs, source_params
from .common import check_form, finish_run
from .forms import param_inputs
from ..fiftyone_layer.measure_runs import check_run, run_params
from ..fiftyone_layer.measures.variations import DEFAULT_KEY, METHOD, RUN, variations_run, variations_steps
from kalos_core.variations import threshold_key


def _dropdown(names):
    view = types.Dropdown()
    for n in names:
        view.add_choice(n, label=n)
    return view


class ComputeVariations(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="compute_variations", label="KaLOS: variation types", dynamic=True, execute_as_generator=True,
            allow_delegated_execution=True, icon="/assets/icon.svg",
            description="What kind of disagreement: agreed, merged, wrong class, missed or additional labels per "
                        "rater pair and IoU threshold; the type, partner and IoU on every label")

    def __call__(self, sample_collection, delegate=False, **params):
        return run_or_delegate(self, variations_run, sample_collection, delegate, params)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, run_store.unused_key(ds, DEFAULT_KEY, METHOD),
            lambda key: run_store.validate_key(ds, key, METHOD, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, METHOD), required=True,
            description="stored as a custom run; <run_key>_variation, _partner, _iou go on every rater label")
        props = dict(inputs.properties)
        raters = sorted(source.raters.values()) if source is not None and source.rater_attribute is None else []
        choices = {"reference": {"label": "Reference rater (two raters)", "view": _dropdown(raters)}} if raters else {}
        props.update(param_inputs(ctx, inputs, RUN.spec, overrides={
            "threshold": {"label": "IoU threshold", "default": 0.5},
            "thresholds": {"label": "Thresholds to count at"}, **choices}))
        if source is not None:
            key = run_store.unused_key(ds, DEFAULT_KEY, METHOD)
            check_form(props, lambda: check_run(RUN, ctx.target_view(), **source_params(p), **run_params(RUN, p, key)))
        return form(inputs, "KaLOS: variation types")

    def execute(self, ctx):
        p = ctx.params
        key = p.get("run_key") or DEFAULT_KEY
        steps = variations_steps(ctx.target_view(), **source_params(p), **run_params(RUN, p))
        res = yield from report_errors(ctx, drive(ctx, steps))
        t = threshold_key(res.config["threshold"])
        counts = res.counts[t]
        text = ", ".join(f"{k} {v}" for k, v in counts.items())
        yield from finish_run(ctx, f"KaLOS variation types {key!r} at IoU {t}: {text}")
        yield show_card(ctx, "KaLOS: variation types", [
            ("IoU threshold of the per-label types", res.config["threshold"]), ("Labels per type", text),
            ("Labels", res.n_annotations)], written_by(ctx.dataset, key), key,
            "Open the panel 'KaLOS: Variation types'.")
