"""Annotator vitality: ``V_r = α_R - α_(R without r)`` per rater, one bar each.

Positive: the rater builds consensus; negative: the rater adds noise. Clicking a bar shows
the samples where that rater has labels that are unmatched or of a disagreeing class.
Models (``compute_agreement``'s model fields) have hatched, outlined bars, a "(model)" tick,
and the run's verdict: does the model disagree with the humans more than they do among
themselves (``model_comparison``, stored by the run)?

"Split by" (:mod:`.splits`) splits each rater's vitality by a subset of samples (a sample field's
values, ``tags``, the saved views): the mean of its per-sample V (``vitality_images``, samples with
3 or more raters) over the subset; a click shows those samples.
"""

from __future__ import annotations


from dataclasses import replace

from ..fiftyone_layer.views import RunLayout
from .common import NEGATIVE, POSITIVE, RunPanel, ScopedRunPanel, chart, clean, fmt, load_results, plot_layout
from .splits import SampleSplit

SCOPES = {"per_image": "mean over samples (≥ 3 raters)", "global": "whole dataset at once"}


#: how a model is told from the human raters in every chart: hatched bars, outlined, a tick suffix
MODEL_PATTERN, MODEL_LINE, MODEL_SUFFIX = "/", "#222", " (model)"


def tick_label(rater: str, models) -> str:
    """A rater's axis label: ``name (model)`` for a model."""
    return f"{rater}{MODEL_SUFFIX}" if rater in (models or ()) else str(rater)


def model_verdicts(res: dict, scope: str) -> list[str]:
    """The run's sentence per model (``model_comparison`` of the scope), for the panel text."""
    return [v.get("verdict", "") for v in ((res.get("model_comparison") or {}).get(scope) or {}).values()]


def layout_with_models(ctx):
    """The run's layout with its model fields as raters (a model's labels live in its own field)."""
    layout = RunPanel.layout(ctx)
    cfg = ctx.dataset.get_run_info(ctx.panel.state.run_key).config
    fields = [f for f in getattr(cfg, "model_fields", None) or [] if f not in layout.fields]
    if not fields or layout.rater_attribute:
        return layout
    return replace(layout, fields=(*layout.fields, *fields), raters={**layout.raters, **{f: f for f in fields}})


def vitality_bars(vitality: dict, summary: dict | None = None, models=()) -> dict:
    """One bar per rater, highest vitality first; green for ≥ 0, red below; models hatched."""
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
            "marker": {"color": [POSITIVE if v >= 0 else NEGATIVE for _, v in items],
                       "pattern": {"shape": [MODEL_PATTERN if r in models else "" for r, _ in items]},
                       "line": {"color": [MODEL_LINE if r in models else "rgba(0,0,0,0)" for r, _ in items],
                                "width": [2 if r in models else 0 for r, _ in items]}},
            "customdata": ["model" if r in models else "human" for r, _ in items],
            "hovertemplate": "%{x} (%{customdata}): V = %{y:.4f}<br>%{text}<extra></extra>", "textposition": "none"}


class AnnotatorVitalityPanel(SampleSplit, ScopedRunPanel):
    INTRO = ("V = α with all raters − α without the rater. Positive: consensus builder; negative: "
             "source of noise. Click a bar to show the samples where that rater's labels do not agree.")
    SCOPES = SCOPES
    SCOPE_LABEL = "Vitality"
    RERUN_ADDS = {"diagnostics": "vitality"}

    NAME, LABEL, ICON = "kalos_annotator_vitality", "KaLOS: Annotator vitality", "groups"
    HELP = "Per-rater vitality of a KaLOS agreement run."
    SPLIT_KEY, SPLIT_VALUE = "rater", "vitality V"

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        scope, vit = self.scoped(ctx, res, "vitality")
        ctx.panel.state.has_vitality = bool(vit)
        ctx.panel.state.selection = None
        if not vit:
            return
        models = list(res.get("models") or [])
        bars = vitality_bars(vit, res.get("rater_summary"), models)
        ctx.panel.data.vitality = clean([bars])
        worst = min(vit, key=lambda r: (vit[r] if vit[r] is not None else 0))
        ctx.panel.state.summary = "  \n".join([
            f"{len(vit)} raters · lowest vitality: **{tick_label(worst, models)}** ({fmt(vit[worst], 4)}) · "
            f"scope: {SCOPES[scope]}" + (f" · models (hatched): {', '.join(models)}" if models else ""),
            *model_verdicts(res, scope)])
        ctx.panel.state.plot_layout = clean(plot_layout(
            f"Annotator vitality ({run_key})", "rater", "vitality V", height=380,
            xaxis={"title": {"text": "rater"}, "type": "category", "tickmode": "array", "tickvals": bars["x"],
                   "ticktext": [tick_label(r, models) for r in bars["x"]]},
            shapes=[{"type": "line", "x0": 0, "x1": 1, "xref": "paper", "y0": 0, "y1": 0, "yref": "y",
                     "line": {"color": "#888", "width": 1}}]))
        ctx.panel.state.rater_order = bars["x"]
        self.init_split(ctx, skip=set(RunLayout.from_run(ctx.dataset, run_key).fields))

    def split_scores(self, ctx) -> dict | None:
        """Each rater's per-sample vitality (the run's ``vitality_images``), in the bars' order."""
        images = load_results(ctx.dataset, ctx.panel.state.run_key).get("vitality_images")
        return None if not images else {r: images.get(r) or {} for r in ctx.panel.state.rater_order or []}

    def on_click_rater(self, ctx):
        rater = ctx.params.get("x") or ctx.params.get("id")
        if rater is None:
            return
        self.show_rater(ctx, str(rater))

    layout = staticmethod(layout_with_models)

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_vitality:
            self.render_missing(panel, "This run has no vitality: it needs the *vitality* diagnostic and at least "
                                "three raters on some sample. Recompute with it:", "no_vitality")
            return
        self.render_scope(panel, ctx)
        chart(panel, "vitality", ctx.panel.state.plot_layout, on_click=self.on_click_rater)
        self.render_split(panel, ctx)
