"""Variation types: what kind of disagreement there is, per IoU threshold and per rater, and
how well the agreed pairs' boundaries match (the IoU histogram of the agreed labels).

Reads a stored variation-type run (``config.method == "kalos_variations"``). Click a bar
segment → only the labels of that type (of that rater, in the rater chart) at the run's
threshold; click an IoU bin → only the agreed labels whose IoU lies in it. Labels carry their
type only at the run's threshold, so a segment at another threshold is a count only: its click
says so and leaves the view alone. Every click follows the panels' rule
(:func:`panels.views.finish`): the user's sort kept, only the run's fields, only matching samples.
"""

from __future__ import annotations


from kalos_core.variations import threshold_key

from ..fiftyone_layer import views
from .common import LEGEND, RunPanel, chart, clean, clicked, fmt, load_results, plot_layout

COLORS = {"agreed": "#2ca02c", "merged": "#17becf", "wrong_class": "#d62728", "merged_wrong_class": "#9467bd",
          "missed": "#ff7f0e", "additional": "#8c564b"}
TYPES = tuple(COLORS)
#: what a legend and a hover say for each type (the stored keys stay as they are)
TYPE_NAMES = {t: t.replace("merged_wrong_class", "merged, wrong class").replace("_", " ") for t in TYPES}


def stacked(categories: list, counts: dict, types=TYPES) -> list[dict]:
    """One bar trace per type (named by the type) over ``categories``; ``counts[category][type]``."""
    return [{"type": "bar", "name": TYPE_NAMES.get(t, t), "x": [str(c) for c in categories],
             "y": [(counts.get(c) or {}).get(t, 0) for c in categories], "marker": {"color": COLORS.get(t, "#777")},
             "hovertemplate": "%{x}: " + TYPE_NAMES.get(t, t) + " %{y}<extra></extra>"} for t in types]


def iou_histogram(res: dict, threshold: str) -> tuple[dict, list]:
    """The agreed labels' IoU histogram at ``threshold``: a bar per bin; returns (trace, bins)."""
    hist = res.get("boundary_iou") or {}
    edges = hist.get("bins") or []
    counts = (hist.get("counts") or {}).get(threshold) or []
    bins = [[edges[k], edges[k + 1]] for k in range(len(counts))]
    keep = [(b, c) for b, c in zip(bins, counts) if b[1] > float(threshold) + 1e-9]  # agreed: IoU ≥ t
    return {"type": "bar", "name": "agreed pairs", "x": [f"{b[0]:.2f}" for b, _ in keep],
            "y": [c for _, c in keep], "marker": {"color": COLORS["agreed"]},
            "customdata": [f"{b[0]:.2f} – {b[1]:.2f}" for b, _ in keep],
            "hovertemplate": "IoU %{customdata}: %{y} labels<extra></extra>"}, [b for b, _ in keep]


def summary_md(res: dict, threshold: str) -> str:
    cfg = res.get("variation_config") or {}
    counts = (res.get("counts") or {}).get(threshold) or {}
    total = sum(counts.values())
    parts = ", ".join(f"{t.replace('_', ' ')} {counts.get(t, 0)} ({fmt(100 * counts.get(t, 0) / total, 1)} %)"
                      for t in TYPES if total)
    missed = (res.get("missed_by") or {}).get(threshold) or {}
    return (f"**{total} labels at IoU {threshold}** (per label) on {res.get('n_images', '?')} samples: "
            f"{parts or 'none'}. Unmatched labels of the reference rater ({cfg.get('reference') or 'first in order'}, "
            "two raters) are *missed*, the other's *additional*; with three or more raters the unit majority "
            "decides." + (f"\n\n**Missed at IoU {threshold} (per pair)**, the other raters' labels each rater did "
                          "not draw: " + ", ".join(f"{r} {n}" for r, n in sorted(missed.items(), key=lambda kv: -kv[1]))
                          + "." if missed else ""))


def missed_table_md(res: dict, threshold: str, most: int = 8) -> str:
    """Who missed whose labels (per pair), for up to ``most`` raters: shown below the charts."""
    missed = (res.get("missed_by") or {}).get(threshold) or {}
    pairs, raters = (res.get("by_pair") or {}).get(threshold) or {}, sorted(missed)
    if not missed or len(raters) > most:
        return ""
    rows = [f"| {b} | " + " | ".join("–" if a == b else str(((pairs.get(a) or {}).get(b) or {}).get("missed", 0))
                                     for a in raters) + " |" for b in raters]
    return "\n".join([f"**Who missed whose labels at IoU {threshold}** (per pair)", "",
                      "| missed ↓ of → | " + " | ".join(raters) + " |", "|---" * (len(raters) + 1) + "|", *rows])


class VariationTypesPanel(RunPanel):
    HELP_URL = "docs/variations.md"
    INTRO = ("What kind of disagreement: agreed, merged pieces, wrong class, missed or additional labels, per "
             "IoU threshold and per rater. Click a segment for those labels, an IoU bin for those agreed pairs.")
    EMPTY = ("No KaLOS variation-type run on this dataset yet. Compute one: it types every label's "
             "disagreement per rater pair and IoU threshold.")
    ACTION_LABEL = "Compute variation types"

    NAME, LABEL, ICON = "kalos_variation_types", "KaLOS: Variation types", "category"
    HELP = "Variation types per IoU threshold and rater; boundary-quality IoU."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        cfg = res.get("variation_config") or {}
        t = threshold_key(cfg.get("threshold", 0.5))
        counts = res.get("counts") or {}
        ts = sorted(counts, key=float)
        ctx.panel.data.thresholds = clean(stacked(ts, counts))
        ctx.panel.state.threshold_layout = clean(plot_layout(
            "Labels per variation type and IoU threshold", "IoU threshold (click: labels of that type)", "labels",
            height=400, barmode="stack", showlegend=True, legend=LEGEND, xaxis={"type": "category"}))
        by_rater = (res.get("by_rater") or {}).get(t) or {}
        raters = sorted(by_rater)
        ctx.panel.data.raters = clean(stacked(raters, by_rater))
        ctx.panel.state.rater_layout = clean(plot_layout(
            f"Labels per variation type and rater (IoU {t})", "rater (click: that rater's labels of the type)",
            "labels", height=380, barmode="stack", showlegend=True, legend=LEGEND, xaxis={"type": "category"}))
        trace, bins = iou_histogram(res, t)
        ctx.panel.data.iou = clean([trace])
        ctx.panel.state.bins = bins
        ctx.panel.state.iou_layout = clean(plot_layout(
            f"Boundary quality: IoU of the agreed pairs (IoU {t})", "IoU (click: the agreed pairs in the bin)",
            "labels", height=320, xaxis={"type": "category"}))
        ctx.panel.state.threshold = t
        ctx.panel.state.summary = summary_md(res, t)
        ctx.panel.state.missed_table = missed_table_md(res, t)
        ctx.panel.state.selection = None

    def _type_of(self, ctx) -> str | None:
        vtype = ctx.params.get("trace")
        vtype = next((t for t, name in TYPE_NAMES.items() if name == vtype), vtype)   # a legend name: its type
        if vtype not in TYPES and isinstance(ctx.params.get("trace_idx"), int) and ctx.params["trace_idx"] < len(TYPES):
            vtype = TYPES[ctx.params["trace_idx"]]
        return vtype if vtype in TYPES else None

    def _show_labels(self, ctx, view, what: str) -> None:
        """Show ``view`` and say how many rater labels it keeps, on how many samples."""
        n = views.label_count(view, ctx.dataset, ctx.panel.state.run_key)
        self.show(ctx, view, f"Showing only the **{n} {what}**, on {len(view)} samples")

    def on_click_threshold(self, ctx):
        vtype = self._type_of(ctx)
        if vtype is None:
            return
        t, x = ctx.panel.state.threshold, str(clicked(ctx, "x"))
        name = vtype.replace("_", " ")
        if x != t:  # labels carry their type only at the run's threshold: say so, change nothing
            ctx.panel.state.selection = (
                f"Labels carry their type only at the run's IoU {t}: the bar at IoU {x} is a count only; "
                f"click the bar at IoU {t} for the *{name}* labels (the view is unchanged)")
            return
        view = views.type_view(ctx.dataset, ctx.panel.state.run_key, vtype, current=ctx.view)
        self._show_labels(ctx, view, f"{name} labels at IoU {t}")

    def on_click_rater(self, ctx):
        vtype, rater = self._type_of(ctx), clicked(ctx, "x")
        if vtype is None or rater is None:
            return
        view = views.type_view(ctx.dataset, ctx.panel.state.run_key, vtype, rater=str(rater), current=ctx.view)
        self._show_labels(ctx, view, f"{vtype.replace('_', ' ')} labels of {rater} at IoU {ctx.panel.state.threshold}")

    def on_click_iou(self, ctx):
        bins = ctx.panel.state.bins or []
        x = clicked(ctx, "x")
        match = [b for b in bins if f"{b[0]:.2f}" == str(x)]
        if not match:
            return
        low, high = match[0]
        view = views.iou_bin_view(ctx.dataset, ctx.panel.state.run_key, low, high, current=ctx.view)
        self._show_labels(ctx, view, f"agreed labels with IoU in [{low:.2f}, {high:.2f}{']' if high >= 1 else ')'}")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        chart(panel, "thresholds", ctx.panel.state.threshold_layout, on_click=self.on_click_threshold)
        chart(panel, "raters", ctx.panel.state.rater_layout, on_click=self.on_click_rater)
        chart(panel, "iou", ctx.panel.state.iou_layout, on_click=self.on_click_iou)
        if ctx.panel.state.missed_table:
            panel.md(ctx.panel.state.missed_table, name="missed_table")
