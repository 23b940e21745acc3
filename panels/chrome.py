"""The panels' chrome: remembered state, the highlighted click, the help link.

Pure helpers of :class:`panels.common.RunPanel` (no panel class here):

* **Remembered state.** The chosen run (and scope) of each panel is kept per dataset in
  FiftyOne's execution store (``ctx.store(STORE)``, one entry per panel name), so it survives
  closing the panel and reloading the App.
* **Highlight.** A click that filters the grid is highlighted: on a bar or scatter trace with
  plotly's ``selectedpoints`` (the other points are dimmed), on a heatmap with a rectangle
  around the cell. A highlight is a small dict: ``{"path", "trace", "idx"}`` (a point) or
  ``{"path", "x", "y", "row", "col"}`` (a heatmap cell); ``path`` is the chart's property path,
  which is also where its traces live in ``ctx.panel.data``.
* **One patch per event.** Every ``ctx.panel.state.x = v`` is an operation of its own that the
  App applies, re-rendering the panel each time (about twenty on a load: seconds of browser time);
  :func:`batched_patches` sends one data patch (and, rarely, one state patch) per event instead.
* **State sent as data.** Whatever a panel's handlers set in ``ctx.panel.state`` goes to the
  App as *data* (:func:`batched_patches`) and the server keeps the state (:mod:`panels.kept`):
  the App saves every change of a panel's state into its spaces, and each such save reloads
  the dataset page and the grid (docs/panels.md). Only :data:`panels.kept.APP_STATE` is
  written to the App's state.
* **Help link.** A panel's ``HELP_URL`` is absolute, or a path inside this repository
  (``docs/panels.md``), served by the App under ``/plugins/<plugin folder>/``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from types import SimpleNamespace

from .kept import APP_STATE

STORE = "kalos_panels"
#: tallest chart, in pixels: in a split beside the grid (1600 x 1000 window) the whole chart
#: fits under the panel's header without scrolling
MAX_CHART_HEIGHT = 340
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- remembered state -----------------------------------------------------------------------------

def remembered(ctx, panel: str) -> dict:
    """What ``panel`` remembers on the dataset (``{}`` when nothing, or without a store).

    One query on the documents ``ctx.store(STORE)`` writes (the key's ``value``): building
    FiftyOne's store service lists, and on a fresh database creates, the store's indexes, which
    took 0.3-1.1 s of the first panel open (docs/panels.md); :func:`remember` still
    writes through ``ctx.store``."""
    try:
        import fiftyone.core.odm as fodm
        from fiftyone.factory.repos.execution_store import MongoExecutionStoreRepo

        doc = fodm.get_db_conn()[MongoExecutionStoreRepo.COLLECTION_NAME].find_one(
            {"store_name": STORE, "key": panel, "dataset_id": ctx.dataset._doc.id}, {"value": 1})
        return dict((doc or {}).get("value") or {})
    except Exception:  # no dataset, or a database without the store: nothing remembered
        return {}


def remember(ctx, panel: str, **values) -> None:
    """Remember ``values`` (e.g. ``run_key``, ``scope``) for ``panel`` on the dataset."""
    try:
        store = ctx.store(STORE)
        state = dict(store.get(panel) or {})
        state.update(values)
        store.set(panel, state)
    except Exception:  # remembering is a convenience: never fail the click over it
        pass


# -- one patch per event -------------------------------------------------------------------------

@contextmanager
def batched_patches(ctx, clear=None):
    """Within the block, the panel's state and data patches are gathered (a later value of a path
    replaces the earlier one, in the order last set) and sent just before the panel's output (or
    at the end of the block): the state's paths as data (a data path set too wins, as in the
    App's merge of the two), but for :data:`APP_STATE`, sent as a state patch together with
    ``clear(top-level keys sent as data)`` (:func:`panels.kept.stale`; each key cleared once).
    Yields what was sent: ``.state`` and ``.data``, the top-level keys of either patch."""
    ops = ctx.ops
    send = {"patch_panel_state": ops.patch_panel_state, "patch_panel_data": ops.patch_panel_data}
    output = ops.show_panel_output
    pending = {name: {} for name in send}
    sent, cleared = SimpleNamespace(state=set(), data=set()), set()

    def gather(name):
        def patch(values, panel_id=None):
            for k, v in values.items():
                pending[name].pop(k, None)   # re-set: goes last, after any path set in between
                pending[name][k] = v
        return patch

    def flush():
        state, data = pending["patch_panel_state"], pending["patch_panel_data"]
        sent.state |= {k.split(".")[0] for k in state}
        moved = {k: v for k, v in state.items() if k.split(".")[0] not in APP_STATE}
        pending["patch_panel_data"] = {**moved, **data}
        for k in moved:
            del state[k]
        sent.data |= {k.split(".")[0] for k in pending["patch_panel_data"]}
        stale = {k: v for k, v in (clear(sent.data) if clear else {}).items() if k not in cleared}
        cleared.update(stale)
        pending["patch_panel_state"] = {**stale, **state}
        for name, values in pending.items():
            if values:
                send[name](dict(values))
                values.clear()

    def show(*args, **kwargs):
        flush()
        return output(*args, **kwargs)

    for name in send:
        setattr(ops, name, gather(name))
    ops.show_panel_output = show
    try:
        yield sent
        flush()
    finally:
        for name, fn in send.items():
            setattr(ops, name, fn)
        ops.show_panel_output = output


# -- highlight ------------------------------------------------------------------------------------

def point(path: str, trace: int, idx: int) -> dict:
    """Highlight point ``idx`` of trace number ``trace`` of the chart at ``path``."""
    return {"path": path, "trace": int(trace), "idx": int(idx)}


def cell(path: str, x, y, row: int | None = None, col: int | None = None) -> dict:
    """Highlight the heatmap cell at category ``x``, ``y`` (z indices ``row``, ``col``)."""
    return {"path": path, "x": x, "y": y, "row": row, "col": col}


def clicked_highlight(params: dict) -> dict | None:
    """The highlight of a plotly click event (what the App sends to ``on_click``): a heatmap
    cell when the event has ``z`` or a ``[row, col]`` index, else the clicked point; None when
    the event names no chart or point."""
    path, idx = params.get("path"), params.get("idx")
    if not path:
        return None
    if isinstance(idx, (list, tuple)) or params.get("z") is not None:
        row, col = (list(idx) + [None, None])[:2] if isinstance(idx, (list, tuple)) else (None, None)
        return cell(path, params.get("x"), params.get("y"), row, col)
    if isinstance(idx, int) and not isinstance(idx, bool):
        trace = params.get("trace_idx")
        return point(path, trace if isinstance(trace, int) else 0, idx)
    return None


def selected_points_patch(highlight: dict | None, on: bool = True, n_traces: int | None = None) -> dict:
    """The ``ctx.panel.data`` patch that (un)selects a highlighted point: plotly dims the other
    points of the trace, and with ``n_traces`` (the chart's trace count) every other trace too
    (stacked or grouped bars); ``None`` removes the selection. Cells need no data patch."""
    if not highlight or "idx" not in highlight:
        return {}
    path, trace = highlight["path"], highlight["trace"]
    patch = {f"{path}.{t}.selectedpoints": ([] if on else None) for t in range(n_traces or 0) if t != trace}
    patch[f"{path}.{trace}.selectedpoints"] = [highlight["idx"]] if on else None
    return patch


def trace_counts(data) -> dict:
    """``{chart path: number of traces}`` of the charts a handler just sent (``ctx.panel.data``
    is write-only for panels; its local copy holds what this request set)."""
    sent = getattr(data, "_data", None) or {}
    out = {}

    def walk(d, prefix):
        for k, v in d.items():
            path = f"{prefix}{k}"
            if isinstance(v, list) and v and all(isinstance(t, dict) and ("type" in t or "x" in t) for t in v):
                out[path] = len(v)
            elif isinstance(v, dict):
                walk(v, path + ".")

    walk(sent, "")
    return out


def cell_shape(highlight: dict) -> dict | None:
    """A rectangle around a highlighted heatmap cell (category axes: cell k spans k ± 0.5)."""
    row, col = highlight.get("row"), highlight.get("col")
    if not isinstance(row, int) or not isinstance(col, int):
        return None
    return {"type": "rect", "xref": "x", "yref": "y", "x0": col - 0.5, "x1": col + 0.5,
            "y0": row - 0.5, "y1": row + 0.5, "line": {"color": "#111", "width": 3},
            "fillcolor": "rgba(0,0,0,0)", "layer": "above", "name": "kalos_highlight"}


def with_cell(layout: dict | None, highlight: dict | None) -> dict:
    """``layout`` with the highlighted cell's rectangle added (a copy; ``layout`` is kept)."""
    layout = dict(layout or {})
    shape = cell_shape(highlight) if highlight and "idx" not in highlight else None
    if shape:
        layout["shapes"] = [s for s in layout.get("shapes") or [] if s.get("name") != "kalos_highlight"] + [shape]
    return layout


def find_view(obj, path: str):
    """The view of the property at dotted ``path`` in a :class:`types.Object` (None if absent)."""
    prop = None
    for name in path.split("."):
        prop = obj.get_property(name) if hasattr(obj, "get_property") else None
        if prop is None:
            return None
        obj = prop.type
    return prop.view


def mark_cell(panel, highlight: dict | None) -> None:
    """Draw the highlighted heatmap cell into its chart's layout (in the rendered panel)."""
    if not highlight or "idx" in highlight:
        return
    view = find_view(panel, highlight["path"])
    if view is not None and hasattr(view, "layout"):  # PlotlyView serialises .layout (and its kwargs)
        view.layout = with_cell(view.layout, highlight)
        view._kwargs["layout"] = view.layout


# -- help ------------------------------------------------------------------------------------------

def help_url(target: str, plugins_dir: str | None = None) -> str:
    """An absolute URL stays; a repository path (``docs/panels.md#x``) becomes the App's own
    address of that file (the App serves the plugins folder under ``/plugins``)."""
    if not target or "://" in target or target.startswith("/"):
        return target
    if plugins_dir is None:
        import fiftyone as fo

        plugins_dir = fo.config.plugins_dir
    rel = os.path.relpath(REPO, plugins_dir) if plugins_dir else None
    if not rel or rel.startswith(".."):
        return target
    base = "/plugins" if rel == "." else "/plugins/" + rel.replace(os.sep, "/")
    return f"{base}/{target}"


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (the header's one line of intro)."""
    text = " ".join((text or "").split())
    ends = [k for k in (text.find(". "), text.find("; ")) if k > 0]
    return text[:min(ends)] + "." if ends else text
