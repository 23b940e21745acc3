"""Semantic masks: α per class over all pixels, each rater's STAPLE sensitivity and specificity for a
chosen class; a click on a class shows the samples where that class is disputed, lowest α first.

Reads a stored masks run (``config.method == "kalos_masks"``, :mod:`kalos_core.masks`); the click's
view is :func:`..fiftyone_layer.measures.masks.disputed_view`.
"""

from __future__ import annotations

from ..fiftyone_layer.measures.masks import disputed_view
from .common import RunPanel, band_color, chart, clean, clicked, dropdown, fmt, load_results, plot_layout


def class_bars(res: dict) -> tuple[list, dict]:
    """One bar per class with an α (its name on the axis, its index as the id)."""
    names = res.get("classes") or {}
    keys = [k for k, a in (res.get("alpha_per_class") or {}).items() if a is not None]
    alphas = [res["alpha_per_class"][k] for k in keys]
    return keys, {"type": "bar", "name": "classes", "x": [names.get(k, k) for k in keys], "y": alphas, "ids": keys,
                  "marker": {"color": [band_color(a) for a in alphas]},
                  "hovertemplate": "%{x}: α %{y:.3f}<extra></extra>", "textposition": "none"}


def rater_bars(res: dict, cls: str | None) -> list:
    """Two bar traces (sensitivity, specificity) over the raters for class ``cls``."""
    per_rater = res.get("per_rater") or {}
    raters = [r for r in per_rater if (per_rater[r].get(cls) or {}).get("sensitivity") is not None]
    return [{"type": "bar", "name": what, "x": raters, "y": [per_rater[r][cls][what] for r in raters],
             "hovertemplate": f"%{{x}}: {what} %{{y:.3f}}<extra></extra>"}
            for what in ("sensitivity", "specificity")]


class MaskAgreementPanel(RunPanel):
    HELP_URL = "docs/masks.md"
    INTRO = ("Krippendorff's α over the pixels of the raters' masks, per class; each rater's sensitivity and "
             "specificity as STAPLE estimates them. Click a class for the samples where it is disputed.")
    EMPTY = "No KaLOS semantic-mask run on this dataset yet. Compute one from one Segmentation field per rater."
    ACTION_LABEL = "Compute mask agreement"

    NAME, LABEL, ICON = "kalos_masks", "KaLOS: Semantic masks", "texture"
    HELP = "α over pixels per class, and the raters' STAPLE sensitivity / specificity."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        keys, bars = class_bars(res)
        ctx.panel.state.class_keys = keys
        ctx.panel.state.class_names = res.get("classes") or {}
        ctx.panel.data.classes = clean([bars])
        ctx.panel.state.classes_layout = clean(plot_layout(
            f"α per class over all pixels ({run_key})", "class", "α", height=300, xaxis={"type": "category"}))
        method = (res.get("consensus") or {}).get("method")
        ctx.panel.state.summary = (f"**α over all pixels** {fmt(res.get('alpha'))} · {res.get('n_images', 0)} samples, "
                                   f"{len(res.get('raters') or [])} raters · consensus: {method}  \n"
                                   "Click a class: its samples, lowest α first")
        ctx.panel.state.selection = None
        self.draw_raters(ctx, ctx.panel.state.rater_class if ctx.panel.state.rater_class in keys
                         else next(iter(keys), None), res)

    def draw_raters(self, ctx, cls: str | None, res: dict | None = None) -> None:
        ctx.panel.state.rater_class = cls
        res = res or load_results(ctx.dataset, ctx.panel.state.run_key)
        traces = rater_bars(res, cls)
        ctx.panel.data.raters = clean(traces)
        ctx.panel.state.has_raters = bool(traces[0]["x"])
        name = (ctx.panel.state.class_names or {}).get(cls, cls)
        ctx.panel.state.raters_layout = clean(plot_layout(
            f"STAPLE sensitivity and specificity per rater: {name}", "rater", "", height=300,
            xaxis={"type": "category"}, showlegend=True, barmode="group", yaxis={"range": [0, 1.05]}))

    def on_change_class(self, ctx):
        self.draw_raters(ctx, ctx.params.get("value"))
        self._count_traces(ctx)

    def on_click_class(self, ctx):
        key = clicked(ctx, "id", items=ctx.panel.state.class_keys or [])
        if key is None:
            return
        name = (ctx.panel.state.class_names or {}).get(str(key), key)
        self.draw_raters(ctx, str(key))
        self.show(ctx, disputed_view(ctx.dataset, ctx.panel.state.run_key, str(key), current=ctx.view),
                  f"Showing the samples where **{name}** is disputed (α < 1), lowest α first")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        chart(panel, "classes", ctx.panel.state.classes_layout, on_click=self.on_click_class)
        keys = ctx.panel.state.class_keys or []
        if keys and ctx.panel.state.has_raters:
            names = ctx.panel.state.class_names or {}
            panel.enum("rater_class", keys, default=ctx.panel.state.rater_class, label="Raters on class",
                       view=dropdown(keys, names), on_change=self.on_change_class)
            chart(panel, "raters", ctx.panel.state.raters_layout)
