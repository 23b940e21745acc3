"""Behaviour alignment (BAE): a model's per-rater representations against the raters' pairwise α.

Reads a stored BAE run (``config.method == "kalos_bae"``, :mod:`kalos_core.bae`): the value,
``S_true`` (pairwise α), ``S_model`` (cosine of the raters' mean vectors) and ``|S_model − S_true|``
as heatmaps in one rater order, and the two MDS maps of the raters (the model's aligned to the
labels' by Procrustes, each rater linked to itself), as the paper's Fig. 4 draws them.
"""

from __future__ import annotations

from kalos_core.thresholds import threshold_text


from .collaboration import ALPHA_SCALE, matrix_trace
from .common import LEGEND, RunPanel, chart, clean, fmt, load_results, plot_layout

TRUE_COLOUR, MODEL_COLOUR = "#2ca02c", "#1f77b4"


def map_traces(raters: list[str], map_true: dict, map_model: dict) -> list[dict]:
    """Both rater maps and a dotted line from each rater on one to itself on the other."""
    links = {"type": "scatter", "mode": "lines", "name": "same rater", "hoverinfo": "skip",
             "line": {"color": "#999", "width": 1, "dash": "dot"}, "x": [], "y": []}
    for r in raters:
        (x1, y1), (x2, y2) = map_true[r], map_model[r]
        links["x"] += [x1, x2, None]
        links["y"] += [y1, y2, None]
    points = lambda maps, colour, symbol, name, where: {
        "type": "scatter", "mode": "markers+text", "name": name, "x": [maps[r][0] for r in raters],
        "y": [maps[r][1] for r in raters], "ids": raters, "text": raters, "textposition": where,
        "marker": {"size": 13, "color": colour, "symbol": symbol, "line": {"width": 2, "color": colour}},
        "hovertemplate": "%{text} (" + name + ")<extra></extra>"}
    return [links, points(map_true, TRUE_COLOUR, "circle", "labels: pairwise α", "top center"),
            points(map_model, MODEL_COLOUR, "circle-open", "model: cosine", "bottom center")]


def summary_md(res: dict) -> str:
    """The run in words: BAE, what S_true is, who was left out, masked pairs, the maps' fit."""
    cfg = res.get("bae_config") or {}
    scope = "over each pair's shared samples at once" if cfg.get("scope") == "global" else "mean over samples"
    left = res.get("only_labels", []) + res.get("only_embeddings", [])
    lines = [f"**BAE = 1 − ‖S_model − S_true‖ / ‖S_true‖ = {fmt(res.get('bae'), 4)}** over "
             f"{len(res.get('raters') or [])} raters (1 = the model's rater similarities reproduce their agreement; "
             "higher is better)",
             f"S_true: pairwise α ({scope}, matching threshold {threshold_text(cfg.get('threshold', 0.5))}); S_model: cosine "
             "of each rater's mean vector",
             f"Left out (labels or vectors only): {', '.join(left) or 'none'} · pairs without a shared sample: "
             f"{', '.join(' × '.join(p) for p in res.get('masked_pairs') or []) or 'none'} · Procrustes disparity "
             f"of the maps: {fmt(res.get('procrustes_disparity'), 3)}"]
    return "  \n".join(lines)


class BAEPanel(RunPanel):
    HELP_URL = "docs/bae.md"
    INTRO = ("How well a model's per-rater representations reproduce the raters' pairwise α (BAE; 1 = exactly). "
             "Heatmaps of both similarity structures and their difference; the two rater maps aligned.")
    EMPTY = ("No KaLOS BAE run on this dataset yet. Compute one: it compares a model's vectors on the rater "
             "labels with the raters' pairwise α.")
    ACTION_LABEL = "Compute BAE"

    NAME, LABEL, ICON = "kalos_bae", "KaLOS: Behaviour alignment (BAE)", "compare_arrows"
    HELP = "BAE: a model's per-rater similarities against the pairwise α."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        raters = list(res.get("raters") or [])
        cells = [v for m in (res.get("true"), res.get("model")) for row in m or [] for v in row if v is not None]
        low = -1 if cells and min(cells) < 0 else 0
        diff_max = max([v for row in res.get("difference") or [] for v in row if v is not None] or [1.0])
        ctx.panel.data.true = clean([matrix_trace("S_true", raters, res.get("true"), low, 1, ALPHA_SCALE, "α")])
        ctx.panel.data.model = clean([matrix_trace("S_model", raters, res.get("model"), low, 1, ALPHA_SCALE,
                                                   "cosine")])
        ctx.panel.data.difference = clean([matrix_trace("|S_model − S_true|", raters, res.get("difference"), 0,
                                                        max(diff_max, 1e-9), "Reds", "|Δ|")])
        ctx.panel.data.maps = clean(map_traces(raters, res.get("map_true") or {}, res.get("map_model") or {}))
        size = max(300, 36 * len(raters) + 120)
        square = lambda title: plot_layout(title, "rater", "rater", height=size, xaxis={"type": "category"},
                                           yaxis={"type": "category", "autorange": "reversed"})
        ctx.panel.state.layouts = clean({
            "true": square("S_true: pairwise α of the raters' labels"),
            "model": square("S_model: cosine of the model's rater vectors"),
            "difference": square("|S_model − S_true|"),
            "maps": plot_layout("MDS maps aligned by Procrustes: ● labels, ○ model", "MDS 1", "MDS 2", height=380,
                                showlegend=True, legend=LEGEND,
                                yaxis={"title": {"text": "MDS 2"}, "scaleanchor": "x", "scaleratio": 1})})
        ctx.panel.state.summary = summary_md(res)
        ctx.panel.state.selection = None

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        layouts = ctx.panel.state.layouts or {}
        for name in ("true", "model", "difference", "maps"):
            chart(panel, name, layouts.get(name))
