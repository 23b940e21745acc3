"""Annotator vitality: ``V_r = α_R - α_(R without r)`` per rater, one bar each.

Positive: the rater builds consensus; negative: the rater adds noise. Clicking a bar shows
the samples where that rater has labels that are unmatched or of a disagreeing class.
"""

from __future__ import annotations

import fiftyone.operators as foo

from .common import NEGATIVE, POSITIVE, ScopedRunPanel, chart, clean, fmt, load_results, plot_layout

SCOPES = {"per_image": "mean over samples (≥ 3 raters)", "global": "whole dataset at once"}


def vitality_bars(vitality: dict, summary: dict | None = None) -> dict:
    """One bar per rater, highest vitality first; green for ≥ 0, red below."""
    items = sorted(((r, v) for r, v in vitality.items() if v is not None), key=lambda t: (-t[1], t[0]))
    summary = summary or {}
    text = []
    for r, _ in items:
        s = summary.get(r) or {}
        n = int(s.get("annotations", 0))
        agreed = s.get("agreed", 0) / n if n else None
        text.append(f"{n} labels, {fmt(agreed * 100 if agreed is not None else None, 0)}% agreed")
    return {"type": "bar", "name": "vitality", "x": [r for r, _ in items], "y": [v for _, v in items],
            "ids": [r for r, _ in items], "text": text,
            "marker": {"color": [POSITIVE if v >= 0 else NEGATIVE for _, v in items]},
            "hovertemplate": "%{x}: V = %{y:.4f}<br>%{text}<extra></extra>", "textposition": "none"}


class AnnotatorVitalityPanel(ScopedRunPanel):
    TITLE = "KaLOS: Annotator vitality"
    INTRO = ("V = α with all raters − α without the rater. Positive: consensus builder; negative: "
             "source of noise. Click a bar to show the samples where that rater's labels do not agree.")
    SCOPES = SCOPES
    SCOPE_LABEL = "Vitality"
    RERUN_ADDS = {"diagnostic": "vitality"}

    @property
    def config(self):
        return foo.PanelConfig(name="kalos_annotator_vitality", label="KaLOS: Annotator vitality",
                               icon="groups", category=foo.Categories.ANALYZE,
                               help_markdown="Per-rater vitality of a KaLOS agreement run.")

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, vit = self.scoped(ctx, res, "vitality")
        ctx.panel.state.has_vitality = bool(vit)
        ctx.panel.state.selection = None
        if not vit:
            return
        ctx.panel.data.vitality = clean([vitality_bars(vit, res.get("rater_summary"))])
        worst = min(vit, key=lambda r: (vit[r] if vit[r] is not None else 0))
        ctx.panel.state.summary = (f"{len(vit)} raters · lowest vitality: **{worst}** ({fmt(vit[worst], 4)}) · "
                                   f"scope: {SCOPES[scope]}")
        ctx.panel.state.plot_layout = clean(plot_layout(
            f"Annotator vitality ({run_key})", "rater", "vitality V", height=380,
            xaxis={"title": {"text": "rater"}, "type": "category"},
            shapes=[{"type": "line", "x0": 0, "x1": 1, "xref": "paper", "y0": 0, "y1": 0, "yref": "y",
                     "line": {"color": "#888", "width": 1}}]))

    def on_click_rater(self, ctx):
        rater = ctx.params.get("x") or ctx.params.get("id")
        if rater is None:
            return
        self.show_rater(ctx, str(rater))

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_vitality:
            self.render_missing(panel, "This run has no vitality: it needs the *vitality* diagnostic and at least "
                                "three raters on some sample. Recompute with it:", "no_vitality")
            return
        self.render_scope(panel, ctx)
        chart(panel, "vitality", ctx.panel.state.plot_layout, on_click=self.on_click_rater)
