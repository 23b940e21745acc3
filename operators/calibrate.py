"""Operator ``calibrate``: the distance function and the threshold τ* from the raters' data.

Thin adapter: the form is built here, the work is done by
:mod:`.calibration_runs` (and the engine, :mod:`kalos_core.calibration`).
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.calibration import default_distances
from kalos_core.geometry import distances_for

from . import run_store
from .calibration_runs import DEFAULT_KEY, METHOD, calibrate_run, calibrate_run_steps, validate_calibration_key
from .common import (
    drive, form_error, number_input, progress_op, report_errors, result_card, run_or_delegate, setup_inputs,
    show_result, source_params,
)


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
        overwrite = bool(ctx.params.get("overwrite"))
        inputs, source = setup_inputs(ctx, run_store.unused_key(ctx.dataset, DEFAULT_KEY, METHOD),
                                      lambda key: validate_calibration_key(ctx.dataset, key, overwrite),
                                      existing=lambda key: (run_store.describe_run(ctx.dataset, key)
                                                            if run_store.run_method(ctx.dataset, key) == METHOD else None),
                                      description="the calibration is stored as a custom run under this key")
        kind = source.kind if source else None
        if kind:
            names = distances_for(kind)
            choices = types.Dropdown(multiple=True)
            for name in names:
                choices.add_choice(name, label=name)
            prop = inputs.list("distances", types.String(), default=list(default_distances(kind)),
                               label="Distances to compare", view=choices,
                               description="the one with the highest KS separation is recommended")
            unknown = [d for d in ctx.params.get("distances") or [] if d not in names]
            if unknown:
                form_error(prop, f"not a {kind} distance: {', '.join(unknown)}")
        number_input(ctx, inputs, "bootstrap", integer=True, lo=0, hi=10000, default=100, label="Bootstrap resamples",
                     description="percentile bootstrap over samples for the intervals of τ* and KS (0 = none)")
        number_input(ctx, inputs, "seed", integer=True, lo=0, default=0, label="Seed",
                     description="seed of the bootstrap: same seed, same result")
        inputs.bool("stratify", default=False, label="Size strata",
                    description="also calibrate small / medium / large objects separately")
        return types.Property(inputs, view=types.View(label="KaLOS: calibrate threshold"))

    def execute(self, ctx):
        p = ctx.params
        steps = calibrate_run_steps(
            ctx.target_view(), **source_params(p), run_key=p.get("run_key") or DEFAULT_KEY,
            distances=p.get("distances") or None, seed=p.get("seed", 0), bootstrap=p.get("bootstrap", 100),
            stratify=p.get("stratify", False), overwrite=bool(p.get("overwrite")))
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
        yield show_result(ctx, self._outputs(), {
            "distance": rec.distance, "tau_star": float(rec.tau_star),
            "similarity_threshold": float(rec.similarity_threshold),
            "ks": float(best.ks), "reason": rec.reason})

    @staticmethod
    def _outputs():
        return result_card(
            ("str", "distance", "Recommended distance"),
            ("float", "tau_star", "τ* (distance)"),
            ("float", "similarity_threshold", "Similarity threshold (1 - τ*)"),
            ("float", "ks", "KS separation"),
            ("str", "reason", "Why"))
