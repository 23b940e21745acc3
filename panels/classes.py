"""Class difficulty: α per class, hardest first; clicking a class filters the labels to it.

The per-class α of a sample uses the units in which any rater used the class; the panel shows
its mean over the samples where the class occurs (or, for "whole dataset", the class α of
all units at once).
"""

from __future__ import annotations

import fiftyone.operators as foo

from .common import ScopedRunPanel, band_color, chart, clean, clicked, fmt, load_results, plot_layout
from .views import class_view

SCOPES = {"per_image": "mean over samples", "global": "whole dataset at once"}


def class_bars(alphas: dict) -> dict:
    """Horizontal bars, hardest class (lowest α) at the top, coloured by interpretation band."""
    items = sorted(((c, v) for c, v in alphas.items() if v is not None), key=lambda t: (t[1], t[0]))
    return {"type": "bar", "orientation": "h", "name": "class α", "y": [c for c, _ in items],
            "x": [v for _, v in items], "ids": [c for c, _ in items],
            "marker": {"color": [band_color(v) for _, v in items]},
            "hovertemplate": "%{y}: α = %{x:.4f}<extra></extra>"}


class ClassDifficultyPanel(ScopedRunPanel):
    TITLE = "KaLOS: Class difficulty"
    INTRO = "α per class, hardest first. Click a class to show only its labels, on the samples where it occurs."
    SCOPES = SCOPES
    SCOPE_LABEL = "Class α"
    RERUN_ADDS = {"diagnostic": "class_difficulty"}

    @property
    def config(self):
        return foo.PanelConfig(name="kalos_class_difficulty", label="KaLOS: Class difficulty",
                               icon="category", category=foo.Categories.ANALYZE,
                               help_markdown="Per-class α of a KaLOS agreement run.")

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, alphas = self.scoped(ctx, res, "class_difficulty")
        alphas = {c: v for c, v in alphas.items() if v is not None}
        ctx.panel.state.has_classes = bool(alphas)
        ctx.panel.state.selection = None
        if not alphas:
            return
        bars = class_bars(alphas)
        ctx.panel.data.classes = clean([bars])
        ctx.panel.state.classes = bars["y"]
        ctx.panel.state.plot_layout = clean(plot_layout(
            f"Class difficulty ({run_key}, {SCOPES[scope]})", "α", "class", height=max(300, 28 * len(alphas) + 100),
            yaxis={"type": "category", "title": {"text": "class"}, "autorange": "reversed"},
            margin={"t": 40, "b": 50, "l": 120, "r": 20}))
        worst = bars["y"][0]
        ctx.panel.state.summary = (f"{len(alphas)} classes · hardest: **{worst}** (α {fmt(alphas[worst])}) · "
                                   f"easiest: **{bars['y'][-1]}** (α {fmt(alphas[bars['y'][-1]])})")

    def on_click_class(self, ctx):
        label = clicked(ctx, "y", "id", items=ctx.panel.state.classes or [])
        if label is None:
            return
        label = str(label)
        self.show(ctx, class_view(ctx.dataset, self.layout(ctx), label),
                  f"Showing only **{label}** labels, on the samples where some rater used it")

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_classes:
            self.render_missing(panel, "This run has no class difficulty (the *class_difficulty* diagnostic was off). "
                                "Recompute with it:", "no_classes")
            return
        self.render_scope(panel, ctx)
        chart(panel, "classes", ctx.panel.state.plot_layout, on_click=self.on_click_class)
