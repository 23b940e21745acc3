"""The one result card every KaLOS operator ends with, and the one number format it uses.

A card reads, top to bottom: the headline numbers, what was written where, the run key, what
to open next. Its values are text, numbers rounded for people by :func:`human` (α 0.512, not
0.5119505770595647, :func:`..fiftyone_layer.registry.human`); ``data`` carries machine-readable extras (Python callers and tests read
them from the shown results; the App shows only the card's rows).
"""

from __future__ import annotations

import json

import fiftyone.operators.types as types

from kalos_core.jsonsafe import json_safe

from ..fiftyone_layer import run_store, status_colors
from ..fiftyone_layer.registry import human, interval  # noqa: F401  (the cards' number format, re-exported)

NO_RUN = "none (nothing stored as a run)"


def written_by(dataset, run_key: str) -> str:
    """What the stored run ``run_key`` wrote, compactly: its sample fields, its label attributes
    and the fields holding them, its saved views (from the run store)."""
    paths, views = run_store.owned(dataset, run_key)
    return describe_paths(paths, views) or f"the run {run_key!r} only (stored results; no field written)"


def describe_paths(paths, views=()) -> str:
    """``"fields a, b; label attributes x, y on the labels of f, g; saved view v"``."""
    fields = [p for p in paths if "." not in p]
    on = {}
    for p in paths:
        if "." in p:
            on.setdefault(p.rsplit(".", 1)[1], []).append(p.split(".", 1)[0])
    parts = [("field " if len(fields) == 1 else "fields ") + ", ".join(fields)] if fields else []
    holders = list(dict.fromkeys(f for fs in on.values() for f in fs))
    if on:
        parts.append(("label attribute " if len(on) == 1 else "label attributes ") + ", ".join(on)
                     + " on the labels of " + ", ".join(holders))
    return "; ".join(parts + [f"saved view {v}" for v in views])


def card(title: str, numbers=(), written: str = "", run_key: str | None = None, next_step: str = "", **data):
    """``(outputs, results)`` of a result card for :func:`show_result`: ``title`` in a success box,
    ``numbers`` as ``(label, value)`` rows (values through :func:`human`), then Written, Run key, Next."""
    out = types.Object()
    out.view("title", types.Success(label=title))     # the App does not show the card's own label
    results = {}
    rows = [(f"n{i}", label, human(value)) for i, (label, value) in enumerate(numbers)]
    rows += [("written", "Written", written or "nothing"), ("run_key", "Run key", run_key or NO_RUN),
             ("next", "Next", next_step)]
    for name, label, text in rows:
        out.str(name, label=label)
        results[name] = text
    results.update(data)
    return types.Property(out, view=types.View(label=title)), results


def show_result(ctx, outputs, results: dict):
    """``ctx.ops.show_output`` as the App reads it: ``outputs`` (a Property) serialized, ``results``
    made JSON-safe (numpy scalars to Python, NaN and infinity to None: the App parses strict JSON).
    Yield it from a generator ``execute``; a message that does not serialize ends the App's stream."""
    return ctx.ops.show_output(outputs.to_json(), {k: json_safe(v) for k, v in results.items()})


def show_card(ctx, title: str, numbers=(), written: str = "", run_key: str | None = None, next_step: str = "",
              **data):
    """Yield this last from a generator ``execute``: the operator's result card (:func:`card`)."""
    return show_result(ctx, *card(title, numbers, written, run_key, next_step, **data))


def _view_uses(ctx, paths, views) -> bool:
    """Whether the App's current view is one of ``views`` or names one of the field ``paths``."""
    if ctx.request_params.get("view_name") in views:
        return True
    try:
        stages = json.dumps(ctx.view._serialize(), default=str)
    except Exception:  # noqa: BLE001  (an unreadable view: leave it as it is)
        return False
    return any(p.rsplit(".", 1)[-1] in stages for p in paths)


def delete_and_confirm(ctx, run_key: str, method: str | None = None):
    """``yield from`` this as a delete operator's ``execute``: the run ``run_key`` (of kind ``method``
    when given) deleted with what it wrote (:func:`run_store.delete_run`; a key that is no such run
    is a :class:`SetupError` before anything changes), then the App reloaded (status colours
    included), a confirmation note and the card naming what went."""
    run_store.check_deletable(ctx.dataset, run_key, method)
    paths, views = run_store.owned(ctx.dataset, run_key)
    what = describe_paths(paths, views) or "the stored results only"
    stale = not ctx.delegated and _view_uses(ctx, paths, views)
    removed = run_store.delete_run(ctx.dataset, run_key, method)
    if not ctx.delegated:
        if stale:  # the App would ask for the removed fields ("Field ... does not exist")
            yield ctx.ops.clear_view()
        yield ctx.ops.reload_dataset()
        yield status_colors.refresh_app(ctx)
        yield ctx.ops.notify(f"KaLOS: run {run_key!r} deleted with what it wrote", variant="success")
    yield show_card(ctx, "KaLOS: run deleted", [("Field paths removed", len(removed))], f"removed {what}",
                    f"{run_key} (deleted)", "Nothing: the data set is as before the run.", removed=removed)
