"""Operators: compute_agreement, delete_agreement_run, browse_disagreements.

Thin adapters: the form is built here, the work is done by :mod:`.runs`.
"""

from __future__ import annotations

import threading

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.geometry import distances_for
from kalos_core.matching import COSTS, SOLVERS

from .adapter import KINDS, label_fields, validate_run_key
from .calibration_runs import latest_calibration, matching_calibration
from .common import progress_op, run_or_delegate, setup_inputs
from .runs import DIAGNOSTICS, METHOD, agreement_runs, compute_agreement_run, delete_agreement_run, disagreement_view


def _floats(text) -> list[float]:
    if isinstance(text, (list, tuple)):
        return [float(v) for v in text]
    return [float(v) for v in str(text or "").replace(";", ",").split(",") if v.strip()]


class ComputeAgreement(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="compute_agreement", label="KaLOS: compute agreement", dynamic=True,
            execute_as_generator=True, allow_delegated_execution=True, icon="/assets/icon.svg",
            description="Krippendorff's alpha after instance matching, per sample and for the dataset",
        )

    def __call__(self, sample_collection, delegate=False, **params):
        """Python entry: same parameters as the form; ``delegate=True`` queues it for
        ``fiftyone delegated launch`` instead of running it here."""
        return run_or_delegate(self, compute_agreement_run, sample_collection, delegate, params)

    def resolve_input(self, ctx):
        inputs, source = setup_inputs(ctx, "kalos", lambda key: validate_run_key(ctx.dataset, key, METHOD),
                                      required=True,
                                      description="results go to <run_key>_alpha, <run_key>_unit, <run_key>_status")
        cal = _calibration(ctx, source)
        inputs.float("threshold", default=cal.similarity_threshold if cal else 0.5, min=0.0, max=1.0,
                     label="Similarity threshold", description="pairs with similarity >= threshold can be matched"
                     + (f" (default: calibration run {cal.key!r})" if cal else ""))
        kind = KINDS.get(source.label_cls) if source else None
        dist = types.Dropdown()
        for name in distances_for(kind) if kind else []:
            dist.add_choice(name, label=name)
        if kind == "box":
            dist.add_choice("mask_iou", label="mask_iou (instance masks of the detections)")
        if kind:
            calibrated = cal.distance if cal and cal.distance in dist.values() else None
            inputs.enum("distance", dist.values(), default=calibrated, label="Distance", view=dist)
        inputs.enum("solver", sorted(SOLVERS), default="greedy", label="Solver", view=types.Dropdown())
        inputs.enum("cost", sorted(COSTS), default="soft", label="Cost", view=types.Dropdown())
        inputs.str("lsa_thresholds", default="0.1,0.3,0.5,0.7,0.9", label="Localisation sensitivity thresholds")
        diag = types.Dropdown(multiple=True)
        for d in DIAGNOSTICS:
            diag.add_choice(d, label=d.replace("_", " "))
        inputs.list("diagnostics", types.String(), default=list(DIAGNOSTICS), label="Diagnostics", view=diag)
        inputs.int("seed", default=0, label="Seed (bootstrap)")
        return types.Property(inputs, view=types.View(label="KaLOS: compute agreement"))

    def execute(self, ctx):
        p = ctx.params
        view = ctx.target_view()
        state = {"done": 0, "total": max(1, len(view))}

        def progress(done, total):
            state["done"], state["total"] = done, total

        box: dict = {}

        def work():
            try:
                box["result"] = compute_agreement_run(
                    view, rater_fields=p.get("rater_fields") if p.get("layout", "rater_fields") == "rater_fields" else None,
                    label_field=p.get("label_field") if p.get("layout") == "rater_attribute" else None,
                    rater_attribute=p.get("rater_attribute") or "rater_id", run_key=p.get("run_key", "kalos"),
                    threshold=p.get("threshold", 0.5), solver=p.get("solver", "greedy"), cost=p.get("cost", "soft"),
                    distance=p.get("distance"), lsa_thresholds=_floats(p.get("lsa_thresholds", "")),
                    diagnostics=p.get("diagnostics", DIAGNOSTICS), seed=p.get("seed", 0),
                    calibration_key=p.get("calibration_key") or _used_calibration(ctx.dataset, p),
                    progress=progress)
            except Exception as e:  # re-raised in the operator's thread
                box["error"] = e

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(0.5)
            op = progress_op(ctx, state["done"] / state["total"], f"KaLOS: {state['done']}/{state['total']} samples")
            if op is not None:
                yield op
        if "error" in box:
            raise box["error"]
        res = box["result"]
        if not ctx.delegated:
            yield ctx.ops.reload_dataset()
            yield ctx.ops.notify(f"KaLOS: mean α {res.mean_alpha:.4f}, global α {res.global_alpha:.4f} "
                                 f"({res.interpretation}) on {res.n_images} samples", variant="success")
        yield ctx.ops.show_output(self._outputs(), {
            "mean_alpha": res.mean_alpha, "global_alpha": res.global_alpha,
            "interpretation": res.interpretation, "n_images": res.n_images})

    @staticmethod
    def _outputs():
        out = types.Object()
        out.float("mean_alpha", label="Mean α (per image)")
        out.float("global_alpha", label="Global α")
        out.str("interpretation", label="Interpretation")
        out.int("n_images", label="Samples")
        return types.Property(out)


def _calibration(ctx, source):
    """The calibration run whose threshold and distance the form offers (newest of the label type)."""
    label_type = source.label_cls.__name__ if source else None
    return latest_calibration(ctx.dataset, label_type) or (latest_calibration(ctx.dataset) if source is None else None)


def _used_calibration(dataset, params) -> str | None:
    """Key of the calibration whose threshold this run uses (None if the threshold is not a calibrated one)."""
    fields = params.get("rater_fields") or [params.get("label_field")]
    cls = label_fields(dataset).get(fields[0]) if fields and fields[0] else None
    ref = matching_calibration(dataset, params.get("threshold", 0.5), cls.__name__ if cls else None)
    return ref.key if ref else None


def _run_choice(ctx, inputs, label: str):
    runs = agreement_runs(ctx.dataset)
    if not runs:
        inputs.view("none", types.Warning(label="No KaLOS agreement run on this dataset yet: run "
                                                "'KaLOS: compute agreement' first."))
        return None
    choices = types.Dropdown()
    for k in runs:
        choices.add_choice(k, label=k)
    return inputs.enum("run_key", choices.values(), default=runs[-1], required=True, label=label, view=choices)


class DeleteAgreementRun(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="delete_agreement_run", label="KaLOS: delete agreement run",
                                  dynamic=True, view_target=False)

    def resolve_input(self, ctx):
        inputs = types.Object()
        prop = _run_choice(ctx, inputs, "Run to delete")
        if prop is not None and ctx.params.get("run_key"):
            cfg = ctx.dataset.get_run_info(ctx.params["run_key"]).config
            inputs.view("fields", types.Notice(label="Removes: " + ", ".join(cfg.fields or [])))
        return types.Property(inputs, view=types.View(label="KaLOS: delete agreement run"))

    def execute(self, ctx):
        removed = delete_agreement_run(ctx.dataset, ctx.params["run_key"])
        ctx.ops.reload_dataset()
        return {"removed": removed}


class BrowseDisagreements(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="browse_disagreements", label="KaLOS: browse disagreements",
                                  dynamic=True, view_target=False)

    def resolve_input(self, ctx):
        inputs = types.Object()
        _run_choice(ctx, inputs, "Agreement run")
        inputs.bool("save", default=True, label="Save as a named view (<run_key>_disagreements)")
        return types.Property(inputs, view=types.View(label="KaLOS: browse disagreements"))

    def execute(self, ctx):
        key = ctx.params["run_key"]
        view = disagreement_view(ctx.dataset, key)
        name = None
        if ctx.params.get("save", True):
            name = f"{key}_disagreements"
            ctx.dataset.save_view(name, view, overwrite=True)
        ctx.ops.set_view(view=view)
        return {"view": name, "samples": len(view)}
