"""Collaboration heatmap: pairwise α of every rater pair, raters in cluster order, plus an MDS map.

Raters who agree sit next to each other in the heatmap (hierarchical clustering of ``1 - α``)
and close together on the map (classical MDS of the same distances). Clicking a cell shows
the samples where that pair disagrees; clicking a rater on the map shows the samples where
that rater's labels do not agree. Models (a run's model fields) are marked: "(model)" ticks and a
◆ on the heatmap axes, diamond markers on the map, and the run's verdict in the summary.

Compare with a second run (round 2 of the same raters, with vs without a model, ...): the
panel reads both runs' stored pairwise α and shared-image counts and shows M, M′, |M − M′|
and DIC (:func:`kalos_core.dic.compare_runs`; pairs sharing fewer than 10 images masked),
the raters present in one run only, the clusters ("schools of thought": pairs with α above
0.6 linked) and the two MDS maps aligned by Procrustes, each rater linked to itself.
"""

from __future__ import annotations


from kalos_core.dic import DICConfig, compare_runs

from .common import (NEUTRAL, POSITIVE, ScopedRunPanel, chart, clean, clicked, dropdown, fmt, load_results,
                     plot_layout, runs_of)
from .ordering import alpha_matrix, classical_mds, cluster_order, distances
from ..fiftyone_layer.views import pair_disagreement_view
from .vitality import MODEL_LINE, layout_with_models, model_verdicts, tick_label

#: the second-run dropdown's "no comparison" entry
NO_COMPARE = "(none)"
MODEL_SYMBOL, MODEL_MARK = "diamond", "◆ "
#: marker colours of the clusters on the aligned maps
CLUSTER_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]

SCOPES = {"per_image": "mean over samples", "global": "whole dataset at once"}

#: red (low α) -> yellow -> green (high α), explicit: plotly.js does not know "RdYlGn" by name
ALPHA_SCALE = [[0.0, "#a50026"], [0.25, "#f46d43"], [0.5, "#ffffbf"], [0.75, "#66bd63"], [1.0, "#006837"]]


def axis_labels(raters, models) -> list[str]:
    """Heatmap tick labels: a model's carries a ◆ and "(model)"."""
    return [(MODEL_MARK if r in models else "") + tick_label(r, models) for r in raters]


def matrix_trace(name: str, raters: list[str], m: list[list], zmin: float, zmax: float, scale, title: str) -> dict:
    """A rater x rater heatmap; ``None`` cells (masked pairs) are blank and say so on hover."""
    text = [["masked" if v is None else fmt(v, 2) for v in row] for row in m]
    return {"type": "heatmap", "name": name, "x": raters, "y": raters, "z": m, "text": text,
            "texttemplate": "%{text}", "zmin": zmin, "zmax": zmax, "colorscale": scale,
            "colorbar": {"title": {"text": title}}, "hoverongaps": True,
            "hovertemplate": "%{y} × %{x}: %{text}<extra></extra>"}


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
    INTRO = ("Pairwise α of every rater pair, computed on the two raters alone; raters that agree "
             "(\"schools of thought\") sit together. Click a cell for the samples where that pair disagrees.")
    SCOPES = SCOPES
    SCOPE_LABEL = "Pairwise α"
    RERUN_ADDS = {"diagnostics": "collaboration"}

    NAME, LABEL, ICON = "kalos_collaboration", "KaLOS: Collaboration heatmap", "grid_on"
    HELP = "Rater x rater pairwise α (cluster order) and an MDS map of the raters."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, nested = self.scoped(ctx, res, "collaboration")
        ctx.panel.state.has_matrix = len(nested) >= 2
        ctx.panel.state.selection = None
        if len(nested) < 2:
            return
        raters, m, coords = heatmap_figure(nested)
        models = [r for r in res.get("models") or [] if r in raters]
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
            "y": [c[1] for c in coords], "text": [tick_label(r, models) for r in raters], "ids": raters,
            "textposition": "top center",
            "marker": {"size": 14, "color": [NEUTRAL if r in models else POSITIVE for r in raters],
                       "symbol": [MODEL_SYMBOL if r in models else "circle" for r in raters],
                       "line": {"color": MODEL_LINE, "width": [2 if r in models else 0 for r in raters]}},
            "hovertemplate": "%{text}<extra></extra>"}]
        n = len(raters)
        ticks = {"tickmode": "array", "tickvals": raters, "ticktext": axis_labels(raters, models)}
        ctx.panel.state.heatmap_layout = plot_layout(
            f"Pairwise α ({run_key}, {SCOPES[scope]})", "rater", "rater", height=max(320, 40 * n + 120),
            xaxis={"type": "category", "title": {"text": "rater"}, **ticks},
            yaxis={"type": "category", "title": {"text": "rater"}, "autorange": "reversed", **ticks})
        ctx.panel.state.mds_layout = plot_layout(
            "MDS map of the raters (distance 1 − α)", "MDS 1", "MDS 2", height=360,
            yaxis={"title": {"text": "MDS 2"}, "scaleanchor": "x", "scaleratio": 1})
        pairs = [(m[i][j], raters[i], raters[j]) for i in range(n) for j in range(i + 1, n) if m[i][j] is not None]
        if pairs:
            lo = min(pairs)
            ctx.panel.state.summary = "  \n".join([
                f"{n} raters, cluster order: {', '.join(axis_labels(raters, models))} · lowest pair: "
                f"**{lo[1]} × {lo[2]}** (α {fmt(lo[0])})", *model_verdicts(res, scope)])
        others = [k for k in runs_of(ctx.dataset, self.METHOD) if k != run_key]
        ctx.panel.state.compare_runs = [NO_COMPARE, *others]
        if ctx.panel.state.compare_key not in others:
            ctx.panel.state.compare_key = NO_COMPARE
        self.load_compare(ctx, res, scope)

    # -- a second run: DIC, M, M', |M - M'|, aligned maps ---------------------------------------
    def load_compare(self, ctx, res: dict, scope: str) -> None:
        key = ctx.panel.state.compare_key
        ctx.panel.state.dic = None
        if not key or key == NO_COMPARE:
            return
        other = load_results(ctx.dataset, key)
        suffix = "_global" if scope == "global" else ""
        second = other.get(f"collaboration{suffix}") or {}
        if len(second) < 2:
            ctx.panel.state.dic = {"error": f"run {key!r} has no pairwise α matrix (collaboration diagnostic off)"}
            return
        # shared-image counts: per sample (collaboration_n), the same for the global scope
        out = compare_runs(res.get(f"collaboration{suffix}") or {}, second, res.get("collaboration_n"),
                           other.get("collaboration_n"), DICConfig())
        models = set(res.get("models") or []) | set(other.get("models") or [])
        raters = out.raters
        ticks = axis_labels(raters, models)
        diff_max = max([v for row in out.difference for v in row if v is not None] or [1.0])
        ctx.panel.data.dic_first = [matrix_trace("M", ticks, out.first, -1, 1, ALPHA_SCALE, "α")]
        ctx.panel.data.dic_second = [matrix_trace("M′", ticks, out.second, -1, 1, ALPHA_SCALE, "α")]
        diff = matrix_trace("|M − M′|", raters, out.difference, 0, max(diff_max, 1e-9), "Reds", "|Δα|")
        ctx.panel.data.dic_difference = [diff]
        ctx.panel.data.dic_maps = clean(aligned_map_traces(out, models))
        run_key = ctx.panel.state.run_key
        size = max(300, 36 * len(raters) + 120)
        square = lambda title, tick_text=None: plot_layout(
            title, "rater", "rater", height=size,
            xaxis={"type": "category", **({"tickmode": "array", "tickvals": raters, "ticktext": tick_text}
                                          if tick_text else {})},
            yaxis={"type": "category", "autorange": "reversed",
                   **({"tickmode": "array", "tickvals": raters, "ticktext": tick_text} if tick_text else {})})
        ctx.panel.state.dic_layouts = {
            "first": square(f"M: pairwise α of {run_key}"), "second": square(f"M′: pairwise α of {key}"),
            "difference": square("|M − M′| (click a cell: that pair's disagreements in this run)", ticks),
            "maps": plot_layout(f"MDS maps aligned by Procrustes: ● {run_key}, ○ {key}", "MDS 1", "MDS 2",
                                height=380, yaxis={"title": {"text": "MDS 2"}, "scaleanchor": "x", "scaleratio": 1})}
        ctx.panel.state.dic = clean({
            "value": out.dic, "key": key, "n_raters": len(raters), "only_first": out.only_first,
            "only_second": out.only_second, "masked": [f"{a} × {b}" for a, b in out.masked_pairs],
            "clusters_first": out.clusters_first, "clusters_second": out.clusters_second,
            "disparity": out.procrustes_disparity, "min_shared": out.config["min_shared"],
            "level": out.config["level"]})

    def on_change_compare(self, ctx):
        ctx.panel.state.compare_key = ctx.params.get("value") or NO_COMPARE
        self.load_run(ctx, ctx.panel.state.run_key)

    def on_click_cell(self, ctx):
        a, b = ctx.params.get("x"), ctx.params.get("y")
        if a is None or b is None:
            return
        a, b = str(a), str(b)
        if a == b:
            self.show_rater(ctx, a)
            return
        self.show(ctx, pair_disagreement_view(ctx.dataset, self.layout(ctx), a, b, current=ctx.view),
                  f"Showing samples where **{a}** and **{b}** disagree (their labels only)")

    layout = staticmethod(layout_with_models)

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
        self.render_compare(panel, ctx)

    def render_compare(self, panel, ctx):
        choices = ctx.panel.state.compare_runs or [NO_COMPARE]
        if len(choices) < 2:
            return
        panel.md("#### Compare with a second run (DIC)", name="compare_title")
        panel.enum("compare_key", choices, default=ctx.panel.state.compare_key or NO_COMPARE,
                   label="Second run", view=dropdown(choices), on_change=self.on_change_compare)
        dic = ctx.panel.state.dic
        if not dic:
            return
        if dic.get("error"):
            panel.md(dic["error"], name="dic_summary")
            return
        panel.md(dic_text(dic), name="dic_summary")
        layouts = ctx.panel.state.dic_layouts or {}
        chart(panel, "dic_first", layouts.get("first"))
        chart(panel, "dic_second", layouts.get("second"))
        chart(panel, "dic_difference", layouts.get("difference"), on_click=self.on_click_cell)
        chart(panel, "dic_maps", layouts.get("maps"), on_click=self.on_click_rater)


def dic_text(dic: dict) -> str:
    """The comparison in words: DIC, raters of one run only, masked pairs, clusters."""
    clusters = lambda groups: " · ".join("{" + ", ".join(g) + "}" for g in groups) or "—"
    lines = [f"**DIC** = ‖M − M′‖ / ‖M‖ (Frobenius) = **{fmt(dic['value'], 4)}** over {dic['n_raters']} raters "
             f"in both runs (0 = the same rater structure)",
             f"Only in this run: {', '.join(dic['only_first']) or 'none'} · only in {dic['key']}: "
             f"{', '.join(dic['only_second']) or 'none'}",
             f"Masked pairs (fewer than {dic['min_shared']} shared images in either run): "
             f"{', '.join(dic['masked']) or 'none'}",
             f"Schools of thought (pairs with α > {dic['level']:g} linked): this run {clusters(dic['clusters_first'])};"
             f" {dic['key']} {clusters(dic['clusters_second'])}",
             f"Procrustes disparity of the aligned maps: {fmt(dic['disparity'], 3)}"]
    return "  \n".join(lines)


def aligned_map_traces(out, models) -> list[dict]:
    """Both runs' MDS maps (the second aligned to the first), a line from each rater to itself,
    markers coloured by the first run's cluster."""
    raters = out.raters
    cluster_of = {r: k for k, group in enumerate(out.clusters_first) for r in group}
    colour = [CLUSTER_COLOURS[cluster_of.get(r, 0) % len(CLUSTER_COLOURS)] for r in raters]
    symbol = lambda r, open_: (MODEL_SYMBOL if r in models else "circle") + ("-open" if open_ else "")
    links = {"type": "scatter", "mode": "lines", "name": "same rater", "hoverinfo": "skip",
             "line": {"color": "#999", "width": 1, "dash": "dot"}, "x": [], "y": []}
    for r in raters:
        (x1, y1), (x2, y2) = out.map_first[r], out.map_second[r]
        links["x"] += [x1, x2, None]
        links["y"] += [y1, y2, None]
    points = lambda maps, open_, name: {
        "type": "scatter", "mode": "markers+text", "name": name, "x": [maps[r][0] for r in raters],
        "y": [maps[r][1] for r in raters], "ids": raters, "text": [tick_label(r, models) for r in raters],
        "textposition": "top center" if not open_ else "bottom center",
        "marker": {"size": 13, "color": colour, "symbol": [symbol(r, open_) for r in raters],
                   "line": {"width": 2, "color": colour}},
        "hovertemplate": "%{text} (" + name + ")<extra></extra>"}
    return [links, points(out.map_first, False, "this run"), points(out.map_second, True, "second run")]
