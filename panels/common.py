"""What every KaLOS panel shares: run selection, the empty state, chart helpers.

A panel subclasses :class:`RunPanel` and implements ``load_run(ctx, run_key)`` (read the
stored results, put chart traces in ``ctx.panel.data`` and small facts in
``ctx.panel.state``) and ``render_run(panel, ctx)`` (lay out the run's part). Heavy work
happens in the event handlers; ``render`` only reads panel state.
"""

from __future__ import annotations

import logging
import math
import os
import textwrap
import time

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.conventions import conventions_md
from kalos_core.jsonsafe import json_safe
from kalos_core.reliability import ALPHA_BANDS, interpret as band_of

from ..fiftyone_layer import registry, run_store
from ..fiftyone_layer.measure_runs import label_source_values, rerun_values
from . import chrome, kept, notices
from .runs import load_results, run_labels, runs_of  # noqa: F401  (the run store; panels import them from here)

AGREEMENT_METHOD = run_store.AGREEMENT

#: panel events that load the panel themselves: no second load when the server kept no state
RELOADS = (None, "on_startup", "on_load", "on_change_dataset", "on_change_run", "refresh")
#: the RGB colour of each interpretation band of α
BAND_COLORS = {"systematic disagreement": "214,39,40", "weak": "255,127,14", "moderate": "230,190,30",
               "substantial": "140,200,80", "near-perfect": "44,160,44"}
#: the interpretation bands of α (:data:`kalos_core.reliability.ALPHA_BANDS`), low to high: (lo, hi, name, RGB)
BANDS = tuple((lo, hi, name, BAND_COLORS[name]) for lo, hi, name in ALPHA_BANDS)
POSITIVE, NEGATIVE, NEUTRAL = "#2ca02c", "#d62728", "#1f77b4"
#: a chart whose y axis names categories (classes): a narrow left margin that plotly's automargin
#: widens to the longest name, so the plot takes the rest of the panel's width
NAMES_MARGIN = {"t": 40, "b": 50, "l": 10, "r": 20}
#: the legend of every chart with one: a row under the plot, so the plot keeps the panel's width
LEGEND = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom", "yref": "container",
          "font": {"size": 11}}
#: pixels below the plot area: tick labels and the x-axis title, then each row of a :data:`LEGEND`
AXIS_MARGIN, LEGEND_ROW = 58, 20
#: widest run selector (CSS): beside it the header keeps room for Refresh in a split
SELECT_WIDTH = "440px"

#: one line per panel event: the panel, the event, its server-side time (FiftyOne's log; also
#: appended to the file named by $KALOS_PANEL_TIMINGS, as the App server's own output is not kept)
logger = logging.getLogger(__name__)
TIMINGS_ENV = "KALOS_PANEL_TIMINGS"


def log_timing(line: str) -> None:
    logger.info(line)
    path = os.environ.get(TIMINGS_ENV)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def clean(x):
    """JSON-safe copy for the App: numpy scalars to Python, NaN/inf to None (plotly chokes on NaN)."""
    return json_safe(x)

def fmt(v, digits: int = 3) -> str:
    """A number for the panel text; an em dash when it is missing."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}"


def band_color(a: float, opacity: float = 0.8) -> str:
    """The colour of an α value's interpretation band, as ``rgba(...)``."""
    return f"rgba({BAND_COLORS[band_of(a)]},{opacity})"


def bands_text() -> str:
    """The bands as a line of text: ``< 0 systematic disagreement · 0–0.4 weak · … · ≥ 0.8 near-perfect``."""
    return " · ".join(f"< {hi:g} {name}" if lo == -math.inf else f"≥ {lo:g} {name}" if hi == math.inf
                      else f"{lo:g}–{hi:g} {name}" for lo, hi, name, _ in BANDS)


def vline(x: float, label: str, color: str = "#444", dash: str = "dash") -> tuple[dict, dict]:
    """A vertical line over the whole plot height, and its label annotation."""
    shape = {"type": "line", "x0": x, "x1": x, "xref": "x", "y0": 0, "y1": 1, "yref": "paper",
             "line": {"color": color, "width": 2, "dash": dash}}
    note = {"x": x, "y": 1, "xref": "x", "yref": "paper", "text": label, "showarrow": False,
            "yanchor": "bottom", "font": {"color": color}}
    return shape, note


#: a chart title longer than this many characters is broken into lines (plotly clips a long title
#: at the edges of a panel beside the grid, ~550 px wide, rather than wrapping it)
TITLE_CHARS = 56
#: pixels per title line
TITLE_LINE = 20


def title_lines(title: str) -> list[str]:
    """``title`` in lines of at most :data:`TITLE_CHARS` characters, broken between words."""
    return textwrap.wrap(title, TITLE_CHARS, break_long_words=False, break_on_hyphens=False) or [title]


def plot_layout(title: str, xtitle: str, ytitle: str, height: int = 320, legend_rows: int = 1, **extra) -> dict:
    """Plotly layout (plotly.js 3: titles are objects). A long title is broken into lines
    (:func:`title_lines`) with the top margin and the height grown to hold them. A :data:`LEGEND`
    sits at the bottom of the figure, below the x-axis title: the bottom margin makes room for
    ``legend_rows`` rows of it."""
    legend = extra.get("showlegend") and extra.get("legend") == LEGEND
    lines = title_lines(title)
    more = TITLE_LINE * (len(lines) - 1)
    layout = {"title": {"text": "<br>".join(lines)}, "height": height + more, "showlegend": False,
              "xaxis": {"title": {"text": xtitle}}, "yaxis": {"title": {"text": ytitle}},
              "margin": {"t": 40 + more, "b": AXIS_MARGIN + LEGEND_ROW * legend_rows if legend else 50, "l": 60,
                         "r": 20},
              "hovermode": "closest"}
    layout.update(extra)
    if "margin" in extra and more:   # the caller's own margins, with room for the title's lines
        layout["margin"] = {**extra["margin"], "t": extra["margin"].get("t", 40) + more}
    return layout


def dropdown(values, labels=None, **view) -> types.DropdownView:
    """A dropdown whose choices are ``values`` (labelled by ``labels[value]`` when given)."""
    labels = labels or {}
    return types.DropdownView(choices=[types.Choice(v, label=str(labels.get(v, v))) for v in values], **view)


def chart(panel, name: str, layout: dict | None, on_click=None):
    """A plotly chart whose traces are ``ctx.panel.data[name]``; the App sizes its box from
    the view's ``height`` (pixels), plotly from ``layout.height``. No chart is taller than
    :data:`chrome.MAX_CHART_HEIGHT`, so in a split beside the grid it shows without scrolling."""
    layout = dict(layout or {})
    layout["height"] = min(int(layout.get("height") or chrome.MAX_CHART_HEIGHT), chrome.MAX_CHART_HEIGHT)
    kw = {"on_click": on_click} if on_click is not None else {}
    # the App's plot box is 100 % of what holds it, and its grid cell stretches to the panel's
    # height: the cell's own height keeps the next view right under the chart
    cell = {"item": {"sx": {"height": f"{layout['height']}px", "width": "100%"}}}
    return panel.plot(name, layout=layout, config={"displayModeBar": False, "scrollZoom": False, "responsive": True},
                      height=layout["height"], componentsProps=cell, **kw)


def lap(ctx, step: str, since: float) -> float:
    """Note the ms since ``since`` as ``step`` of the event being timed (:meth:`RunPanel.execute`
    logs them); returns the time now."""
    now = time.perf_counter()
    steps = getattr(ctx, "kalos_steps", None)
    if steps is not None:
        steps[step] = (now - since) * 1000
    return now


class RunPanel(foo.Panel):
    """Base of the KaLOS panels: a one-row header (run selector, refresh, clear selection), one
    line of intro with a link to the docs, the empty state; subclasses fill in the run.

    The chosen run (and scope) is remembered per dataset (:mod:`panels.chrome`); a click that
    filters the grid (:meth:`show`) highlights the clicked mark, and *Clear selection* gives
    back the view the user had before the first click (the whole dataset when there was none).
    """

    #: the panel's name, its label in the App, its icon and its one line of help (:attr:`config`)
    NAME = LABEL = ICON = HELP = ""
    #: the run kind it shows and the operator its action button opens: set from the declaration of
    #: the measure that names the panel (``RUN.app.panels``) when ``PANELS`` is made
    METHOD = AGREEMENT_METHOD
    ACTION_URI: str = ""
    INTRO = ""
    #: where the panel's help link points: a repository path (served by the App) or a URL
    HELP_URL = "docs/panels.md"
    EMPTY = ("No KaLOS agreement run on this dataset yet. Compute one: it stores per-sample α "
             "and the diagnostics this panel shows.")
    ACTION_LABEL = "Compute agreement"
    #: what "Recompute" adds to the run's stored config (the diagnostic this panel shows; see
    #: :func:`..fiftyone_layer.measure_runs.rerun_values`)
    RERUN_ADDS: dict = {}

    # -- to implement -------------------------------------------------------------------------
    def load_run(self, ctx, run_key: str) -> None:
        raise NotImplementedError

    def render_run(self, panel, ctx) -> None:
        raise NotImplementedError

    def action_params(self, ctx) -> dict:
        """Prefilled parameters of the operator the action button opens: the selected run's set-up
        under its own key (the form asks to confirm the overwrite), so a recompute keeps raters, key
        and settings (:func:`..fiftyone_layer.measure_runs.rerun_values`), with :attr:`RERUN_ADDS`."""
        key = ctx.panel.state.run_key
        if not key:
            return {}
        cfg = ctx.dataset.get_run_info(key).config
        return {**rerun_values(registry.run_of(self.METHOD), cfg, self.RERUN_ADDS), "run_key": key}

    @property
    def config(self):
        return foo.PanelConfig(name=self.NAME, label=self.LABEL, icon=self.ICON, category=foo.Categories.ANALYZE,
                               help_markdown=self.HELP)

    @property
    def panel_name(self) -> str:
        return self.NAME

    # -- events --------------------------------------------------------------------------------
    def execute(self, ctx):
        """FiftyOne's dispatch (the event's handler, then ``render``) with the handler's panel
        patches sent at once (:func:`chrome.batched_patches`), timed: ``kalos panel <name> <event>:
        <ms> ms`` is logged for every event (:func:`log_timing`, docs/panels.md)."""
        t0 = time.perf_counter()
        ctx.kalos_steps = {}   # the handler's parts, in ms (:func:`lap`)
        method = ctx.params.get("__method__")
        try:
            if method in (None, "on_startup"):   # registration
                return super().execute(ctx)
            with kept.one_at_a_time(ctx, self.panel_name):   # an earlier event of this panel still running
                t = lap(ctx, "queued", t0)
                if ctx.dataset is None:   # no dataset
                    return super().execute(ctx)
                t = lap(ctx, "dataset", t)   # FiftyOne loads the dataset, reloaded, on a request's first use
                if method == "on_unload":   # the panel was closed: nothing to draw
                    kept.forget(ctx, self.panel_name)
                    return None
                app = dict(ctx.panel.state._data or {})   # the App's copy, before the kept state goes over it
                saved = kept.restore(ctx, self.panel_name)
                lap(ctx, "kept", t)
                owned = set(saved["owned"]) if saved else set()
                with chrome.batched_patches(ctx, clear=lambda sent: kept.stale(app, owned | sent)) as sent:
                    if saved is None and method not in RELOADS:
                        self.on_load(ctx)   # nothing kept (a new server process, or expired): load it again
                    result = super().execute(ctx)
                kept.save(ctx, self.panel_name, set((saved or {}).get("state", {})) | sent.state, owned | sent.data)
            return result
        finally:
            parts = ", ".join(f"{k} {v:.0f}" for k, v in ctx.kalos_steps.items())
            value = ctx.params.get("value") if str(method).startswith("on_change") else None
            log_timing(f"kalos panel {self.panel_name} {method}: "
                       f"{(time.perf_counter() - t0) * 1000:.0f} ms" + (f" ({parts})" if parts else "")
                       + (f" value {str(value)[:40]!r}" if value is not None else ""))

    def on_load(self, ctx):
        t0 = time.perf_counter()
        dataset = ctx.dataset   # loaded already by :meth:`execute` (its ``dataset`` step)
        notices.check(ctx)   # scheduled runs that ended since last heard: announced, the dataset reloaded
        t0 = lap(ctx, "scheduled", t0)
        runs = runs_of(dataset, self.METHOD)
        key = ctx.panel.state.run_key
        if key is None:  # a fresh panel: the run (and scope) chosen last time on this dataset
            saved = chrome.remembered(ctx, self.panel_name)
            key = saved.get("run_key")
            if saved.get("scope") and ctx.panel.state.scope is None:
                ctx.panel.state.scope = saved["scope"]
        if key not in runs:  # none chosen, or deleted meanwhile: the newest
            key = runs[-1] if runs else None
        ctx.panel.state.runs = runs
        ctx.panel.state.run_labels = run_labels(ctx.dataset, runs)
        t = lap(ctx, "runs", t0)
        ctx.panel.state.run_key = key
        ctx.panel.state.set("header.run_key", key)
        ctx.panel.state.error = None
        ctx.panel.state.highlight = None  # load_run sends fresh traces: nothing selected in them
        ctx.panel.state.conventions = None
        if key:
            try:
                self.load_run(ctx, key)
                t = lap(ctx, "load_run", t)
                ctx.panel.state.conventions = conventions_md(run_store.run_conventions(ctx.dataset, key))
                lap(ctx, "conventions", t)
            except Exception as e:  # a damaged or foreign run: say so instead of a blank panel
                ctx.panel.state.error = f"Could not read run {key!r}: {e}"
            self._count_traces(ctx)

    @staticmethod
    def _count_traces(ctx) -> None:
        """Remember how many traces each chart just got (the highlight dims the other traces)."""
        counts = chrome.trace_counts(ctx.panel.data)
        if counts:
            ctx.panel.state.trace_counts = {**(ctx.panel.state.trace_counts or {}), **counts}

    def on_unload(self, ctx):
        """The App calls it when the panel closes (:meth:`execute` drops its kept state)."""

    def on_change_dataset(self, ctx):
        ctx.panel.state.run_key = None
        ctx.panel.state.scope = None
        ctx.panel.state.before = None
        self.on_load(ctx)

    def on_change_run(self, ctx):
        key = ctx.params.get("value")
        if key:
            ctx.panel.state.run_key = key
            chrome.remember(ctx, self.panel_name, run_key=key)
        self.on_load(ctx)

    def refresh(self, ctx):
        self.on_load(ctx)

    def check_scheduled(self, ctx):
        """The timer's event while a scheduled run waits or runs: reload when one ended."""
        if notices.check(ctx):
            self.on_load(ctx)

    def dismiss_notice(self, ctx):
        ctx.panel.state.scheduled_notice = None

    def open_operator(self, ctx):
        """The empty state's / action button: open the operator's form, prefilled."""
        ctx.prompt(self.ACTION_URI, params=self.action_params(ctx), on_success=self.refresh)

    def clear_selection(self, ctx):
        """Give back the grid the user had before the first click (a saved view by name, other
        view stages as they were, else the whole dataset) and drop the highlight."""
        before = ctx.panel.state.before or {}
        if before.get("name"):
            ctx.ops.set_view(name=before["name"])
        elif before.get("stages"):
            import fiftyone.server.view as fosv

            ctx.ops.set_view(view=fosv.get_view(ctx.dataset, stages=before["stages"]))
        else:
            ctx.ops.clear_view()
        self._highlight(ctx, None)
        ctx.panel.state.before = None
        ctx.panel.state.selection = None

    show_all = clear_selection  # the former "Show all samples" button's handler

    # -- layout --------------------------------------------------------------------------------
    def render(self, ctx):
        panel = types.Object()
        runs = ctx.panel.state.runs or []
        notices.render(panel, ctx, on_interval=self.check_scheduled, on_dismiss=self.dismiss_notice)
        if not runs:
            self.render_intro(panel)
            panel.md(self.EMPTY, name="empty_state")
            panel.btn("open_operator", label=self.ACTION_LABEL, icon="play_arrow", variant="contained",
                      on_click=self.open_operator)
            panel.btn("refresh", label="Refresh", icon="refresh", on_click=self.refresh)
        else:
            self.render_header(panel, ctx, runs)
            self.render_intro(panel)
            self.render_selection(panel, ctx)
            if ctx.panel.state.error:
                panel.view("error", types.Error(label=ctx.panel.state.error))
            else:
                self.render_run(panel, ctx)
                chrome.mark_cell(panel, ctx.panel.state.highlight)
                if ctx.panel.state.conventions:   # the units and conventions of the numbers above
                    panel.md(ctx.panel.state.conventions, name="conventions")
        return types.Property(panel, view=types.GridView(orientation="vertical", gap=1, align_x="left",
                                                         align_y="top", px=2, py=1))

    def render_header(self, panel, ctx, runs) -> None:
        """One row: the run selector (labelled with each run's label type, raters, threshold
        and date; the values stay the run keys; at most :data:`SELECT_WIDTH` wide, a longer
        label ends in "…") and Refresh."""
        header = panel.h_stack("header", align_y="center", gap=1)
        labels = ctx.panel.state.run_labels or {}
        view = dropdown(list(reversed(runs)), labels,
                        componentsProps={"select": {"sx": {"maxWidth": SELECT_WIDTH, "minWidth": 0}}})
        header.enum("run_key", runs, default=ctx.panel.state.run_key, label=None, view=view,
                    on_change=self.on_change_run)
        header.btn("refresh", label="Refresh", icon="refresh", on_click=self.refresh)

    def render_selection(self, panel, ctx) -> None:
        """While a click's view is shown: what it shows, and the Clear selection chip (a note
        about a click that changed nothing is shown without the chip)."""
        if ctx.panel.state.before is None:
            if ctx.panel.state.selection:
                panel.md(ctx.panel.state.selection, name="selection")
            return
        bar = panel.h_stack("selection_bar", align_y="center", gap=1)
        bar.btn("clear_selection", label="Clear selection", icon="filter_alt_off", variant="contained",
                on_click=self.clear_selection)
        if ctx.panel.state.selection:
            bar.md(ctx.panel.state.selection, name="selection")

    def render_intro(self, panel) -> None:
        """One line: the intro's first sentence and the link to the docs."""
        text = chrome.first_sentence(self.INTRO)
        link = f"[Docs ↗]({chrome.help_url(self.HELP_URL)})" if self.HELP_URL else ""
        if text or link:
            panel.md(" ".join(t for t in (text, link) if t), name="intro")

    @staticmethod
    def layout(ctx):
        """The selected agreement run's layout (fields, rater attribute) for view builders."""
        from ..fiftyone_layer.views import RunLayout

        return RunLayout.from_run(ctx.dataset, ctx.panel.state.run_key)

    # -- shared by the panels' click handlers and ``render_run`` ---------------------------
    def show(self, ctx, view, message: str, highlight=None) -> None:
        """Show ``view`` in the grid, say so in the panel (the ``selection`` line) and highlight
        what was clicked: ``highlight`` is a :func:`chrome.point` / :func:`chrome.cell`, None for
        the mark of the click event being handled, False for none."""
        if ctx.panel.state.before is None:  # the first click: remember the user's own grid
            params = getattr(ctx, "request_params", None) or {}
            ctx.panel.state.before = {"name": params.get("view_name"), "stages": params.get("view") or []}
        ctx.ops.set_view(view=view)
        ctx.panel.state.selection = message
        self._highlight(ctx, chrome.clicked_highlight(ctx.params) if highlight is None else (highlight or None))

    def show_labels(self, ctx, label_ids: list, message: str) -> None:
        """Show only the labels ``label_ids`` of the selected run's label fields (and so only
        their samples)."""
        src = label_source_values(ctx.dataset.get_run_info(ctx.panel.state.run_key).config)
        fields = src.get("rater_fields") or [src["label_field"]]
        self.show(ctx, ctx.dataset.select_labels(ids=label_ids, fields=fields), message)

    @staticmethod
    def _highlight(ctx, highlight: dict | None) -> None:
        """Move the highlight: unselect the previous point, select the new one (cells are drawn
        by ``render``)."""
        old, counts = ctx.panel.state.highlight, ctx.panel.state.trace_counts or {}
        patch = chrome.selected_points_patch(old, on=False, n_traces=counts.get((old or {}).get("path")))
        patch.update(chrome.selected_points_patch(highlight, n_traces=counts.get((highlight or {}).get("path"))))
        if patch:
            ctx.panel.data.set(patch)
        ctx.panel.state.highlight = highlight

    def show_rater(self, ctx, rater: str) -> None:
        """Show the samples where ``rater`` has unmatched or disagreeing labels."""
        from ..fiftyone_layer.views import rater_disagreement_view

        self.show(ctx, rater_disagreement_view(ctx.dataset, self.layout(ctx), rater, current=ctx.view),
                  f"Showing samples where **{rater}** has unmatched or disagreeing labels")

    def render_missing(self, panel, text: str, name: str, label: str = "Recompute agreement") -> None:
        """The run lacks what this panel shows: say why, and offer the prefilled operator."""
        panel.md(text, name=name)
        panel.btn("open_operator", label=label, icon="play_arrow", variant="contained",
                  on_click=self.open_operator)

    @staticmethod
    def render_summary(panel, ctx) -> None:
        """The run's summary line (the current selection is shown above, with its chip)."""
        panel.md(ctx.panel.state.summary or "", name="summary")


def clicked(ctx, *keys: str, items: list | None = None):
    """The clicked point of a chart: the first of the event's ``keys`` that is set, else (when
    ``items`` is given) the item at the event's ``idx``; None when the event names nothing."""
    value = next((ctx.params.get(k) for k in keys if ctx.params.get(k) is not None), None)
    if value is None and items is not None and isinstance(ctx.params.get("idx"), int) \
            and ctx.params["idx"] < len(items):
        value = items[ctx.params["idx"]]
    return value


class ScopedRunPanel(RunPanel):
    """A panel whose result exists per sample (``key``) and for the whole dataset at once
    (``key_global``); a radio group (``SCOPES``, labelled ``SCOPE_LABEL``) switches between them."""

    SCOPES = {"per_image": "mean over samples", "global": "whole dataset at once"}
    SCOPE_LABEL = "Scope"

    def scoped(self, ctx, res: dict, key: str) -> tuple[str, dict]:
        """``(scope, the stored result of that scope)``; an unknown scope falls back to per-sample."""
        scope = ctx.panel.state.scope if ctx.panel.state.scope in self.SCOPES else "per_image"
        ctx.panel.state.scope = scope
        return scope, res.get(f"{key}_global" if scope == "global" else key) or {}

    def on_change_scope(self, ctx):
        ctx.panel.state.scope = ctx.params.get("value") or "per_image"
        chrome.remember(ctx, self.panel_name, scope=ctx.panel.state.scope)
        ctx.panel.state.highlight = None  # load_run sends fresh traces
        self.load_run(ctx, ctx.panel.state.run_key)
        self._count_traces(ctx)

    def render_scope(self, panel, ctx) -> None:
        """The scope radio group, then the summary and selection lines."""
        panel.enum("scope", list(self.SCOPES), default=ctx.panel.state.scope or "per_image", label=self.SCOPE_LABEL,
                   view=types.RadioGroup(orientation="horizontal",
                                         choices=[types.Choice(k, label=v) for k, v in self.SCOPES.items()]),
                   on_change=self.on_change_scope)
        self.render_summary(panel, ctx)
