"""Operators: compute_agreement, delete_agreement_run, browse_disagreements.

Thin adapters: the form is built here, the work is done by :mod:`.runs`.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.geometry import distances_for
from kalos_core.matching import COSTS, SOLVERS

from . import run_store, status_colors
from .adapter import KINDS, SetupError, check_label_attributes, label_fields
from .calibration_runs import latest_calibration, matching_calibration
from .common import (drive, form_error, number_input, report_errors, result_card, run_or_delegate, setup_inputs,
                     show_result, source_params)
from .model_inputs import model_inputs, model_params
from .saved_views import save_run_view, select_saved_view
from .runs import (
    DIAGNOSTICS, DISAGREEMENT, STATUSES, METHOD, agreement_runs, compute_agreement_run, compute_agreement_steps, delete_agreement_run,
    describe_run, disagreement_view, disagreement_view_name, get_agreement_run, parse_thresholds, unused_run_key,
)



SOLVER_HELP = {
    "greedy": "Greedy (reference): accept candidate pairs by ascending cost",
    "shm": "Sequential Hungarian: optimal assignment, one rater after another",
    "ahc": "Agglomerative clustering (complete linkage)",
    "mgm": "Multi-graph matching: units of least total cost, every pair in a unit a candidate",
}
COST_HELP = {
    "soft": "ψsoft, category lenient: every same-class pair beats every cross-class pair",
    "neg": "ψneg: similarity only, class-blind",
}
DIAGNOSTIC_HELP = {
    "vitality": "α with and without each rater: consensus builders and sources of noise",
    "class_difficulty": "per class: α of the units in which a rater used the class",
    "collaboration": "α of every pair of raters, matched on the two alone",
    "intra_rater": "α among the sessions of a rater who labelled an image more than once",
}


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
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, unused_run_key(ds), lambda key: run_store.validate_key(ds, key, METHOD, overwrite=bool(p.get("overwrite"))),
            existing=lambda key: describe_run(ds, key) if run_store.run_method(ds, key) == METHOD else None,
            required=True, description="results go to <run_key>_alpha, <run_key>_unit, <run_key>_status")
        cal = _calibration(ctx, source)
        number_input(ctx, inputs, "threshold", lo=0.0, hi=1.0, default=cal.similarity_threshold if cal else 0.5,
                     label="Similarity threshold", description=(
                         "two labels of different raters can be matched when their similarity (1 - distance) is "
                         "at least this, within [0, 1]" + (f"; default from calibration run {cal.key!r}" if cal
                                                           else "; 'KaLOS: calibrate threshold' recommends one")))
        kind = KINDS.get(source.label_cls) if source else None
        dist = types.Dropdown()
        for name in distances_for(kind) if kind else []:
            dist.add_choice(name, label=name)
        if kind == "box":
            dist.add_choice("mask_iou", label="mask_iou (instance masks of the detections)")
        if kind:
            calibrated = cal.distance if cal and cal.distance in dist.values() else None
            inputs.enum("distance", dist.values(), default=calibrated, label="Distance", view=dist,
                        description=f"how two {kind} labels are compared; empty = the label type's default "
                                    "(docs/method.md lists them)")
        solvers = types.Dropdown()
        for name in SOLVERS:  # the registry decides what is offered; a new solver shows up here
            about = SOLVER_HELP.get(name, name)
            solvers.add_choice(name, label=name, description=about)
        inputs.enum("solver", solvers.values(), default="greedy", label="Solver", view=solvers,
                    description="how labels of different raters are grouped into units (each unit holds at most "
                                "one label per rater); greedy is the reference")
        costs = types.Dropdown()
        for name in COSTS:
            about = COST_HELP.get(name, name)
            costs.add_choice(name, label=name, description=about)
        inputs.enum("cost", costs.values(), default="soft", label="Cost", view=costs,
                    description="the cost the solver minimises: soft prefers same-class pairs, neg ignores the class")
        lsa = inputs.str("lsa_thresholds", default="0.1,0.3,0.5,0.7,0.9", label="Localisation sensitivity thresholds",
                         description="α is recomputed at each of these similarity thresholds (within [0, 1], "
                                     "separated by commas; empty = none) for the sensitivity panel")
        diag = types.Dropdown(multiple=True)
        for d in DIAGNOSTICS:
            diag.add_choice(d, label=d.replace("_", " "), description=DIAGNOSTIC_HELP.get(d))
        inputs.list("diagnostics", types.String(), default=list(DIAGNOSTICS), label="Diagnostics", view=diag,
                    description="extra analyses stored with the run for the panels: vitality (each rater's "
                                "effect on α), class difficulty, collaboration (pairwise α), intra-rater "
                                "(sessions of one rater)")
        number_input(ctx, inputs, "seed", integer=True, lo=0, default=0, label="Seed (bootstrap)",
                     description="seed of the bootstrap confidence interval of the mean α: same seed, same "
                                 "interval (a whole number, at least 0)")
        model_inputs(ctx, inputs, source)
        try:
            parse_thresholds(p.get("lsa_thresholds", ""))
        except SetupError as e:
            form_error(lsa, str(e))
        if source is not None:
            _check_target(ctx, inputs, source)
        return types.Property(inputs, view=types.View(label="KaLOS: compute agreement"))

    def execute(self, ctx):
        p = ctx.params
        steps = compute_agreement_steps(
            ctx.target_view(), **source_params(p), run_key=p.get("run_key") or "kalos",
            threshold=p.get("threshold", 0.5), solver=p.get("solver", "greedy"), cost=p.get("cost", "soft"),
            distance=p.get("distance"), lsa_thresholds=p.get("lsa_thresholds", ""),
            diagnostics=p.get("diagnostics", DIAGNOSTICS), seed=p.get("seed", 0),
            calibration_key=p.get("calibration_key") or _used_calibration(ctx.dataset, p),
            overwrite=bool(p.get("overwrite")), **model_params(p))
        res = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: compute agreement failed")
        ci = res.mean_alpha_ci
        ci_text = f" (95% CI {ci[0]:.3f} – {ci[1]:.3f})" if ci else ""
        if not ctx.delegated:
            yield ctx.ops.reload_dataset()
            yield status_colors.refresh_app(ctx)
            yield ctx.ops.notify(f"KaLOS run {p.get('run_key')!r}: mean α {res.mean_alpha:.3f}{ci_text}, global α "
                                 f"{res.global_alpha:.3f} ({res.interpretation}) on {res.n_images} samples",
                                 variant="success")
        yield show_result(ctx, self._outputs(), {
            "run_key": p.get("run_key"), "mean_alpha": res.mean_alpha,
            "mean_alpha_ci": ci_text.strip(" ()") or "none (bootstrap off)", "global_alpha": res.global_alpha,
            "interpretation": res.interpretation, "n_images": res.n_images,
            "next": "Open the KaLOS panels (Overview, Vitality, ...) to explore the run."})

    @staticmethod
    def _outputs():
        return result_card(
            ("str", "run_key", "Run key"),
            ("float", "mean_alpha", "Mean α (per image)"),
            ("str", "mean_alpha_ci", "Confidence interval of the mean α"),
            ("float", "global_alpha", "Global α"),
            ("str", "interpretation", "Interpretation"),
            ("int", "n_images", "Samples"),
            ("str", "next", "Next"))


def _check_target(ctx, inputs, source):
    """Form errors known before running: an empty view; label attributes the run would overwrite."""
    key = ctx.params.get("run_key")
    props = inputs.properties
    if len(ctx.target_view()) == 0:
        form_error(props["run_key"], "the view has no samples: nothing to compute")
        return
    if isinstance(key, str) and not props["run_key"].invalid:
        try:
            check_label_attributes(ctx.dataset, source, key)
        except SetupError as e:
            form_error(props["run_key"], str(e))


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
    prop = inputs.enum("run_key", choices.values(), default=runs[-1], required=True, label=label, view=choices)
    key = ctx.params.get("run_key")
    if key is not None and key not in runs:
        try:
            get_agreement_run(ctx.dataset, key)
        except SetupError as e:
            form_error(prop, str(e))
        return None
    return prop


class DeleteAgreementRun(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="delete_agreement_run", label="KaLOS: delete agreement run",
                                  dynamic=True, view_target=False, icon="/assets/icon.svg")

    def resolve_input(self, ctx):
        inputs = types.Object()
        prop = _run_choice(ctx, inputs, "Run to delete")
        key = ctx.params.get("run_key")
        if prop is not None and key:
            paths, views = run_store.owned(ctx.dataset, key)
            owned = paths + [f"saved view {v}" for v in views] + [
                f"tag {t} (where this run added it)" for t in run_store.recorded_tags(ctx.dataset, key)]
            inputs.view("fields", types.Notice(label=f"{describe_run(ctx.dataset, key)}. Removes: " + ", ".join(owned)))
        return types.Property(inputs, view=types.View(label="KaLOS: delete agreement run"))

    def execute(self, ctx):
        removed = delete_agreement_run(ctx.dataset, ctx.params["run_key"])
        ctx.ops.reload_dataset()
        status_colors.refresh_app(ctx)
        return {"removed": removed}


class BrowseDisagreements(foo.Operator):
    """One status filter over every rater field: the samples holding labels of the chosen statuses,
    only the run's fields, only those labels; saved under a name and shown as the selected view."""

    @property
    def config(self):
        return foo.OperatorConfig(name="browse_disagreements", label="KaLOS: browse disagreements",
                                  dynamic=True, view_target=False, icon="/assets/icon.svg", execute_as_generator=True,
                                  description="Show the labels of an agreement run by status, in every rater field")

    def resolve_input(self, ctx):
        inputs = types.Object()
        _run_choice(ctx, inputs, "Agreement run")
        choices = types.Dropdown(multiple=True)
        for s in STATUSES:
            choices.add_choice(s, label=s.replace("_", " "))
        prop = inputs.list("statuses", types.String(), default=list(DISAGREEMENT), label="Show labels with status",
                           description="in every rater field of the run at once; samples without such a label are "
                                       "left out. The view is saved as <run_key>_disagreements (the default "
                                       "statuses) or <run_key>_status_<statuses>", view=choices)
        chosen = ctx.params.get("statuses", list(DISAGREEMENT))
        if not chosen:
            form_error(prop, "choose at least one status")
        elif ctx.params.get("run_key"):
            try:
                run_store.check_view_free(ctx.dataset, ctx.params["run_key"],
                                          disagreement_view_name(ctx.params["run_key"], chosen))
            except SetupError as e:
                form_error(prop, str(e))
        return types.Property(inputs, view=types.View(label="KaLOS: browse disagreements"))

    def execute(self, ctx):
        key = ctx.params["run_key"]
        statuses = ctx.params.get("statuses") or list(DISAGREEMENT)
        view = disagreement_view(ctx.dataset, key, statuses)
        name = disagreement_view_name(key, statuses)

        def work():
            save_run_view(ctx.dataset, key, name, view, param="statuses",
                          description=f"KaLOS run {key!r}: labels with status " + ", ".join(statuses))
            yield from ()

        yield from report_errors(ctx, work())
        n = len(view)
        yield from select_saved_view(ctx, name)
        yield show_result(ctx, result_card(("str", "view", "Saved view (selected)"), ("int", "samples", "Samples")),
                          {"view": name, "samples": n})
