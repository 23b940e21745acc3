"""Operators send_to_label_studio and load_label_studio_round: the forms of
:mod:`..fiftyone_layer.label_studio_round` (a second round in Label Studio)."""

from __future__ import annotations

import os

import fiftyone.operators as foo
from fiftyone.operators import types

from ..fiftyone_layer.label_studio_api import (
    default_api_key,
    missing_files,
    sdk_problem,
    stored_url,
)
from ..fiftyone_layer.label_studio_round import (
    DEFAULT_URL,
    free_round_key,
    load_label_studio_round,
    review_classes,
    send_review_to_label_studio,
)
from ..fiftyone_layer.saved_views import select_saved_view
from .cards import show_card
from .common import FIELD_NAME_RE, form, form_error
from .measure_operator import report_errors


def _review_view(dataset) -> str | None:
    """The newest saved view named like a review queue, else the newest saved view."""
    views = dataset.list_saved_views()
    return ([v for v in views if v.endswith("_review")] or views or [None])[-1]


def _no_sdk(inputs) -> bool:
    """A warning that says what to install when FiftyOne's Label Studio backend cannot run here."""
    problem = sdk_problem()
    if problem:
        inputs.view("no_sdk", types.Warning(label="The Label Studio SDK is missing", description=problem))
    return bool(problem)


def _credentials(inputs, url: str | None) -> None:
    """The server's URL and API key (default: FiftyOne's, ``FIFTYONE_LABELSTUDIO_API_KEY``)."""
    inputs.str("url", default=url or DEFAULT_URL, label="Label Studio URL")
    key = default_api_key()
    inputs.str("api_key", required=not key, default=key, label="Label Studio API token (legacy token)",
               description="Account & Settings > Legacy token in Label Studio")


def _classes(inputs, dataset, params) -> None:
    """The classes the raters may draw: by default those of the rater fields, said in one line (LVIS has
    hundreds); ticking *Choose the classes* shows them as an editable list."""
    found = review_classes(dataset)
    shown = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "")
    inputs.bool("choose_classes", default=False, label="Choose the classes", view=types.CheckboxView(),
                description=f"Default: the {len(found)} classes of the rater fields ({shown or 'none'})"
                if found else "The rater fields hold no classes: tick this and list the classes to draw")
    if params.get("choose_classes") or not found:
        inputs.list("classes", types.String(), default=found, label="Classes")


def _ls_runs(dataset) -> list[str]:
    return [k for k in dataset.list_annotation_runs()
            if getattr(dataset.get_annotation_info(k).config, "method", None) == "labelstudio"]


class SendToLabelStudio(foo.Operator):
    """A saved review view to Label Studio: the images only, several annotators per task."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="send_to_label_studio", label="KaLOS: send for a second round (Label Studio)", dynamic=True,
            view_target=False, execute_as_generator=True, icon="/assets/icon.svg",
            description="Upload a saved view's images (e.g. the review queue) to a Label Studio project, without "
                        "anyone's labels, for several annotators per task")

    def resolve_input(self, ctx):
        ds, p, inputs = ctx.dataset, ctx.params, types.Object()
        views = ds.list_saved_views()
        if _no_sdk(inputs):
            return form(inputs, "KaLOS: send for a second round")
        if not views:
            inputs.view("none", types.Warning(label="No saved view: run 'KaLOS: tag for review' first"))
            return form(inputs, "KaLOS: send for a second round")
        # defaults are not required: the App may leave a shown default out of the params
        chosen = inputs.enum("view_name", views, default=_review_view(ds), label="Saved view to send",
                             view=types.Dropdown())
        name = p.get("view_name") or _review_view(ds)
        problem = missing_files(ds.load_saved_view(name)) if name in views else None
        if problem:
            form_error(chosen, problem)
        free = free_round_key(ds)
        key = inputs.str("anno_key", default=free, label="Annotation key (the round's name)")
        if (p.get("anno_key") or free) in ds.list_annotation_runs():
            form_error(key, f"annotation run {p['anno_key']!r} exists; choose another key (free: {free!r})")
        _credentials(inputs, os.environ.get("FIFTYONE_LABELSTUDIO_URL"))
        _classes(inputs, ds, p)
        inputs.int("raters_per_task", default=2, label="Annotators per task")
        return form(inputs, "KaLOS: send for a second round")

    def execute(self, ctx):
        p = ctx.params
        # the list is shown (and read) when ticked, or when the rater fields hold no classes
        classes = p.get("classes") if p.get("choose_classes") or not review_classes(ctx.dataset) else None

        def work():
            return send_review_to_label_studio(ctx.dataset, p.get("view_name") or _review_view(ctx.dataset),
                                               p.get("anno_key") or free_round_key(ctx.dataset),
                                               p.get("url") or DEFAULT_URL, p.get("api_key") or default_api_key(),
                                               classes,
                                               int(p.get("raters_per_task", 2)))
            yield  # unreachable: makes this a generator for report_errors

        results = yield from report_errors(ctx, work(), "KaLOS: sending to Label Studio failed")
        yield show_card(ctx, "KaLOS: sent to Label Studio", [("Tasks", len(results.uploaded_tasks))],
                        f"project {p.get('url') or DEFAULT_URL}/projects/{results.project_id}", None,
                        "When the annotators are done: 'KaLOS: load a Label Studio round'.")


class LoadLabelStudioRound(foo.Operator):
    """Every annotator's work of a Label Studio round as one field per annotator."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_label_studio_round", label="KaLOS: load a Label Studio round", dynamic=True,
            view_target=False, execute_as_generator=True, icon="/assets/icon.svg",
            description="Every annotator's annotations of a Label Studio round as <prefix>_<annotator> fields")

    def resolve_input(self, ctx):
        ds, p, inputs = ctx.dataset, ctx.params, types.Object()
        runs = _ls_runs(ds)
        if _no_sdk(inputs):
            return form(inputs, "KaLOS: load a Label Studio round")
        if not runs:
            inputs.view("none", types.Warning(label="No Label Studio round: 'KaLOS: send for a second round' first"))
            return form(inputs, "KaLOS: load a Label Studio round")
        inputs.enum("anno_key", runs, default=runs[-1], label="Round", view=types.Dropdown())
        _credentials(inputs, stored_url(ds, p.get("anno_key") or runs[-1]))
        prefix = inputs.str("prefix", default="round2", label="Field prefix")
        value = p.get("prefix", "round2") or ""
        if not FIELD_NAME_RE.match(value):
            form_error(prefix, "start with a letter; letters, digits and _ only")
        row = types.Object()
        row.str("annotator", label="Annotator (email in Label Studio)")
        row.str("rater", label="Rater name (e.g. the round-1 name)")
        inputs.list("rater_names", row, label="Rater names (optional)",
                    description="Name an annotator like a round-1 rater to follow that rater across rounds")
        return form(inputs, "KaLOS: load a Label Studio round")

    def execute(self, ctx):
        p = ctx.params
        names = {r["annotator"]: r["rater"] for r in p.get("rater_names") or [] if r.get("annotator") and r.get("rater")}

        def work():
            return load_label_studio_round(ctx.dataset, p.get("anno_key") or _ls_runs(ctx.dataset)[-1],
                                           p.get("prefix") or "round2", names, p.get("url"), p.get("api_key"))
            yield  # unreachable: makes this a generator for report_errors

        out = yield from report_errors(ctx, work(), "KaLOS: loading the round failed")
        yield from select_saved_view(ctx, out["view"])
        left = ", ".join(f"{v} {k}" for k, v in out["left_out"].items() if v) or "nothing"
        yield show_card(ctx, "KaLOS: round loaded", [("Samples", out["samples"]), ("Labels", out["labels"]),
                                                     ("Tasks", out["tasks"]), ("Left out", left)],
                        "fields " + ", ".join(sorted(out["fields"])) + f"; saved view {out['view']} (selected now)",
                        None, f"Run 'KaLOS: compute agreement' on this view with the fields {', '.join(sorted(out['fields']))}; "
                              "then compare the two runs in the Overview and Collaboration panels.")
