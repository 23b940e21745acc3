"""Operator ``calibrate``: the distance function and the threshold τ* from the raters' data.

Thin adapter: the form is built here from the parameters of
:class:`kalos_core.calibration.CalibrationConfig` (:func:`operators.forms.param_inputs`), the work
is done by :mod:`..fiftyone_layer.measures.calibrate` (and the engine, :mod:`kalos_core.calibration`).
"""

from __future__ import annotations

import fiftyone.operators as foo

from kalos_core.calibration import default_distances
from kalos_core.geometry import distances_for

from ..fiftyone_layer import run_store
from ..fiftyone_layer.measures.calibrate import DEFAULT_KEY, METHOD, RUN, calibrate_run, calibrate_run_steps, validate_calibration_key
from .cards import show_card, written_by
from .common import form, check_form, drive, progress_op, report_errors, run_or_delegate, setup_inputs, source_params
from .forms import param_inputs
from ..fiftyone_layer.measure_runs import check_run, run_params


class Calibrate(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="calibrate", label="KaLOS: calibrate threshold", dynamic=True, execute_as_generator=True,
            allow_delegated_execution=True, icon="/assets/icon.svg",
            description="Choose the distance, its threshold τ* (a distance) and the similarity threshold "
                        "1 - τ* from same-image vs cross-image disagreement (KS separation, density crossing, "
                        "bootstrap CI)",
        )

    def __call__(self, sample_collection, delegate=False, **params):
        """Python entry: same parameters as the form; ``delegate=True`` queues it for
        ``fiftyone delegated launch`` instead of running it here."""
        return run_or_delegate(self, calibrate_run, sample_collection, delegate, params)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(ctx, run_store.unused_key(ds, DEFAULT_KEY, METHOD),
                                      lambda key: validate_calibration_key(ds, key, bool(p.get("overwrite"))),
                                      existing=run_store.described(ds, METHOD),
                                      description="the calibration is stored as a custom run under this key")
        props = dict(inputs.properties)
        # the distances of the labels' kind to pick from (none to show before the labels are chosen)
        kind = source.kind if source is not None else None
        distances = {"distances": {"choices": list(distances_for(kind)), "default": list(default_distances(kind))}} \
            if kind else {}
        props.update(param_inputs(ctx, inputs, RUN.spec, skip=() if kind else ("distances",), overrides=distances))
        if source is not None:
            key = run_store.unused_key(ds, DEFAULT_KEY, METHOD)
            check_form(props, lambda: check_run(RUN, ctx.target_view(), **source_params(p), **run_params(RUN, p, key)))
        return form(inputs, "KaLOS: calibrate threshold")

    def execute(self, ctx):
        steps = calibrate_run_steps(ctx.target_view(), **source_params(ctx.params), **run_params(RUN, ctx.params))
        result = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: calibration failed")
        done = progress_op(ctx, 1.0, "done")
        if done is not None:
            yield done
        rec = result.recommended
        if not ctx.delegated:
            std = f" (standard {rec.standard_threshold:g})" if rec.standard_threshold is not None else ""
            yield ctx.ops.notify(f"KaLOS calibration: {rec.distance}, τ* {rec.tau_star:.3f}, similarity "
                                 f"threshold {rec.similarity_threshold:.3f}{std}", variant="success")
        best = result.distances[rec.distance]
        key = ctx.params.get("run_key") or DEFAULT_KEY
        yield show_card(ctx, "KaLOS: threshold calibrated", [
            ("Recommended distance", rec.distance), ("τ* (distance)", rec.tau_star),
            ("Similarity threshold t = 1 - τ*", rec.similarity_threshold), ("KS separation", best.ks),
            ("Why", rec.reason)], written_by(ctx.dataset, key), key,
            "Open the panel 'KaLOS: Calibration'; its buttons run 'KaLOS: compute agreement' at this threshold.")
