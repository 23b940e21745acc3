"""Rater scorecards: each rater's precision, recall and F1 against the reference; per class of the
chosen rater, its extras and misses, and its confusion matrix against the reference (reference
class x rater class, ``(none)`` for a miss or an extra). A click on a rater shows the labels behind
its extras and misses, a click on a class bar those of that class, a click on a confusion cell
exactly the labels that cell counts. A subset definition (object size, a sample field, a label
attribute, the saved views) splits the scorecard side by side; a click on a bar shows that rater's
labels in that subset.

Reads a stored scorecard run (``config.method == "kalos_scorecard"``, :mod:`kalos_core.scorecard`):
its rows, per rater the ids of the labels behind each count (``labels``) and its label outcomes
(``outcomes``), from which :mod:`kalos_core.scorecard.subsets` derives the cells and subsets.
"""

from __future__ import annotations

from kalos_core.scorecard.subsets import confusion_cell_ids, confusion_matrix, subset_ids, subset_rows

from .common import LEGEND, RunPanel, chart, clean, clicked, dropdown, fmt, load_results, plot_layout
from .splits import COLOURS as RATER_COLOURS, NO_SPLIT

METRICS = {"precision": "#1f77b4", "recall": "#ff7f0e", "f1": "#2ca02c"}
OUTCOMES = {"extras": "#d62728", "misses": "#9467bd"}
SHOWN_CLASSES = 30


def confusion_trace(table: dict, shown: int = SHOWN_CLASSES) -> tuple[dict, int]:
    """The heatmap of one rater's confusion (rows the reference class, columns the rater's), the
    ``shown`` classes with the most labels and ``(none)``; and how many classes were left out."""
    conf = confusion_matrix(table)
    classes, m = conf["classes"], conf["matrix"]
    k = len(classes) - 1
    load = [sum(m[i]) + sum(row[i] for row in m) for i in range(k)]
    keep = sorted(sorted(range(k), key=lambda i: (-load[i], classes[i]))[:shown]) + [k]
    names = [classes[i] for i in keep]
    z = [[m[i][j] for j in keep] for i in keep]
    return {"type": "heatmap", "name": "confusion", "x": names, "y": names, "z": z, "text": z,
            "texttemplate": "%{text}", "colorscale": "Blues", "colorbar": {"title": {"text": "labels"}},
            "hovertemplate": "reference %{y} → rater %{x}: %{z}<extra></extra>"}, k - len(keep) + 1


def subset_traces(split: dict, metric: str = "f1") -> list[dict]:
    """One bar trace per rater over the subsets (its ``(all)`` row in each): ``metric`` high, TP /
    FP / FN on hover; point ids ``rater|subset``."""
    raters = list(dict.fromkeys(r["rater"] for rows in split.values() for r in rows))
    traces = []
    for n, rater in enumerate(raters):
        rows = {s: next((r for r in rows if r["rater"] == rater and r["class"] == "(all)"), None)
                for s, rows in split.items()}
        rows = {s: r for s, r in rows.items() if r is not None}
        traces.append({"type": "bar", "name": rater, "x": list(rows), "y": [r[metric] for r in rows.values()],
                       "ids": [f"{rater}|{s}" for s in rows], "marker": {"color": RATER_COLOURS[n % 8]},
                       "customdata": [[r["tp"], r["fp"], r["fn"]] for r in rows.values()],
                       "hovertemplate": f"{rater} · %{{x}}: {metric} %{{y:.3f}} (TP %{{customdata[0]}}, "
                                        "FP %{customdata[1]}, FN %{customdata[2]})<extra></extra>"})
    return traces


def subset_md(split: dict) -> str:
    """The split as a table: a row per subset, per rater its P / R / F1 and TP / FP / FN."""
    lines = ["| subset | rater | P | R | F1 | TP | FP | FN |", "|---|---|---|---|---|---|---|---|"]
    for s, rows in split.items():
        for r in (r for r in rows if r["class"] == "(all)"):
            lines.append(f"| {s} | {r['rater']} | {fmt(r['precision'])} | {fmt(r['recall'])} | {fmt(r['f1'])} | "
                         f"{r['tp']} | {r['fp']} | {r['fn']} |")
    return "\n".join(lines)


def rater_traces(rows: list) -> list[dict]:
    """One bar trace per metric over the raters (their ``(all)`` rows)."""
    totals = [r for r in rows if r["class"] == "(all)"]
    names = [r["rater"] for r in totals]
    return [{"type": "bar", "name": m, "x": names, "y": [r[m] for r in totals], "ids": [f"{m}:{n}" for n in names],
             "marker": {"color": colour}, "hovertemplate": "%{x}: " + m + " %{y:.3f}<extra></extra>"}
            for m, colour in METRICS.items()]


def pct(v) -> str:
    return "—" if v is None else f"{100 * v:+.1f} %"


def rater_md(rows: list) -> str:
    """The raters' ``(all)`` rows beside the chart's P / R / F1 (narrow, to fit a split beside the
    grid): localisation error, extras, misses and the size tendency with its 95 % interval."""
    lines = ["| rater | loc. error | extras | misses | size | 95 % CI |", "|---|---|---|---|---|---|"]
    for r in (r for r in rows if r["class"] == "(all)"):
        lo, hi = r.get("size_bias_lo"), r.get("size_bias_hi")
        ci = "—" if lo is None else f"{100 * lo:+.1f} … {100 * hi:+.1f}"
        lines.append(f"| {r['rater']} | {fmt(r['loc_error'])} | {r['fp']} | {r['fn']} | {pct(r.get('size_bias'))} | {ci} |")
    return "\n".join(lines)


def class_traces(rows: list, rater: str) -> list[dict]:
    """Extras and misses of ``rater`` per class, the classes with the most first (at most 30)."""
    per = sorted((r for r in rows if r["rater"] == rater and r["class"] != "(all)" and r["fp"] + r["fn"]),
                 key=lambda r: (-(r["fp"] + r["fn"]), r["class"]))[:SHOWN_CLASSES]
    classes = [r["class"] for r in per]
    return [{"type": "bar", "name": name, "x": classes, "y": [r[col] for r in per],
             "ids": [f"{name}:{c}" for c in classes], "marker": {"color": colour},
             "hovertemplate": "%{x}: %{y} " + name + "<extra></extra>"}
            for name, col, colour in (("extras", "fp", OUTCOMES["extras"]), ("misses", "fn", OUTCOMES["misses"]))]


def trend_traces(trend: dict, metric: str = "f1") -> list[dict]:
    """One line per rater over the scorecard runs (x: ``run key (round)``), ``metric`` high; a run
    that does not score the rater leaves a gap."""
    x = [f"{key} ({rnd})" for key, rnd in trend["runs"]]
    return [{"type": "scatter", "mode": "lines+markers", "name": rater, "x": x,
             "y": [None if r is None else r[metric] for r in rows], "marker": {"color": RATER_COLOURS[n % 8]},
             "hovertemplate": f"{rater} · %{{x}}: {metric} %{{y:.3f}}<extra></extra>"}
            for n, (rater, rows) in enumerate(trend["rows"].items())]


def trend_md(trend: dict) -> str:
    """The trend as a table: a row per rater, per run its P / R / F1."""
    head = [f"{key} ({rnd})" for key, rnd in trend["runs"]]
    lines = ["| rater | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for rater, rows in trend["rows"].items():
        cells = ["—" if r is None else f"{fmt(r['precision'])} / {fmt(r['recall'])} / {fmt(r['f1'])}" for r in rows]
        lines.append(f"| {rater} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_md(res: dict) -> str:
    totals = [r for r in res.get("rows") or [] if r["class"] == "(all)"]
    lines = [f"**Reference: {res.get('reference')}** · IoU {res.get('iou')} · {res.get('n_images', 0)} samples",
             " · ".join(f"{r['rater']}: P {fmt(r['precision'])} R {fmt(r['recall'])} F1 {fmt(r['f1'])} "
                        f"(COCO .50:.95 F1 {fmt(r['f1_coco'])})" for r in totals),
             "Click a rater: the labels behind its extras and misses; a class bar: those of that class"]
    return "  \n".join(lines)


class ScorecardPanel(RunPanel):
    HELP_URL = "docs/scorecards.md"
    INTRO = ("Each rater against the reference (an expert, or the other raters' majority): precision, recall, F1; "
             "per class its extras and misses, each bar clickable to the labels behind it.")
    EMPTY = ("No KaLOS scorecard run on this dataset yet. Compute one: it scores each rater's boxes against a "
             "reference rater or the other raters' majority.")
    ACTION_LABEL = "Compute scorecards"

    NAME, LABEL, ICON = "kalos_scorecards", "KaLOS: Rater scorecards", "assignment_ind"
    HELP = "Each rater's precision, recall, F1, extras and misses against a reference."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        rows = res.get("rows") or []
        raters = list(res.get("raters") or [])
        ctx.panel.state.raters = raters
        ctx.panel.data.raters = clean(rater_traces(rows))
        ctx.panel.state.raters_layout = clean(plot_layout(
            f"P, R, F1 at IoU {res.get('iou')}", "rater", "score", height=300,
            showlegend=True, legend=LEGEND, barmode="group", xaxis={"type": "category"},
            yaxis={"title": {"text": "score"}, "range": [0, 1.05]}))
        ctx.panel.state.summary = summary_md(res)
        ctx.panel.state.raters_md = rater_md(rows)
        ctx.panel.state.selection = None
        chosen = ctx.panel.state.rater
        self.draw_classes(ctx, chosen if chosen in raters else next(iter(raters), None), rows, res)
        from ..fiftyone_layer.measures.scorecard import subset_choices

        cfg = ctx.dataset.get_run_info(run_key).config
        ctx.panel.state.has_outcomes = bool(res.get("outcomes"))
        ctx.panel.state.split_choices = {NO_SPLIT: "(no split)", **subset_choices(ctx.dataset, cfg)}
        split = ctx.panel.state.split
        self.draw_split(ctx, split if split in ctx.panel.state.split_choices else NO_SPLIT, res)
        self.draw_trend(ctx)

    def draw_trend(self, ctx) -> None:
        """Each rater's F1 across the scorecard runs (rounds) when there are several."""
        from ..fiftyone_layer.measures.scorecard import scorecard_trend

        trend = scorecard_trend(ctx.dataset)
        if len(trend["runs"]) < 2:
            ctx.panel.data.trend, ctx.panel.state.trend_layout, ctx.panel.state.trend_md = [], None, None
            return
        ctx.panel.data.trend = clean(trend_traces(trend))
        ctx.panel.state.trend_layout = clean(plot_layout(
            "F1 of each rater across the scorecard runs (oldest first; the round its rater fields belong to)",
            "run", "F1", height=300, showlegend=True, legend=LEGEND, xaxis={"type": "category"},
            yaxis={"title": {"text": "F1"}, "range": [0, 1.05]}))
        ctx.panel.state.trend_md = "P / R / F1 per run:\n\n" + trend_md(trend)

    def draw_classes(self, ctx, rater: str | None, rows: list | None = None, res: dict | None = None) -> None:
        ctx.panel.state.rater = rater
        res = res if res is not None else load_results(ctx.dataset, ctx.panel.state.run_key)
        rows = rows if rows is not None else res.get("rows") or []
        ctx.panel.data.classes = clean(class_traces(rows, rater) if rater else [])
        ctx.panel.state.classes_layout = clean(plot_layout(
            f"{rater}: extras and misses per class (most first)", "class", "labels", height=300, showlegend=True,
            legend=LEGEND, barmode="group", xaxis={"type": "category"}))
        table = (res.get("outcomes") or {}).get(rater)
        if table is None:
            ctx.panel.data.confusion, ctx.panel.state.confusion_layout = [], None
            return
        trace, left_out = confusion_trace(table)
        n = len(trace["x"])
        ctx.panel.data.confusion = clean([trace])
        ctx.panel.state.confusion_layout = clean(plot_layout(
            f"{rater}: confusion against the reference (click a cell: its labels)"
            + (f"; the {n - 1} classes with the most labels, {left_out} more left out" if left_out else ""),
            "rater's class", "reference class", height=max(320, 22 * n + 140),
            xaxis={"type": "category", "title": {"text": "rater's class"}},
            yaxis={"type": "category", "title": {"text": "reference class"}, "autorange": "reversed"}))

    def draw_split(self, ctx, choice: str, res: dict | None = None) -> None:
        """The scorecard split by the subset definition ``choice`` (:func:`subset_choices`)."""
        ctx.panel.state.split = choice
        if choice == NO_SPLIT or not ctx.panel.state.has_outcomes:
            ctx.panel.data.subsets, ctx.panel.state.subsets_layout, ctx.panel.state.subsets_md = [], None, None
            return
        res = res if res is not None else load_results(ctx.dataset, ctx.panel.state.run_key)
        split = subset_rows(res, *self._definition(ctx, choice))
        label = (ctx.panel.state.split_choices or {}).get(choice, choice)
        ctx.panel.data.subsets = clean(subset_traces(split))
        ctx.panel.state.subsets_layout = clean(plot_layout(
            f"F1 by {label} (click a bar: that rater's labels in that subset)", "subset", "F1", height=320,
            showlegend=True, legend=LEGEND, barmode="group", xaxis={"type": "category"},
            yaxis={"title": {"text": "F1"}, "range": [0, 1.05]}))
        ctx.panel.state.subsets_md = subset_md(split)

    def _definition(self, ctx, choice: str) -> tuple:
        from ..fiftyone_layer.measures.scorecard import subset_definition

        return subset_definition(ctx.dataset, ctx.dataset.get_run_info(ctx.panel.state.run_key).config, choice)

    def show_labels(self, ctx, label_ids: list, message: str) -> None:
        """Only ``label_ids`` of the run's label fields (its reference field too, where it has one)."""
        from ..fiftyone_layer.measures.scorecard import label_fields

        fields = label_fields(ctx.dataset, ctx.dataset.get_run_info(ctx.panel.state.run_key).config)
        self.show(ctx, ctx.dataset.select_labels(ids=label_ids, fields=fields), message)

    def on_change_split(self, ctx):
        self.draw_split(ctx, ctx.params.get("value") or NO_SPLIT)

    def on_click_cell(self, ctx):
        ref, mine, rater = clicked(ctx, "y"), clicked(ctx, "x"), ctx.panel.state.rater
        if ref is None or mine is None or rater is None:
            return
        table = (load_results(ctx.dataset, ctx.panel.state.run_key).get("outcomes") or {}).get(rater) or {}
        ids = confusion_cell_ids(table, str(ref), str(mine)) if table else []
        self.show_labels(ctx, ids, f"Showing the {len(ids)} labels of **{rater}**'s cell reference **{ref}** → "
                         f"rater **{mine}**")

    def on_click_subset(self, ctx):
        point = clicked(ctx, "id")
        if not point or "|" not in str(point) or ctx.panel.state.split in (None, NO_SPLIT):
            return
        rater, subset = str(point).split("|", 1)
        res = load_results(ctx.dataset, ctx.panel.state.run_key)
        if rater not in (res.get("outcomes") or {}):
            return
        by, values = self._definition(ctx, ctx.panel.state.split)
        ids = subset_ids(res, rater, by, subset, values)
        self.show_labels(ctx, ids, f"Showing **{rater}**'s labels in **{subset}** (found, extras, misses)")

    def _ids(self, ctx, rater: str, outcome: str | None = None, cls: str | None = None) -> list:
        labels = (load_results(ctx.dataset, ctx.panel.state.run_key).get("labels") or {}).get(rater) or {}
        return [i for o in ((outcome,) if outcome else ("extras", "misses"))
                for c, ids in (labels.get(o) or {}).items() if cls is None or c == cls for i in ids]

    def on_change_rater(self, ctx):
        self.draw_classes(ctx, ctx.params.get("value"))
        self._count_traces(ctx)

    def on_click_rater(self, ctx):
        point = clicked(ctx, "id")
        rater = str(point).split(":", 1)[1] if point and ":" in str(point) else clicked(ctx, "x")
        if rater not in (ctx.panel.state.raters or []):
            return
        self.draw_classes(ctx, rater)
        self.show_labels(ctx, self._ids(ctx, rater), f"Showing the labels behind **{rater}**'s extras and misses")

    def on_click_class(self, ctx):
        point, rater = clicked(ctx, "id"), ctx.panel.state.rater
        if not point or ":" not in str(point) or rater is None:
            return
        outcome, cls = str(point).split(":", 1)
        if outcome not in OUTCOMES:
            return
        self.show_labels(ctx, self._ids(ctx, rater, outcome, cls), f"Showing **{rater}**'s {outcome} of **{cls}**")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        chart(panel, "raters", ctx.panel.state.raters_layout, on_click=self.on_click_rater)
        if ctx.panel.state.raters_md:
            panel.md(ctx.panel.state.raters_md, name="raters_table")
        raters = ctx.panel.state.raters or []
        if raters:
            panel.enum("rater", raters, default=ctx.panel.state.rater, label="Classes of",
                       view=dropdown(raters), on_change=self.on_change_rater)
            chart(panel, "classes", ctx.panel.state.classes_layout, on_click=self.on_click_class)
            if ctx.panel.state.confusion_layout:
                chart(panel, "confusion", ctx.panel.state.confusion_layout, on_click=self.on_click_cell)
        choices = ctx.panel.state.split_choices or {}
        if ctx.panel.state.has_outcomes and choices:
            panel.enum("split", list(choices), default=ctx.panel.state.split or NO_SPLIT, label="Split by",
                       view=dropdown(list(choices), choices), on_change=self.on_change_split)
            if ctx.panel.state.subsets_layout:
                chart(panel, "subsets", ctx.panel.state.subsets_layout, on_click=self.on_click_subset)
                panel.md(ctx.panel.state.subsets_md or "", name="subsets_table")
        elif ctx.panel.state.raters:
            panel.md("This run predates label outcomes: recompute it for the confusion cells and subsets.",
                     name="no_outcomes")
        if ctx.panel.state.trend_layout:
            chart(panel, "trend", ctx.panel.state.trend_layout)
            panel.md(ctx.panel.state.trend_md or "", name="trend_table")
