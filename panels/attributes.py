"""Attribute agreement: α per attribute, and per class of one attribute; a click on a bar shows the
samples holding the units where the raters disagree on that attribute (of that class).

Reads a stored attribute run (``config.method == "kalos_attributes"``, :mod:`kalos_core.attributes`);
the click's view is :func:`..fiftyone_layer.measures.attributes.disagreement_view`.
"""

from __future__ import annotations


from ..fiftyone_layer.measures.attributes import disagreement_view
from .common import RunPanel, band_color, chart, clean, clicked, dropdown, fmt, load_results, plot_layout


def alpha_bars(entries: dict, name: str) -> dict:
    """One bar per entry with an α (``{name: {"alpha", "n_units", ...}}``), coloured by its band."""
    keys = [k for k, e in entries.items() if e.get("alpha") is not None]
    alphas = [entries[k]["alpha"] for k in keys]
    return {"type": "bar", "name": name, "x": keys, "y": alphas, "ids": keys,
            "marker": {"color": [band_color(a) for a in alphas]},
            "customdata": [entries[k]["n_units"] for k in keys],
            "text": [f"{fmt(a)} · {entries[k]['n_disagreeing']} of {entries[k]['n_units']} units disagree"
                     for k, a in zip(keys, alphas)],
            "hovertemplate": "%{x}: α %{y:.3f}<br>%{text}<extra></extra>", "textposition": "none"}


def summary_md(res: dict) -> str:
    """The run in words: which units, and the attributes without an α (and why)."""
    cfg = res.get("attributes_config") or {}
    none = [f"{k} ({e.get('reason')})" for k, e in (res.get("per_attribute") or {}).items() if e.get("alpha") is None]
    metrics = ", ".join(f"{k}: {e.get('metric')}" for k, e in (res.get("per_attribute") or {}).items())
    lines = [f"**Attribute α** over the {res.get('n_units', 0)} units (two or more labels) of "
             f"{res.get('n_images', 0)} samples; metrics: {metrics or '—'}",
             "No α: " + "; ".join(none) if none else "",
             f"Attributes chosen: {', '.join(cfg.get('names') or []) or 'every one found'} · click a bar: the "
             "samples of the units where the raters disagree on it"]
    return "  \n".join(line for line in lines if line)


class AttributeAgreementPanel(RunPanel):
    HELP_URL = "docs/attributes.md"
    INTRO = ("Krippendorff's α of each attribute of the rater labels (occluded, pose, colour, text) over the matched "
             "units, per attribute and per class; click a bar for the units where the raters disagree.")
    EMPTY = ("No KaLOS attribute run on this dataset yet. Compute one: it compares the attributes of the labels an "
             "agreement run matched into one unit.")
    ACTION_LABEL = "Compute attribute agreement"

    NAME, LABEL, ICON = "kalos_attributes", "KaLOS: Attribute agreement", "label"
    HELP = "α of the rater labels' attributes over an agreement run's units."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        entries = res.get("per_attribute") or {}
        ctx.panel.state.attribute_names = [k for k, e in entries.items() if e.get("alpha") is not None]
        ctx.panel.data.attributes = clean([alpha_bars(entries, "attributes")])
        ctx.panel.state.attributes_layout = clean(plot_layout(
            f"α per attribute ({run_key})", "attribute", "α", height=300, xaxis={"type": "category"},
            yaxis={"title": {"text": "α"}, "range": [min([0.0] + [e["alpha"] for e in entries.values()
                                                                  if e.get("alpha") is not None]) - 0.05, 1.05]}))
        ctx.panel.state.summary = summary_md(res)
        ctx.panel.state.selection = None
        chosen = ctx.panel.state.attribute
        self.draw_classes(ctx, chosen if chosen in entries else next(iter(ctx.panel.state.attribute_names), None), res)

    def draw_classes(self, ctx, attribute: str | None, res: dict | None = None) -> None:
        """The per-class bars of ``attribute``."""
        ctx.panel.state.attribute = attribute
        res = res or load_results(ctx.dataset, ctx.panel.state.run_key)
        per_class = ((res.get("per_attribute") or {}).get(attribute) or {}).get("per_class") or {}
        ctx.panel.state.class_names = [k for k, e in per_class.items() if e.get("alpha") is not None]
        ctx.panel.data.classes = clean([alpha_bars(per_class, "classes")])
        ctx.panel.state.classes_layout = clean(plot_layout(
            f"α of {attribute} per class (a unit's class: its most frequent)", "class", "α", height=300,
            xaxis={"type": "category"}))

    def on_change_attribute(self, ctx):
        self.draw_classes(ctx, ctx.params.get("value"))
        self._count_traces(ctx)

    def on_click_attribute(self, ctx):
        name = clicked(ctx, "x", "id", items=ctx.panel.state.attribute_names or [])
        if name is None:
            return
        self.draw_classes(ctx, str(name))
        self.show(ctx, disagreement_view(ctx.dataset, ctx.panel.state.run_key, str(name), current=ctx.view),
                  f"Showing the units where the raters disagree on **{name}**")

    def on_click_class(self, ctx):
        label, name = clicked(ctx, "x", "id", items=ctx.panel.state.class_names or []), ctx.panel.state.attribute
        if label is None or name is None:
            return
        self.show(ctx, disagreement_view(ctx.dataset, ctx.panel.state.run_key, name, str(label), current=ctx.view),
                  f"Showing the **{label}** units where the raters disagree on **{name}**")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        chart(panel, "attributes", ctx.panel.state.attributes_layout, on_click=self.on_click_attribute)
        names = ctx.panel.state.attribute_names or []
        if names:
            panel.enum("attribute", names, default=ctx.panel.state.attribute, label="Per class of",
                       view=dropdown(names), on_change=self.on_change_attribute)
            chart(panel, "classes", ctx.panel.state.classes_layout, on_click=self.on_click_class)
