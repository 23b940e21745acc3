"""Operator compute_bae: the form of :mod:`..fiftyone_layer.measures.bae`."""

from __future__ import annotations

import fiftyone.operators as foo

from ..fiftyone_layer import run_store
from ..fiftyone_layer.measure_runs import check_run, run_params
from ..fiftyone_layer.measures.bae import DEFAULT_ATTRIBUTE, DEFAULT_KEY, RUN, bae_run, bae_steps
from .cards import show_card, written_by
from .common import form, check_form, drive, finish_run, report_errors, run_or_delegate, setup_inputs, source_params
from .forms import param_inputs


class ComputeBAE(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="compute_bae", label="KaLOS: behaviour alignment (BAE)", dynamic=True, execute_as_generator=True,
            allow_delegated_execution=True, icon="/assets/icon.svg",
            description="How well a model's per-rater representations (vectors on the rater labels) reproduce the "
                        "raters' pairwise α: BAE = 1 − ‖S_model − S_true‖ / ‖S_true‖")

    def __call__(self, sample_collection, delegate=False, **params):
        return run_or_delegate(self, bae_run, sample_collection, delegate, params)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, run_store.unused_key(ds, DEFAULT_KEY, RUN.method),
            lambda key: run_store.validate_key(ds, key, RUN.method, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, RUN.method), required=True, description="stored as a custom run; nothing is written on the labels")
        props = dict(inputs.properties)
        props["embedding_attribute"] = inputs.str(
            "embedding_attribute", default=DEFAULT_ATTRIBUTE, label="Embedding attribute",
            description="the rater labels' attribute holding a model's vector for that label (averaged per rater)")
        props.update(param_inputs(ctx, inputs, RUN.spec))
        if source is not None:
            check_form(props, lambda: check_run(RUN, ctx.target_view(), **source_params(p), **run_params(RUN, p)))
        return form(inputs, "KaLOS: behaviour alignment (BAE)")

    def execute(self, ctx):
        p = ctx.params
        key = p.get("run_key") or DEFAULT_KEY
        res = yield from report_errors(ctx, drive(ctx, bae_steps(ctx.target_view(), **source_params(p),
                                                                 **run_params(RUN, p))))
        yield from finish_run(ctx, f"KaLOS BAE {key!r}: {res.bae:.4f} over {len(res.raters)} raters")
        yield show_card(ctx, "KaLOS: behaviour alignment (BAE)", [
            ("BAE (1 = the model reproduces the pairwise α)", res.bae), ("Raters compared", ", ".join(res.raters)),
            ("Left out (labels or vectors only)", ", ".join(res.only_labels + res.only_embeddings) or "none")],
            written_by(ctx.dataset, key), key, "Open the panel 'KaLOS: Behaviour alignment'.")
