"""Rater scorecards: each rater's precision, recall and F1 against the reference; per class of the
chosen rater, its extras and misses. A click on a rater shows the labels behind its extras and
misses, a click on a class bar those of that class.

Reads a stored scorecard run (``config.method == "kalos_scorecard"``, :mod:`kalos_core.scorecard`):
its rows and, per rater, the ids of the labels behind each count (``labels``).
"""

from __future__ import annotations

from .common import LEGEND, RunPanel, chart, clean, clicked, dropdown, fmt, load_results, plot_layout

METRICS = {"precision": "#1f77b4", "recall": "#ff7f0e", "f1": "#2ca02c"}
OUTCOMES = {"extras": "#d62728", "misses": "#9467bd"}
SHOWN_CLASSES = 30


def rater_traces(rows: list) -> list[dict]:
    """One bar trace per metric over the raters (their ``(all)`` rows)."""
    totals = [r for r in rows if r["class"] == "(all)"]
    names = [r["rater"] for r in totals]
    return [{"type": "bar", "name": m, "x": names, "y": [r[m] for r in totals], "ids": [f"{m}:{n}" for n in names],
             "marker": {"color": colour}, "hovertemplate": "%{x}: " + m + " %{y:.3f}<extra></extra>"}
            for m, colour in METRICS.items()]


def class_traces(rows: list, rater: str) -> list[dict]:
    """Extras and misses of ``rater`` per class, the classes with the most first (at most 30)."""
    per = sorted((r for r in rows if r["rater"] == rater and r["class"] != "(all)" and r["fp"] + r["fn"]),
                 key=lambda r: (-(r["fp"] + r["fn"]), r["class"]))[:SHOWN_CLASSES]
    classes = [r["class"] for r in per]
    return [{"type": "bar", "name": name, "x": classes, "y": [r[col] for r in per],
             "ids": [f"{name}:{c}" for c in classes], "marker": {"color": colour},
             "hovertemplate": "%{x}: %{y} " + name + "<extra></extra>"}
            for name, col, colour in (("extras", "fp", OUTCOMES["extras"]), ("misses", "fn", OUTCOMES["misses"]))]


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
        ctx.panel.state.selection = None
        chosen = ctx.panel.state.rater
        self.draw_classes(ctx, chosen if chosen in raters else next(iter(raters), None), rows)

    def draw_classes(self, ctx, rater: str | None, rows: list | None = None) -> None:
        ctx.panel.state.rater = rater
        rows = rows if rows is not None else load_results(ctx.dataset, ctx.panel.state.run_key).get("rows") or []
        ctx.panel.data.classes = clean(class_traces(rows, rater) if rater else [])
        ctx.panel.state.classes_layout = clean(plot_layout(
            f"{rater}: extras and misses per class (most first)", "class", "labels", height=300, showlegend=True,
            legend=LEGEND, barmode="group", xaxis={"type": "category"}))

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
        raters = ctx.panel.state.raters or []
        if raters:
            panel.enum("rater", raters, default=ctx.panel.state.rater, label="Classes of",
                       view=dropdown(raters), on_change=self.on_change_rater)
            chart(panel, "classes", ctx.panel.state.classes_layout, on_click=self.on_click_class)
