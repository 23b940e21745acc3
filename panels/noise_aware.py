"""Noise-aware AP: AP^l / AP / AP^u of a model per IoU threshold and object size, and the
ε̄(W, H) = 1 − E[IoU] heatmap of the fitted corner noise.

Reads a stored noise-aware run (``config.method == "kalos_noise_aware"``). Click a bar → the
predictions whose lower and upper bounds disagree at that threshold (and size).
"""

from __future__ import annotations

import fiftyone.operators.types as types

from .common import LEGEND, RunPanel, chart, clean, clicked, fmt, load_results, plot_layout
from ..fiftyone_layer.views import NOISE_THRESHOLDS, uncertain_view

SIZES = {"all": "all sizes", "small": "small (< 32²)", "medium": "medium", "large": "large (≥ 96²)"}
BOUNDS = (("lower", "lower bound (IoU − ε̄)", "#ff7f0e"), ("ap", "AP", "#1f77b4"),
          ("upper", "upper bound (IoU + ε̄)", "#2ca02c"))


def bounds_figure(block: dict) -> list[dict]:
    """Grouped bars AP^l / AP / AP^u per threshold key (``block``: {key: {lower, ap, upper}}),
    the summary ``50:95`` first."""
    keys = [k for k in ("50:95", "50", "75", "95") if k in block]
    return clean([{"type": "bar", "name": name, "x": keys, "y": [block[k].get(b) for k in keys],
                   "marker": {"color": color}, "hovertemplate": "IoU %{x}: " + name + " %{y:.2f}<extra></extra>"}
                  for b, name, color in BOUNDS])


def eps_figure(grid: dict) -> list[dict]:
    """ε̄(W, H) heatmap: rows = widths, columns = heights (pixels)."""
    return clean([{"type": "heatmap", "x": [round(h, 1) for h in grid.get("heights") or []],
                   "y": [round(w, 1) for w in grid.get("widths") or []], "z": grid.get("eps") or [],
                   "colorscale": "Viridis", "colorbar": {"title": {"text": "ε̄"}},
                   "hovertemplate": "W %{y} px, H %{x} px: ε̄ %{z:.3f}<extra></extra>"}])


def summary_md(res: dict) -> str:
    noise, ap = res.get("noise") or {}, (res.get("ap") or {}).get("50:95") or {}
    sigma = noise.get("sigma") or {}
    return "\n\n".join([
        f"**AP@[.5:.95]: {fmt(ap.get('lower'), 2)} ≤ {fmt(ap.get('ap'), 2)} ≤ {fmt(ap.get('upper'), 2)}** "
        f"(lower bound ≤ AP ≤ upper bound) · {res.get('n_predictions', '?')} predictions against {res.get('n_reference', '?')} "
        f"labels of {res.get('reference', '?')} · {res.get('n_uncertain', '?')} predictions whose bounds disagree",
        f"Corner noise: {noise.get('n_pairs', '?')} pairs, {noise.get('n_inliers', '?')} inliers, share "
        f"{noise.get('share', '?')}; σ (px) " + ", ".join(f"{c} {fmt(v, 2)}" for c, v in sigma.items()),
    ])


class NoiseAwarePanel(RunPanel):
    HELP_URL = "docs/convergence.md#noise-aware-evaluation"
    INTRO = ("A model's AP with the raters' box noise taken into account: its lower and upper bounds "
             "recompute AP with IoU − ε̄ and IoU + ε̄. Click a bar for the predictions whose bounds disagree.")
    EMPTY = ("No KaLOS noise-aware evaluation on this dataset yet. Run one: it needs a predictions field "
             "with confidence and two rater fields.")
    ACTION_LABEL = "Noise-aware evaluation"

    NAME, LABEL, ICON = "kalos_noise_aware", "KaLOS: Noise-aware AP", "blur_on"
    HELP = "AP with its lower and upper bounds per size and threshold, and the ε̄(W, H) heatmap."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        size = ctx.panel.state.size if ctx.panel.state.size in SIZES else "all"
        ctx.panel.state.size = size
        block = res.get("ap") if size == "all" else (res.get("by_size") or {}).get(size)
        ctx.panel.data.bounds = bounds_figure(block or {})
        ctx.panel.state.bounds_layout = clean(plot_layout(
            f"AP with its lower and upper bounds ({SIZES[size]})", "IoU threshold (click: uncertain predictions)", "AP (%)",
            height=360, barmode="group", showlegend=True, legend=LEGEND,
            xaxis={"type": "category", "title": {"text": "IoU threshold (click: uncertain predictions)"}}))
        ctx.panel.data.eps = eps_figure(res.get("eps_grid") or {})
        ctx.panel.state.eps_layout = clean(plot_layout(
            "ε̄(W, H) = 1 − E[IoU] of a W × H box under the fitted noise", "height H (px)", "width W (px)",
            height=380, xaxis={"type": "log", "title": {"text": "height H (px)"}},
            yaxis={"type": "log", "title": {"text": "width W (px)"}}))
        ctx.panel.state.summary = summary_md(res)
        ctx.panel.state.selection = None

    def on_change_size(self, ctx):
        ctx.panel.state.size = ctx.params.get("value") or "all"
        self.load_run(ctx, ctx.panel.state.run_key)

    def on_click_bar(self, ctx):
        x = clicked(ctx, "x")
        if x is None or str(x) not in NOISE_THRESHOLDS:
            return
        size = ctx.panel.state.size or "all"
        where = "" if size == "all" else f", {size} boxes"
        key = ctx.panel.state.run_key
        view = uncertain_view(ctx.dataset, key, str(x), None if size == "all" else size, current=ctx.view)
        field = ctx.dataset.get_run_info(key).config.predictions_field
        self.show(ctx, view, f"Showing **{view.count(f'{field}.detections')} predictions whose bounds disagree at "
                             f"IoU {x}**{where}, on {len(view)} samples")

    def render_run(self, panel, ctx):
        panel.enum("size", list(SIZES), default=ctx.panel.state.size or "all", label="Object size",
                   view=types.RadioGroup(orientation="horizontal",
                                         choices=[types.Choice(k, label=v) for k, v in SIZES.items()]),
                   on_change=self.on_change_size)
        chart(panel, "bounds", ctx.panel.state.bounds_layout, on_click=self.on_click_bar)
        self.render_summary(panel, ctx)
        chart(panel, "eps", ctx.panel.state.eps_layout)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
