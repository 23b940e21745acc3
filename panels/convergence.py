"""Label convergence: the modified mAP between raters — the bootstrap distribution per IoU threshold
with both intervals and the full-set value, a model's mAP as a line, AP per class.

Reads a stored label-convergence run (``config.method == "kalos_convergence"``). Click a
threshold → the samples with rater labels unmatched at it (only those labels); click a class
→ its labels.
"""

from __future__ import annotations


from .common import LEGEND, NAMES_MARGIN, NEUTRAL, RunPanel, chart, clean, clicked, fmt, load_results, plot_layout
from ..fiftyone_layer.views import CONVERGENCE_THRESHOLDS, convergence_class_view, convergence_unmatched_view

MAP = "mAP"
MODEL_COLOR, FULL_COLOR, NORMAL_COLOR, PCT_COLOR = "#d62728", "#111111", "#ff7f0e", "#2ca02c"


def _interval_trace(xs, cis, name, color, offset):
    """Interval bars as error bars around their midpoints (``cis``: [lo, hi] or None per x)."""
    keep = [(x, c) for x, c in zip(xs, cis) if c and None not in c]
    return {"type": "scatter", "mode": "markers", "name": name, "x": [x for x, _ in keep],
            "y": [(c[0] + c[1]) / 2 for _, c in keep], "xaxis": "x", "offsetgroup": offset,
            "marker": {"color": color, "size": 1},
            "error_y": {"type": "data", "symmetric": True, "array": [(c[1] - c[0]) / 2 for _, c in keep],
                        "color": color, "thickness": 3, "width": 8},
            "hovertemplate": "%{x}: " + name + " %{customdata}<extra></extra>",
            "customdata": [f"{c[0]:.2f} – {c[1]:.2f}" for _, c in keep]}


def distribution_figure(res: dict) -> tuple[list[dict], dict]:
    """Box per threshold (and for mAP@[.5:.95]) of the subsets' AP, the normal and percentile
    intervals, the full-set value, and the model's mAP as a horizontal line."""
    boot = res.get("bootstrap") or {}
    per_t = boot.get("per_threshold") or {}
    full = res.get("full_set") or {}
    xs = [MAP, *CONVERGENCE_THRESHOLDS]
    stats = {MAP: boot, **{t: per_t.get(t) or {} for t in CONVERGENCE_THRESHOLDS}}
    fulls = {MAP: full.get("map"), **{t: (full.get("per_threshold") or {}).get(t) for t in CONVERGENCE_THRESHOLDS}}
    traces = []
    for x in xs:
        values = [v for v in stats[x].get("values") or [] if v is not None]
        if values:
            traces.append({"type": "box", "name": x, "x": [x] * len(values), "y": values, "boxpoints": False, "showlegend": False,
                           "marker": {"color": NEUTRAL}, "line": {"width": 1}, "fillcolor": "rgba(31,119,180,0.25)",
                           "hoverinfo": "y"})
    traces.append(_interval_trace(xs, [stats[x].get("ci_normal") for x in xs], "normal CI (± 1.96 SD)",
                                  NORMAL_COLOR, "n"))
    traces.append(_interval_trace(xs, [stats[x].get("ci_percentile") for x in xs], "percentile CI",
                                  PCT_COLOR, "p"))
    traces.append({"type": "scatter", "mode": "markers", "name": "full set", "x": xs, "y": [fulls[x] for x in xs],
                   "marker": {"color": FULL_COLOR, "symbol": "diamond", "size": 11},
                   "hovertemplate": "%{x}: full set %{y:.2f}<extra></extra>"})
    model = res.get("model")
    if model and model.get("map") is not None:
        per = (model.get("rater_averaged") or {}).get("per_threshold") or {}
        traces.append({"type": "scatter", "mode": "lines+markers", "name": "model, rater-averaged", "x": xs,
                       "y": [model["map"], *[per.get(t) for t in CONVERGENCE_THRESHOLDS]],
                       "line": {"color": MODEL_COLOR, "dash": "dot"}, "marker": {"color": MODEL_COLOR},
                       "hovertemplate": "%{x}: model %{y:.2f}<extra></extra>"})
        # the model's mAP as a level line named in the legend (a label on the plot covered the error bars)
        traces.append({"type": "scatter", "mode": "lines", "name": f"model mAP {fmt(model['map'], 1)}", "x": xs,
                       "y": [model["map"]] * len(xs), "line": {"color": MODEL_COLOR, "width": 2},
                       "hoverinfo": "skip"})
    layout = plot_layout("AP between raters on image subsets, per IoU threshold", "IoU threshold", "AP (%)",
                         height=420, showlegend=True, legend=LEGEND, legend_rows=2,
                         xaxis={"type": "category", "categoryorder": "array", "categoryarray": xs,
                                "title": {"text": "IoU threshold (click one: its unmatched labels; mAP pools them)"}})
    return clean(traces), clean(layout)


#: classes drawn in the per-class chart (the lowest AP first); the rest are counted in the title
CLASS_BARS = 25


def class_figure(per_class: dict, limit: int = CLASS_BARS) -> tuple[dict, list[str]]:
    """Horizontal AP bars of the ``limit`` classes with the lowest AP, lowest first (LVIS has
    hundreds of classes: one bar each would be a pixel high)."""
    items = sorted(((c, v) for c, v in per_class.items() if v is not None), key=lambda t: (t[1], t[0]))[:limit]
    return {"type": "bar", "orientation": "h", "name": "AP per class", "y": [c for c, _ in items],
            "x": [v for _, v in items], "marker": {"color": NEUTRAL},
            "hovertemplate": "%{y}: AP %{x:.2f}<extra></extra>"}, [c for c, _ in items]


def summary_md(res: dict) -> str:
    full, boot, model = res.get("full_set") or {}, res.get("bootstrap") or {}, res.get("model")
    cfg = res.get("convergence_config") or {}
    lines = [f"**mAP@[.5:.95] between raters {fmt(full.get('map'), 2)}** (AP50 {fmt(full.get('ap50'), 2)}, "
             f"AP75 {fmt(full.get('ap75'), 2)}) on {res.get('n_images', '?')} samples, raters "
             f"{', '.join(map(str, res.get('raters') or []))}, task {cfg.get('task', '?')}"]
    if boot:
        n, pc = boot.get("ci_normal") or [None, None], boot.get("ci_percentile") or [None, None]
        lines.append(f"{boot.get('n_valid', '?')} subsets of {100 * (cfg.get('fraction') or 0):g} %: mean "
                     f"{fmt(boot.get('mean'), 2)} ± {fmt(boot.get('std'), 2)} SD · normal interval "
                     f"{fmt(n[0], 2)} – {fmt(n[1], 2)} · percentile {fmt(pc[0], 2)} – {fmt(pc[1], 2)} "
                     "(small subsets bias the mean upward: compare with the full-set value)")
    pairs = res.get("pairs") or []
    if len(pairs) > 1:
        lines.append("Rater pairs (full-set mAP): " + " · ".join(
            f"{' × '.join(map(str, p.get('raters') or []))} {fmt((p.get('full_set') or {}).get('map'), 2)}"
            for p in pairs))
    alpha = res.get("alpha") or {}
    if alpha.get("eq1"):
        eq1, refit = alpha["eq1"], alpha.get("refit") or {}
        text = (f"From α (mean per-image α {fmt(alpha.get('full_set_alpha'), 3)}): Eq. 1 mAP "
                f"{fmt(eq1.get('mean'), 2)}, interval {' – '.join(fmt(v, 2) for v in eq1.get('ci_normal') or [])}")
        if refit.get("slope") is not None:
            text += (f"; refitted here (mAP = {fmt(refit.get('slope'), 3)} α + {fmt(refit.get('intercept'), 3)}) "
                     f"{fmt(refit.get('mean'), 2)}, interval {' – '.join(fmt(v, 2) for v in refit.get('ci_normal') or [])}")
        lines.append(text + " (Eq. 1 was fitted with another α variant: prefer the refit)")
    if model:
        place = (model.get("placement") or {}).get("ci_normal", "?")
        beyond = " — beyond label convergence: gains are noise" if place == "above" else ""
        lines.append(f"**Model mAP {fmt(model.get('map'), 2)}** (rater-averaged): {place} the interval{beyond}")
        per = model.get("per_rater") or {}
        where = model.get("per_rater_placement") or {}
        if per:
            lines.append("Against each rater: " + " · ".join(
                f"{r} {fmt((per[r] or {}).get('map'), 2)} ({(where.get(r) or {}).get('ci_normal', '?')})"
                for r in per) + " — a model that copies one rater scores 100 against that rater, which lifts the "
                "average: read the other raters' columns")
    return "\n\n".join(lines)


def shown_counts(dataset, run_key: str, view) -> tuple[int, int]:
    """(rater labels, samples) that a click's ``view`` shows: the run's rater fields' labels."""
    cfg = dataset.get_run_info(run_key).config
    fields = [cfg.label_field] if getattr(cfg, "rater_attribute", None) else list(cfg.rater_fields or [])
    return sum(view.count(f"{f}.{cfg.list_name}") for f in fields), len(view)


class LabelConvergencePanel(RunPanel):
    HELP_URL = "docs/convergence.md"
    INTRO = ("The modified mAP between raters bounds what a model trained and tested on these labels can reach. "
             "Click a threshold for the labels unmatched at it; click a class for its labels.")
    EMPTY = ("No KaLOS label convergence run on this dataset yet. Compute one: it measures mAP between the "
             "raters on bootstrap subsets and places a model against it.")
    ACTION_LABEL = "Compute label convergence"

    NAME, LABEL, ICON = "kalos_label_convergence", "KaLOS: Label convergence", "insights"
    HELP = "Bootstrap mAP between raters, its intervals, a model's mAP, AP per class."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        traces, layout = distribution_figure(res)
        ctx.panel.data.distribution = traces
        ctx.panel.state.dist_layout = layout
        bars, classes = class_figure((res.get("full_set") or {}).get("per_class") or {})
        ctx.panel.data.classes = clean([bars])
        ctx.panel.state.class_names = classes
        n_classes = sum(v is not None for v in ((res.get("full_set") or {}).get("per_class") or {}).values())
        title = "AP per class (full set, %)" + (f": the {len(classes)} lowest of {n_classes}"
                                                 if n_classes > len(classes) else "")
        ctx.panel.state.class_layout = clean(plot_layout(
            title, "AP (%)", "", height=max(260, 26 * len(classes) + 100),
            yaxis={"type": "category", "title": {"text": ""}, "automargin": True}, margin=NAMES_MARGIN))
        ctx.panel.state.summary = summary_md(res)
        ctx.panel.state.selection = None

    def on_click_threshold(self, ctx):
        x = clicked(ctx, "x")
        if x is None:
            return
        x = str(x)
        if x == MAP:  # mAP pools every threshold: no single set of unmatched labels to show
            ctx.panel.state.selection = ("The mAP column is not clickable: it pools IoU .50–.95, and the labels "
                                         "unmatched at any of them are (nearly) those unmatched at .95. Click a "
                                         "threshold's column to see its unmatched labels.")
            return
        threshold = x
        if threshold not in CONVERGENCE_THRESHOLDS:
            return
        view = convergence_unmatched_view(ctx.dataset, ctx.panel.state.run_key, threshold, current=ctx.view)
        n_labels, n_samples = shown_counts(ctx.dataset, ctx.panel.state.run_key, view)
        self.show(ctx, view, f"Showing **{n_labels} rater labels unmatched at IoU {threshold}** on {n_samples} "
                             "samples (only those labels)")

    def on_click_class(self, ctx):
        label = clicked(ctx, "y", items=ctx.panel.state.class_names or [])
        if label is None:
            return
        view = convergence_class_view(ctx.dataset, ctx.panel.state.run_key, str(label), current=ctx.view)
        n_labels, n_samples = shown_counts(ctx.dataset, ctx.panel.state.run_key, view)
        self.show(ctx, view, f"Showing only the **{n_labels} {label} labels**, on the {n_samples} samples where "
                             "a rater used it")

    def render_run(self, panel, ctx):
        chart(panel, "distribution", ctx.panel.state.dist_layout, on_click=self.on_click_threshold)
        self.render_summary(panel, ctx)
        if ctx.panel.state.class_names:
            chart(panel, "classes", ctx.panel.state.class_layout, on_click=self.on_click_class)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
