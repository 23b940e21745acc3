"""Collaboration heatmap: pairwise α of every rater pair, raters in cluster order, plus an MDS map.

Raters who agree sit next to each other in the heatmap (hierarchical clustering of ``1 - α``)
and close together on the map (classical MDS of the same distances). Clicking a cell shows
the samples where that pair disagrees; clicking a rater on the map shows the samples where
that rater's labels do not agree.
"""

from __future__ import annotations

import fiftyone.operators as foo

from .common import POSITIVE, ScopedRunPanel, chart, clean, clicked, fmt, load_results, plot_layout
from .ordering import alpha_matrix, classical_mds, cluster_order, distances
from .views import pair_disagreement_view

SCOPES = {"per_image": "mean over samples", "global": "whole dataset at once"}

#: red (low α) -> yellow -> green (high α), explicit: plotly.js does not know "RdYlGn" by name
ALPHA_SCALE = [[0.0, "#a50026"], [0.25, "#f46d43"], [0.5, "#ffffbf"], [0.75, "#66bd63"], [1.0, "#006837"]]


def heatmap_figure(nested: dict) -> tuple[list[str], list[list], list[list[float]]]:
    """``(ordered raters, α matrix in that order (None = unknown), MDS coordinates)``."""
    raters = sorted(nested)
    m = alpha_matrix(nested, raters)
    order = cluster_order(m)
    raters = [raters[i] for i in order]
    m = m[order][:, order]
    coords = classical_mds(distances(m), dims=2)
    return raters, clean(m), clean(coords)


class CollaborationPanel(ScopedRunPanel):
    TITLE = "KaLOS: Collaboration heatmap"
    INTRO = ("Pairwise α of every rater pair, computed on the two raters alone; raters that agree "
             "(\"schools of thought\") sit together. Click a cell for the samples where that pair disagrees.")
    SCOPES = SCOPES
    SCOPE_LABEL = "Pairwise α"
    RERUN_ADDS = {"diagnostic": "collaboration"}

    @property
    def config(self):
        return foo.PanelConfig(name="kalos_collaboration", label="KaLOS: Collaboration heatmap",
                               icon="grid_on", category=foo.Categories.ANALYZE,
                               help_markdown="Rater x rater pairwise α (cluster order) and an MDS map of the raters.")

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, nested = self.scoped(ctx, res, "collaboration")
        ctx.panel.state.has_matrix = len(nested) >= 2
        ctx.panel.state.selection = None
        if len(nested) < 2:
            return
        raters, m, coords = heatmap_figure(nested)
        text = [[fmt(v, 2) for v in row] for row in m]
        ctx.panel.state.raters = raters
        ctx.panel.data.heatmap = [{
            "type": "heatmap", "name": "pairwise α", "x": raters, "y": raters, "z": m, "text": text,
            "texttemplate": "%{text}", "zmin": -1 if min(v for row in m for v in row if v is not None) < 0 else 0,
            "zmax": 1, "colorscale": ALPHA_SCALE,
            "colorbar": {"title": {"text": "α"}},
            "hovertemplate": "%{y} × %{x}: α = %{z:.3f}<extra></extra>"}]
        ctx.panel.data.mds = [{
            "type": "scatter", "mode": "markers+text", "name": "raters", "x": [c[0] for c in coords],
            "y": [c[1] for c in coords], "text": raters, "ids": raters, "textposition": "top center",
            "marker": {"size": 14, "color": POSITIVE},
            "hovertemplate": "%{text}<extra></extra>"}]
        n = len(raters)
        ctx.panel.state.heatmap_layout = plot_layout(
            f"Pairwise α ({run_key}, {SCOPES[scope]})", "rater", "rater", height=max(320, 40 * n + 120),
            xaxis={"type": "category", "title": {"text": "rater"}},
            yaxis={"type": "category", "title": {"text": "rater"}, "autorange": "reversed"})
        ctx.panel.state.mds_layout = plot_layout(
            "MDS map of the raters (distance 1 − α)", "MDS 1", "MDS 2", height=360,
            yaxis={"title": {"text": "MDS 2"}, "scaleanchor": "x", "scaleratio": 1})
        pairs = [(m[i][j], raters[i], raters[j]) for i in range(n) for j in range(i + 1, n) if m[i][j] is not None]
        if pairs:
            lo = min(pairs)
            ctx.panel.state.summary = (f"{n} raters, cluster order: {', '.join(raters)} · lowest pair: "
                                       f"**{lo[1]} × {lo[2]}** (α {fmt(lo[0])})")

    def on_click_cell(self, ctx):
        a, b = ctx.params.get("x"), ctx.params.get("y")
        if a is None or b is None:
            return
        a, b = str(a), str(b)
        if a == b:
            self.show_rater(ctx, a)
            return
        self.show(ctx, pair_disagreement_view(ctx.dataset, self.layout(ctx), a, b),
                  f"Showing samples where **{a}** and **{b}** disagree (their labels only)")

    def on_click_rater(self, ctx):
        rater = clicked(ctx, "id", items=ctx.panel.state.raters or [])
        if rater is None:
            return
        self.show_rater(ctx, str(rater))

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_matrix:
            self.render_missing(panel, "This run has no collaboration matrix (the *collaboration* diagnostic was off). "
                                "Recompute with it:", "no_matrix")
            return
        self.render_scope(panel, ctx)
        chart(panel, "heatmap", ctx.panel.state.heatmap_layout, on_click=self.on_click_cell)
        chart(panel, "mds", ctx.panel.state.mds_layout, on_click=self.on_click_rater)
