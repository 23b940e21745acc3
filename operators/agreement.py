"""Operators: compute_agreement, delete_agreement_run, browse_disagreements, set_label_colors.

Thin adapters: the forms are built here, the work is done by :mod:`..fiftyone_layer.measures.agreement`.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.geometry import DEFAULT_DISTANCE, default_threshold, distances_for
from kalos_core.matching import COSTS, SOLVERS
from kalos_core.params import groups_of
from kalos_core.thresholds import proposed, threshold_text

from ..fiftyone_layer import run_store, status_colors
from ..fiftyone_layer.adapter import SetupError, check_label_attributes
from ..fiftyone_layer.measure_runs import DEFAULT_CHOICE, form_run_params, source_params
from ..fiftyone_layer.measures.agreement import (
    AGREEMENT, DISAGREEMENT, RUN, STATUSES, METHOD, agreement_runs, check_run, color_labels, describe_run,
    rater_sources as agreement_sources,
    disagreement_view, disagreement_view_name, get_agreement_run, unused_run_key,
)
from ..fiftyone_layer.measures.calibrate import latest_calibration, threshold_for
from ..fiftyone_layer.saved_views import save_run_view, select_saved_view
from .cards import delete_and_confirm, show_card
from .common import agreement_run_input, check_form, chosen_agreement_run, form, form_error, setup_inputs
from .forms import param_inputs
from .measure_operator import MeasureOperator, report_errors
from .model_inputs import model_inputs



def _first_line(doc) -> str | None:
    """A registered function's description: the first paragraph of its docstring."""
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else None


def _run_params(p, default_key: str = "kalos") -> dict:
    """The run key (``default_key`` when none is given), overwrite and the measure's parameters of a form's values."""
    return form_run_params(p, default_key, [q.name for q in AGREEMENT.params] + list(groups_of(AGREEMENT.config)))


class ComputeAgreement(MeasureOperator):
    RUN = RUN

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs, source = setup_inputs(
            ctx, unused_run_key(ds), lambda key: run_store.validate_key(ds, key, METHOD, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, METHOD), required=True, description=RUN.app.key_help)
        cal = _calibration(ctx, source)
        kind = source.kind if source else None
        distances = list(distances_for(kind)) + (["mask_iou"] if kind == "box" else []) if kind else []
        calibrated = cal.distance if cal and cal.distance in distances else None
        chosen = p.get("distance")   # "default": the label type's, whatever a calibration recommends
        chosen = None if chosen == DEFAULT_CHOICE else chosen or calibrated
        threshold, why = _threshold_default(ctx, source, cal, chosen)
        props = dict(inputs.properties)
        props.update(param_inputs(ctx, inputs, AGREEMENT, skip=() if kind else ("distance",), overrides={
            "threshold": {"default": threshold, "description": (
                "two labels of different raters can be matched when their similarity (1 - distance) is at least "
                f"this, within [0, 1]; {why}")},
            "distance": {"choices": [(d, "instance masks of the detections" if d == "mask_iou" else None)
                                     for d in distances], "default": calibrated,
                         "description": f"how two {kind} labels are compared; empty = the label type's default "
                                        "(docs/method.md lists them)"},
            "solver": {"choices": [(n, _first_line(f.__doc__)) for n, f in SOLVERS.items()]},
            "cost": {"choices": [(n, _first_line(f.__doc__)) for n, f in COSTS.items()]},
            "lsa_thresholds": {"label": "Localisation sensitivity thresholds",
                               "description": "α is recomputed at each of these similarity thresholds (within "
                                              "[0, 1], separated by commas; empty = none) for the sensitivity panel"},
            "seed": {"label": "Seed (bootstrap)"}}))
        model_inputs(ctx, inputs, source)
        if source is not None:
            _check_target(ctx, inputs, source)
            check_form(props, lambda: check_run(ctx.target_view(), **source_params(p),
                                                **_run_params(p, unused_run_key(ds))))
        return form(inputs, RUN.app.label)


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


def _threshold_default(ctx, source, cal, distance: str | None) -> tuple[float, str]:
    """The threshold the form proposes for ``distance`` (None: the label type's default) and
    where it comes from: the newest calibration run that calibrated that distance, else the
    distance's standard value (switching the distance switches the threshold with it)."""
    if source is None:
        return (proposed(cal.similarity_threshold), f"default from calibration run {cal.key!r}") if cal else (
            0.5, "'KaLOS: calibrate threshold' recommends one")
    distance = distance or DEFAULT_DISTANCE.get(source.kind)
    ref, t = threshold_for(ctx.dataset, distance, source.label_cls.__name__)
    if ref is not None:   # the calibrated threshold as every text shows it (the run uses what the form holds)
        return proposed(t), (f"default: the threshold calibration run {ref.key!r} found for {distance}, "
                             f"{threshold_text(t)}")
    return default_threshold(source.kind, distance), (
        f"default: the standard value for {distance} (no calibration run calibrated it; "
        "'KaLOS: calibrate threshold' finds one)")


def _run_choice(ctx, inputs, label: str, newest: bool = True):
    prop = agreement_run_input(ctx, inputs, "run_key", label, newest=newest)
    key = ctx.params.get("run_key")
    if prop is not None and key is not None and key not in agreement_runs(ctx.dataset):
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
                                  dynamic=True, view_target=False, execute_as_generator=True, icon="/assets/icon.svg")

    def resolve_input(self, ctx):
        inputs = types.Object()
        prop = _run_choice(ctx, inputs, "Run to delete", newest=False)
        key = ctx.params.get("run_key")
        if prop is not None and key:
            paths, views = run_store.owned(ctx.dataset, key)
            owned = paths + [f"saved view {v}" for v in views] + [
                f"tag {t} (where this run added it)" for t in run_store.recorded_tags(ctx.dataset, key)]
            inputs.view("fields", types.Notice(label=f"{describe_run(ctx.dataset, key)}. Removes: " + ", ".join(owned)))
        return form(inputs, "KaLOS: delete agreement run")

    def execute(self, ctx):
        yield from report_errors(ctx, delete_and_confirm(ctx, ctx.params.get("run_key"), METHOD),
                                 "KaLOS: the run was not deleted")


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
        key = chosen_agreement_run(ctx, "run_key")
        unknown = [c for c in chosen if c not in STATUSES] if isinstance(chosen, list) else [chosen]
        if not chosen:
            form_error(prop, "choose at least one status")
        elif unknown:
            form_error(prop, f"not a label status: {', '.join(map(str, unknown))}; choose among {', '.join(STATUSES)}")
        elif key:
            try:
                run_store.check_view_free(ctx.dataset, key, disagreement_view_name(key, chosen))
            except SetupError as e:
                form_error(prop, str(e))
        return form(inputs, "KaLOS: browse disagreements")

    def execute(self, ctx):
        key = chosen_agreement_run(ctx, "run_key")
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
        yield show_card(ctx, "KaLOS: disagreements saved as a view", [("Samples in the view", n)],
                        f"saved view {name} (selected now)", key,
                        "Click a label in the grid to see its status and partner; the view stays under "
                        "the saved views.", view=name, samples=n)


class SetLabelColors(foo.Operator):
    """How the rater fields' labels are coloured in the grid and the sample view: by agreement
    status, by rater (each rater its own colour-blind-safe colour), or the user's own colours as
    they were before KaLOS; later agreement runs keep the choice. Only the App's colour scheme
    changes, never a label."""

    @property
    def config(self):
        return foo.OperatorConfig(name="set_label_colors", label="KaLOS: colour labels by status or rater",
                                  dynamic=True, view_target=False, icon="/assets/icon.svg", execute_as_generator=True,
                                  description="Colour the raters' labels by agreement status, by rater, or as before KaLOS")

    def resolve_input(self, ctx):
        inputs = types.Object()
        choices = types.RadioGroup()
        for name, label in status_colors.MODES.items():
            choices.add_choice(name, label=label)
        inputs.enum("color_by", choices.values(), default=status_colors.mode(ctx.dataset), required=True,
                    label="Colour the raters' labels by", view=choices,
                    description="every agreement run's rater fields; the α bubbles on the tiles keep their "
                                "band colours. Later runs colour their fields the same way.")
        if not agreement_runs(ctx.dataset):
            inputs.view("none", types.Notice(label="No agreement run yet: the choice applies to the first one."))
        return form(inputs, "KaLOS: colour labels by status or rater")

    def execute(self, ctx):
        chosen = ctx.params.get("color_by") or "status"

        def work():
            color_labels(ctx.dataset, chosen)
            yield from ()

        yield from report_errors(ctx, work())
        if not ctx.delegated:
            yield status_colors.refresh_app(ctx)
        fields = sorted({f for _, (fs, _, _) in agreement_sources(ctx.dataset) for f in fs})
        yield show_card(ctx, "KaLOS: label colours set", [("Fields coloured", len(fields))],
                        "the data set's App colour scheme (no label changed)", None,
                        f"Labels of {', '.join(fields) or 'the next agreement run'} coloured by: "
                        f"{status_colors.MODES[chosen]}. Tick the fields in the sidebar to see them.",
                        color_by=chosen, fields=fields)
