"""What the plugin's forms share: markdown-safe texts, form errors, the rater and run-key inputs,
number inputs with worded bounds, agreement-run choices (no engine logic here). Running an
operator's steps in the App is :mod:`.measure_operator`'s."""

from __future__ import annotations

import math
import re

import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.adapter import RaterSource, SetupError, label_fields, resolve_source
from ..fiftyone_layer.round_fields import round_fields
from ..fiftyone_layer.names import FIELD_NAME_RE, safe_name  # noqa: F401  (re-exported)

#: characters the App's markdown would read as markup in a form's help texts
_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")


def md_text(text):
    """``text`` shown as written where the App renders markdown (labels and help texts of a
    form): ``<run_key>_status_<statuses>`` keeps its underscores and angle brackets."""
    return _MARKDOWN.sub(r"\\\1", text) if isinstance(text, str) else text


def _escape_views(obj) -> None:
    for prop in getattr(obj, "properties", {}).values():
        view = getattr(prop, "view", None)
        for key in ("label", "description", "caption"):
            if view is not None and isinstance(getattr(view, key, None), str):
                setattr(view, key, md_text(getattr(view, key)))
                if key in view._kwargs:
                    view._kwargs[key] = getattr(view, key)
        _escape_views(prop.type)


def form(inputs, label: str):
    """What an operator's ``resolve_input`` returns: ``inputs`` under the title ``label``, every
    label and help text escaped for the App's markdown (:func:`md_text`)."""
    _escape_views(inputs)
    return types.Property(inputs, view=types.View(label=label))


def form_error(prop, message: str):
    """Mark an input property invalid with ``message`` (a form error that blocks execution)."""
    prop.invalid = True
    prop.error_message = message
    return prop


def setup_inputs(ctx, default_key: str, validate_key, existing=None, **key_options):
    """The start of the agreement and calibration forms: the rater inputs, then the run key
    (a form error on it when ``validate_key(key)`` raises :class:`SetupError`).

    ``existing(key)``, when given, describes the stored run ``key`` (None when there is none):
    an ``overwrite`` checkbox carrying that description is then shown after the key, and a
    :class:`SetupError` whose ``param`` is ``"overwrite"`` is shown on it.

    Returns ``(inputs, rater source or None)``."""
    inputs = types.Object()
    ctx.target_view()
    props = rater_inputs(ctx, inputs)
    source = check_setup(ctx, inputs, props)
    key = inputs.str("run_key", default=default_key, label="Run key", **key_options)
    run_key = ctx.params.get("run_key", default_key)
    about = existing(run_key) if existing is not None and isinstance(run_key, str) else None
    props["overwrite"] = None
    if about:
        props["overwrite"] = inputs.bool("overwrite", default=False, label=f"Overwrite the existing run {run_key!r}",
                                         description=f"Replaces it and the fields it wrote: {about}")
    try:
        validate_key(run_key)
    except SetupError as e:
        form_error(props.get(e.param) or key, str(e))
    return inputs, source


def rater_inputs(ctx, inputs) -> dict:
    """Field choices shared by the agreement and calibration forms; returns the props by name."""
    fields = label_fields(ctx.dataset)
    layout = types.RadioGroup()
    layout.add_choice("rater_fields", label="One field per rater")
    layout.add_choice("rater_attribute", label="One field, rater in an attribute")
    inputs.enum("layout", layout.values(), default="rater_fields", label="Label layout", view=layout)
    props = {}
    if ctx.params.get("layout", "rater_fields") == "rater_fields":
        choices = types.Dropdown(multiple=True)
        for name, cls in fields.items():
            choices.add_choice(name, label=f"{name} ({cls.__name__})")
        props["rater_fields"] = inputs.list("rater_fields", types.String(), label="Rater fields",
                                            default=named_rater_fields(ctx.dataset, fields, _view_name(ctx)) or None,
                                            description="one label field per rater (preselected: the fields of "
                                                        "the raters that rater_list names)", view=choices)
    else:
        choices = types.Dropdown()
        for name, cls in fields.items():
            choices.add_choice(name, label=f"{name} ({cls.__name__})")
        props["label_field"] = inputs.enum("label_field", choices.values(), label="Label field", view=choices)
        props["rater_attribute"] = inputs.str("rater_attribute", default="rater_id", label="Rater attribute")
    return props


def _view_name(ctx) -> str | None:
    """The saved view the App has open (None for an unsaved view)."""
    return ctx.request_params.get("view_name") or getattr(ctx.view, "name", None)


def named_rater_fields(dataset, fields: dict, view_name=None) -> list[str]:
    """The label fields of the raters that the samples' ``rater_list`` names, of one label type
    (the first such field's): the importer's ``dataset.info["kalos_import"]["rater_fields"]``
    (field -> rater) says whose a field is, else a field named ``<anything>_<rater>`` or
    ``<rater>``. On a loaded round's saved view only that round's fields, elsewhere none of the
    rounds' (a second round's raters share round 1's names). Empty when fewer than two match or
    there is no ``rater_list``."""
    if not fields or not dataset.has_sample_field("rater_list"):
        return []
    this_round, every_round = round_fields(dataset, view_name)
    fields = {f: c for f, c in fields.items() if (f in this_round if this_round else f not in every_round)}
    named = {str(r) for r in dataset.distinct("rater_list")}
    known = (dataset.info.get("kalos_import") or {}).get("rater_fields") or {}
    by_suffix = {safe_name(r): r for r in named}

    def rater_of(field):
        if field in known:
            return known[field]
        return next((r for suffix, r in by_suffix.items() if field == suffix or field.endswith("_" + suffix)), None)

    picked = [f for f in fields if rater_of(f) in named]
    picked = [f for f in picked if fields[f] is fields[picked[0]]] if picked else []
    return picked if len(picked) >= 2 else []


def check_setup(ctx, inputs, props) -> RaterSource | None:
    """The form's rater source, or None (with a form error on the input at fault when it is bad).

    Rater fields the form preselects but the params lack (the App draws a dynamic form before it
    passes the defaults back) are taken as chosen, into ``ctx.params`` as the App would send them:
    no "choose at least two rater fields" flashes under a field that shows two, and the Python
    entry runs on the same fields. An emptied choice (``[]``) is still an error."""
    params = ctx.params
    preselected = getattr(props.get("rater_fields"), "default", None)
    if params.get("rater_fields") is None and preselected:
        params["rater_fields"] = list(preselected)
    if not (params.get("rater_fields") or params.get("label_field")):
        if "rater_fields" in props:  # nothing chosen yet: say what is needed (Execute stays blocked)
            form_error(props["rater_fields"], "choose at least two rater fields: agreement needs two raters")
        elif "label_field" in props:
            form_error(props["label_field"], "choose the label field that holds every rater's labels")
        return None
    try:
        source = resolve_source(ctx.dataset, params.get("rater_fields"), params.get("label_field"),
                                params.get("rater_attribute") or "rater_id")
    except SetupError as e:
        form_error(props.get(e.param) or next(iter(props.values())), str(e))
        return None
    if not ctx.dataset.has_field("rater_list"):
        inputs.view("no_rater_list", types.Notice(label=(
            "No rater_list field: every rater whose field exists on a sample (an empty label list counts) "
            "is taken as assigned to it; add a rater_list field to say who was assigned.")))
    return source


def check_form(props: dict, check) -> None:
    """Run ``check()``; a :class:`SetupError` becomes a form error on the input it names."""
    try:
        check()
    except SetupError as e:
        prop = props.get(e.param) or props.get("run_key")
        if prop is not None and not prop.invalid:
            form_error(prop, str(e))

def number_input(ctx, inputs, name: str, integer: bool = False, lo=None, hi=None, **options):
    """A number input whose bounds (both included) are checked here, worded as they are meant:
    "must be at most 1", "must be at least 0". (Declaring ``min``/``max`` on the input makes
    FiftyOne say "Value must be less than 1" of a value above 1, although 1 is allowed.)"""
    prop = (inputs.int if integer else inputs.float)(name, **options)
    value = ctx.params.get(name)
    if value is None or value == "":
        return prop
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return form_error(prop, "must be a whole number" if integer else "must be a number")
    if integer and value != int(value):
        return form_error(prop, "must be a whole number")
    def num(v):   # a whole-number bound in full (a seed's 4294967295, not 4.29497e+09)
        return str(int(v)) if integer else f"{v:g}"

    if lo is not None and value < lo:
        return form_error(prop, f"must be at least {num(lo)}" + (f" (and at most {num(hi)})" if hi is not None else ""))
    if hi is not None and value > hi:
        return form_error(prop, f"must be at most {num(hi)}" + (f" (and at least {num(lo)})" if lo is not None else ""))
    return prop


def agreement_run_input(ctx, inputs, name: str, label: str, newest: bool = True, method: str = run_store.AGREEMENT,
                        missing: str = "No KaLOS agreement run on this dataset yet: run 'KaLOS: compute agreement' "
                                       "first."):
    """A dropdown of the dataset's agreement runs (``method``: runs of another kind); None (and the
    warning ``missing``) when there is none.

    ``newest``: the newest run is shown chosen and is the one used when the params lack it (the App
    does not always hand a dynamic form's default to its params, and a field showing a value must
    not then say "Required property"); without it the user must choose (deleting a run)."""
    runs = run_store.runs_of(ctx.dataset, method)
    if not runs:
        inputs.view("none", types.Warning(label=missing))
        return None
    choices = types.Dropdown()
    for k in runs:
        choices.add_choice(k, label=k, description=run_store.describe_run(ctx.dataset, k))
    if newest:
        return inputs.enum(name, choices.values(), default=runs[-1], required=False, label=label, view=choices)
    return inputs.enum(name, choices.values(), required=True, label=label, view=choices)


def chosen_agreement_run(ctx, name: str, method: str = run_store.AGREEMENT):
    """The agreement run (``method``: run of that kind) the form chose: its params value, else the
    newest run (None if none)."""
    runs = run_store.runs_of(ctx.dataset, method)
    return ctx.params.get(name) or (runs[-1] if runs else None)
