"""Class difficulty: α per class; clicking a class shows its labels that do not agree.

The per-class α of a sample uses the units in which any rater used the class; the panel shows
its mean over the samples where the class occurs (or, for "whole dataset", the class α of
all units at once). With hundreds of classes (LVIS: 274) the panel shows a slice: sorted
(hardest, easiest, most units, name), filtered by a substring of the name and by a minimum
number of units (a class seen in one unit is "hardest" by chance), the first N of them.

"Split by" (:mod:`.splits`) splits the shown classes' α by a subset of samples (a sample field's
values, ``tags``, the saved views): per class and subset the mean of the class's per-sample α over
the subset's samples where it occurs (``class_difficulty_images``), a click shows those samples.
"""

from __future__ import annotations

from dataclasses import dataclass


from .common import NAMES_MARGIN, ScopedRunPanel, band_color, chart, clean, clicked, dropdown, fmt, load_results, plot_layout
from ..fiftyone_layer.views import RunLayout, class_view
from .chrome import MAX_CHART_HEIGHT
from .splits import NO_SPLIT, SampleSplit

SCOPES = {"per_image": "mean over samples", "global": "whole dataset at once"}
SORTS = {"hardest": "hardest first (lowest α)", "easiest": "easiest first (highest α)",
         "units": "most units first", "name": "by name"}
TOP_N, MIN_UNITS = 25, 5
BAR_PX, MIN_HEIGHT, MAX_HEIGHT = 22, 260, 640


@dataclass(frozen=True)
class ClassFilter:
    """What the panel's controls ask for."""

    sort: str = "hardest"       #: a key of SORTS
    top_n: int = TOP_N          #: at most this many classes (0: all)
    search: str = ""            #: case-insensitive substring of the class name
    min_units: int = MIN_UNITS  #: classes seen in fewer units are hidden


@dataclass(frozen=True)
class ClassSelection:
    """The classes to draw, in order, as ``(class, α, units)``, and what was left out."""

    items: list
    n_classes: int      #: classes with an α
    n_searched: int     #: of those, matching the search
    n_rare: int         #: of those, hidden by the minimum number of units
    n_matching: int     #: matching the search with enough units (``items`` is the first top_n)


_SORT_KEYS = {
    "hardest": lambda t: (t[1], t[0]),
    "easiest": lambda t: (-t[1], t[0]),
    "units": lambda t: (-t[2], t[1], t[0]),
    "name": lambda t: (t[0].casefold(), t[0]),
}


def select_classes(alphas: dict, units: dict, flt: ClassFilter = ClassFilter()) -> ClassSelection:
    """Search, then the unit minimum, then sort, then the first ``top_n``. Classes without an
    α are skipped; a class missing from ``units`` has 0 units."""
    rows = [(str(c), float(a), int(units.get(c, 0))) for c, a in alphas.items() if a is not None]
    needle = (flt.search or "").strip().casefold()
    searched = [r for r in rows if needle in r[0].casefold()]
    kept = [r for r in searched if r[2] >= max(0, int(flt.min_units or 0))]
    kept.sort(key=_SORT_KEYS.get(flt.sort, _SORT_KEYS["hardest"]))
    top = kept[: flt.top_n] if flt.top_n and flt.top_n > 0 else kept
    return ClassSelection(top, len(rows), len(searched), len(searched) - len(kept), len(kept))


def unit_counts(rows) -> dict:
    """``{class: number of units in which some rater used it}`` from ``(sample id, unit,
    class)`` rows, one per label (a unit is numbered within its sample; labels without a
    unit are skipped)."""
    seen: dict = {}
    for sid, unit, label in rows:
        if unit is not None and label is not None:
            seen.setdefault(str(label), set()).add((sid, unit))
    return {c: len(s) for c, s in seen.items()}


def class_unit_counts(dataset, layout: RunLayout) -> dict:
    """:func:`unit_counts` of a run's labels, read from the dataset (three aggregations a field)."""
    rows = []
    ids = dataset.values("id")
    for f in layout.fields:
        path = f"{f}.{layout.list_name}"
        units, labels = dataset.values(f"{path}.{layout.unit_attr}"), dataset.values(f"{path}.label")
        for sid, us, ls in zip(ids, units, labels):
            rows += [(sid, u, lab) for u, lab in zip(us or [], ls or [])]
    return unit_counts(rows)


def class_bars(items: list) -> dict:
    """Horizontal bars in ``items`` order (first at the top), coloured by interpretation band;
    the hover names the class's number of units."""
    return {"type": "bar", "orientation": "h", "name": "class α", "y": [c for c, _, _ in items],
            "x": [a for _, a, _ in items], "ids": [c for c, _, _ in items], "customdata": [n for _, _, n in items],
            "marker": {"color": [band_color(a) for _, a, _ in items]},
            "hovertemplate": "%{y}: α = %{x:.4f}<br>%{customdata} units<extra></extra>"}


def chart_height(n: int) -> int:
    """Pixels for ``n`` bars, bounded so the chart fits beside the grid."""
    return min(MAX_HEIGHT, max(MIN_HEIGHT, BAR_PX * n + 90))


def every_label(names: list, height: int) -> dict:
    """Axis settings that label every bar (plotly drops every other category label when they
    would touch): the names as explicit ticks, in a font that fits the bar height."""
    per_bar = (min(height, MAX_CHART_HEIGHT) - 90) / max(len(names), 1)
    return {"tickmode": "array", "tickvals": list(names), "ticktext": list(names),
            "tickfont": {"size": max(7, min(12, int(per_bar) - 1))}}


def class_table(items: list) -> str:
    """The shown classes as a markdown table."""
    rows = ["| class | α | units |", "|---|---:|---:|"]
    rows += [f"| {c} | {fmt(a)} | {n} |" for c, a, n in items]
    return "\n".join(rows)


def selection_summary(sel: ClassSelection, flt: ClassFilter) -> str:
    """One line: how many classes, how many the search and the minimum hide, how many shown."""
    parts = [f"{sel.n_classes} classes"]
    if flt.search:
        parts.append(f"{sel.n_searched} match “{flt.search}”")
    if flt.min_units:
        parts.append(f"{sel.n_rare} hidden with fewer than {flt.min_units} units")
    parts.append(f"showing {len(sel.items)} of {sel.n_matching}, {SORTS.get(flt.sort, SORTS['hardest'])}")
    return " · ".join(parts)


def _int(v, default: int) -> int:
    try:
        return max(0, int(v))
    except (TypeError, ValueError):
        return default


class ClassDifficultyPanel(SampleSplit, ScopedRunPanel):
    INTRO = ("α per class. Sort, search and hide classes seen in few units; click a class to show its "
             "labels that do not agree, on the samples where there are some.")
    SCOPES = SCOPES
    SCOPE_LABEL = "Class α"
    RERUN_ADDS = {"diagnostics": "class_difficulty"}

    NAME, LABEL, ICON = "kalos_class_difficulty", "KaLOS: Class difficulty", "category"
    HELP = "Per-class α of a KaLOS agreement run."
    SPLIT_KEY, SPLIT_VALUE, SPLIT_HORIZONTAL = "class", "class α", True

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, alphas = self.scoped(ctx, res, "class_difficulty")
        alphas = {c: v for c, v in alphas.items() if v is not None}
        ctx.panel.state.has_classes = bool(alphas)
        ctx.panel.state.selection = None
        if not alphas:
            return
        ctx.panel.state.class_alpha = clean(alphas)
        layout = RunLayout.from_run(ctx.dataset, run_key)
        ctx.panel.state.class_units = class_unit_counts(ctx.dataset, layout)
        ctx.panel.state.split_choices = None
        self.draw(ctx)
        self.init_split(ctx, skip=set(layout.fields))

    def split_scores(self, ctx) -> dict | None:
        """The shown classes' per-sample α (the run's ``class_difficulty_images``), in their order."""
        images = load_results(ctx.dataset, ctx.panel.state.run_key).get("class_difficulty_images")
        return None if not images else {c: images.get(c) or {} for c in ctx.panel.state.class_names or []}

    def class_filter(self, ctx) -> ClassFilter:
        s = ctx.panel.state
        sort = s.class_sort if s.class_sort in SORTS else "hardest"
        return ClassFilter(sort, _int(s.top_n, TOP_N) if s.top_n is not None else TOP_N, str(s.search or ""),
                           _int(s.min_units, MIN_UNITS) if s.min_units is not None else MIN_UNITS)

    def draw(self, ctx) -> None:
        """Chart, table and summary of the current selection of classes (no database work but the
        split's, when one is chosen)."""
        flt = self.class_filter(ctx)
        sel = select_classes(ctx.panel.state.class_alpha or {}, ctx.panel.state.class_units or {}, flt)
        bars = class_bars(sel.items)
        ctx.panel.data.classes = clean([bars])
        ctx.panel.state.class_names = bars["y"]
        scope = SCOPES.get(ctx.panel.state.scope, SCOPES["per_image"])
        ctx.panel.state.plot_layout = clean(plot_layout(
            f"Class difficulty ({ctx.panel.state.run_key}, {scope})", "α", "class", height=chart_height(len(sel.items)),
            yaxis={"type": "category", "title": {"text": ""}, "autorange": "reversed", "automargin": True,
                   **every_label(bars["y"], chart_height(len(sel.items)))},
            margin=NAMES_MARGIN))
        ctx.panel.state.class_table = class_table(sel.items) if sel.items else None
        ctx.panel.state.summary = selection_summary(sel, flt) + (
            "" if sel.items else " · no class left: clear the search or lower the minimum")
        if ctx.panel.state.split_choices:
            self.draw_split(ctx, ctx.panel.state.split or NO_SPLIT)

    def on_change_sort(self, ctx):
        ctx.panel.state.class_sort = ctx.params.get("value") or "hardest"
        self.draw(ctx)

    def on_change_top_n(self, ctx):
        ctx.panel.state.top_n = _int(ctx.params.get("value"), TOP_N)
        self.draw(ctx)

    def on_change_search(self, ctx):
        ctx.panel.state.search = str(ctx.params.get("value") or "")
        self.draw(ctx)

    def on_change_min_units(self, ctx):
        ctx.panel.state.min_units = _int(ctx.params.get("value"), MIN_UNITS)
        self.draw(ctx)

    def on_click_class(self, ctx):
        label = clicked(ctx, "y", "id", items=ctx.panel.state.class_names or [])
        if label is None:
            return
        label = str(label)
        self.show(ctx, class_view(ctx.dataset, self.layout(ctx), label, current=ctx.view),
                  f"Showing the **{label}** labels that do not agree (unmatched, or another class in their unit), "
                  "on the samples where there are some")

    def render_controls(self, panel, ctx) -> None:
        flt = self.class_filter(ctx)
        row = panel.h_stack("class_controls", align_y="center", gap=2)
        row.enum("class_sort", list(SORTS), default=flt.sort, label="Sort", view=dropdown(list(SORTS), SORTS),
                 on_change=self.on_change_sort)
        row.int("top_n", default=flt.top_n, label="Top N (0: all)", min=0, on_change=self.on_change_top_n)
        row.str("search", default=flt.search, label="Search class", on_change=self.on_change_search)
        row.int("min_units", default=flt.min_units, label="Min. units", min=0, on_change=self.on_change_min_units)

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_classes:
            self.render_missing(panel, "This run has no class difficulty (the *class_difficulty* diagnostic was off). "
                                "Recompute with it:", "no_classes")
            return
        self.render_scope(panel, ctx)
        self.render_controls(panel, ctx)
        chart(panel, "classes", ctx.panel.state.plot_layout, on_click=self.on_click_class)
        if ctx.panel.state.class_table:
            panel.md(ctx.panel.state.class_table, name="class_table")
        self.render_split(panel, ctx)
