"""Operator form inputs derived from a measure's declared parameters (:mod:`kalos_core.params`).

One input per parameter, with the declared default, help text and bounds; the value is
checked by the same :meth:`kalos_core.params.Param.check` as the engine and the command line,
and a bad value is a form error on that input. Lists of numbers (thresholds) are typed as
comma-separated text; names are a list, picked from their choices where known (declared, or
given by the operator: ``overrides={name: {"choices": [...]}}``). Advanced parameters follow an
"Advanced" header.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import fiftyone.operators.types as types

from kalos_core.params import Param, groups_of, params_of

from .common import form_error, number_input
from ..fiftyone_layer.errors import SetupError
from ..fiftyone_layer.measure_runs import DEFAULT_CHOICE, value_of

if TYPE_CHECKING:
    from kalos_core.measure import Measure

def form_default(p: Param):
    """The default as the form shows it (lists as comma-separated text)."""
    return p.form_value(p.default)


def param_input(ctx, inputs, p: Param, **overrides):
    """One input for ``p``, with a form error when the value in ``ctx.params`` is refused."""
    options = {"label": p.title, "description": p.help, **overrides}
    default = options.pop("default", form_default(p))
    if p.kind == "names":
        choices = options.pop("choices", None) or (p.options() if p.choices else None)
        view = types.Dropdown(multiple=True) if choices else None
        for c in choices or ():
            view.add_choice(c, label=str(c))
        prop = inputs.list(p.name, types.String(), **({"default": default} if default is not None else {}),
                           **({"view": view} if view is not None else {}), **options)
    elif p.kind == "bool":
        prop = inputs.bool(p.name, default=bool(default), **options)
    elif p.kind in ("int", "float", "fraction"):
        lo = 0.0 if p.kind == "fraction" else (p.lo if p.lo is not None or p.kind != "int" else 0)
        hi = 1.0 if p.kind == "fraction" else p.hi
        prop = number_input(ctx, inputs, p.name, integer=p.kind == "int", lo=lo, hi=hi,
                            **({"default": default} if default is not None else {}), **options)
    elif p.kind == "choice":   # overrides may give the view (a RadioGroup) or the choices (with descriptions)
        view = options.pop("view", None)
        if view is None:
            view = types.Dropdown()
            if p.optional:   # None, "the default rule", as a choice of its own (see DEFAULT_CHOICE)
                view.add_choice(DEFAULT_CHOICE, label="default", description=p.help)
            for c in options.pop("choices", None) or p.options():
                label, about = c if isinstance(c, tuple) else (str(c), None)
                view.add_choice(c[0] if isinstance(c, tuple) else c, label=label, description=about)
        prop = inputs.enum(p.name, view.values(), default=default, view=view, **options)
    else:
        prop = inputs.str(p.name, **({"default": default} if default is not None else {}), **options)
    value = ctx.params.get(p.name)
    if prop.invalid or value in (None, ""):
        return prop
    if "choices" in overrides:   # the form offers its own list: the operator's check names what is not in it
        return prop
    try:
        value_of(p, value)
    except SetupError as e:
        form_error(prop, str(e))
    return prop


def param_inputs(ctx, inputs, measure: Measure, skip=(), overrides: dict | None = None) -> dict:
    """Inputs for every parameter of ``measure`` but ``skip``; returns ``{name: property}``.
    ``overrides[name]`` replaces options of one input (label, description, default)."""
    props, advanced, grouped = {}, [], set()
    for p in measure.params:
        if p.name in skip or p.name in grouped:
            continue
        if p.group:
            members = groups_of(measure.config)[p.group]
            grouped.update(m.name for m in members)
            props[p.group] = group_input(ctx, inputs, p.group, members, **(overrides or {}).get(p.group, {}))
            continue
        if p.advanced:
            advanced.append(p)
            continue
        props[p.name] = param_input(ctx, inputs, p, **(overrides or {}).get(p.name, {}))
    if advanced:
        inputs.view("advanced_header", types.Header(label="Advanced", divider=True))
        for p in advanced:
            props[p.name] = param_input(ctx, inputs, p, **(overrides or {}).get(p.name, {}))
    return props


def declared_inputs(ctx, inputs, config_cls, overrides: dict | None = None) -> dict:
    """Inputs for the fields of a :class:`kalos_core.params.Config` that declares a measure's
    plugin-only inputs (``MeasureRun.inputs``); returns ``{name: property}``."""
    return {p.name: param_input(ctx, inputs, p, **(overrides or {}).get(p.name, {})) for p in params_of(config_cls)}


def group_input(ctx, inputs, group: str, members, **options):
    """One multi-select for a group of boolean parameters; its value is the list of those switched on."""
    view = types.Dropdown(multiple=True)
    for m in members:
        view.add_choice(m.name, label=m.name.replace("_", " "), description=m.help)
    options = {"label": group.replace("_", " ").capitalize(),
               "description": "; ".join(f"{m.name.replace('_', ' ')}: {m.help}" for m in members), **options}
    prop = inputs.list(group, types.String(), default=[m.name for m in members if m.default], view=view, **options)
    chosen = ctx.params.get(group)
    if chosen is not None:
        unknown = [c for c in chosen if c not in {m.name for m in members}] if isinstance(chosen, list) else [chosen]
        if unknown:
            form_error(prop, f"unknown {group} {unknown}; choose among {[m.name for m in members]}")
    return prop


def field_choices(names: dict, multiple: bool = False) -> types.Dropdown:
    """A dropdown of label fields, each shown with its label type (``name -> label class``)."""
    choices = types.Dropdown(multiple=multiple)
    for name, cls in names.items():
        choices.add_choice(name, label=f"{name} ({cls.__name__})")
    return choices

