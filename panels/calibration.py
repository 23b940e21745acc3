"""Calibration: observed (Do) and expected (De) distance distributions, τ* (a distance), KS and σ.

Reads a stored calibration run (``config.method == "kalos_calibration"``). The button opens
``compute_agreement`` prefilled with the selected distance and its similarity threshold
t = 1 − τ* (τ* is always the calibrated *distance* threshold; runs name their similarity
threshold t, see panels/sensitivity.py). *Recompute* re-opens the calibrate form with every
parameter the run stored (``MEASURE``). A click on a Do / De bar selects the label pairs the run stored for its bin
(a De pair's two samples; :mod:`kalos_core.calibration.drill`).
"""

from __future__ import annotations

import fiftyone.operators.types as types

from kalos_core.data import TASK_KINDS
from kalos_core.thresholds import proposed, threshold_text

from ..fiftyone_layer import registry
from ..fiftyone_layer.measure_runs import label_source_values
from .common import LEGEND, RunPanel, chart, clean, dropdown, fmt, load_results, plot_layout, vline

#: calibration task name -> kind of kalos_core.geometry's distance registry
DO_COLOR, DE_COLOR = "#1f77b4", "#ff7f0e"


def _ci(ci) -> str:
    return f" (CI {fmt(ci[0])} – {fmt(ci[1])})" if ci and len(ci) == 2 else ""


def calibration_figure(entry: dict) -> tuple[list[dict], dict]:
    """Overlaid Do / De histograms (fraction of pairs per bin), τ* line and its CI band."""
    hist = entry.get("histogram") or {}
    edges = [float(e) for e in hist.get("edges") or []]
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    widths = [b - a for a, b in zip(edges[:-1], edges[1:])]
    traces = []
    for key, name, color in (("do", "Do (observed, same object)", DO_COLOR),
                             ("de", "De (expected, by chance)", DE_COLOR)):
        counts = [float(c) for c in hist.get(key) or []]
        total = sum(counts) or 1.0
        traces.append({"type": "bar", "name": name, "x": centers, "y": [c / total for c in counts],
                       "width": widths, "opacity": 0.55, "marker": {"color": color},
                       "hovertemplate": "distance %{x:.3f}: %{y:.3f}<extra>" + key.upper() + "</extra>"})
    shapes, notes = [], []
    lo_hi = entry.get("tau_ci")
    if lo_hi and len(lo_hi) == 2 and None not in lo_hi:
        shapes.append({"type": "rect", "x0": lo_hi[0], "x1": lo_hi[1], "xref": "x", "y0": 0, "y1": 1,
                       "yref": "paper", "fillcolor": "rgba(100,100,100,0.15)", "line": {"width": 0},
                       "layer": "below"})
    tau = entry.get("tau_star")
    if tau is not None:
        s, a = vline(tau, f"τ* = {fmt(tau)} (distance)", "#d62728", dash="solid")
        shapes.append(s)
        notes.append(a)
    layout = plot_layout("Distance distributions of matched pairs", "distance", "fraction of pairs", height=380,
                         barmode="overlay", shapes=shapes, annotations=notes, showlegend=True,
                         legend=LEGEND, xaxis={"title": {"text": "distance"}, "range": mass_range(hist, entry)})
    return clean(traces), clean(layout)


#: the x axis shows where this share of each sample's pairs lies (a far tail of a few pairs does not
#: squeeze the mass into a corner, e.g. the image-diagonal centroid's 0 – 0.3 on an axis to 1)
MASS_SHARE = 0.995


def mass_range(hist: dict, entry: dict) -> list[float] | None:
    """The x range of the bins holding :data:`MASS_SHARE` of the Do and of the De pairs (from the
    first non-empty bin), widened to τ* and its interval, padded by 3 %."""
    edges = [float(e) for e in hist.get("edges") or []]
    if len(edges) < 2:
        return None
    first, last = len(edges) - 1, 0
    for key in ("do", "de"):
        counts = [float(c) for c in hist.get(key) or []]
        total = sum(counts)
        if not total:
            continue
        first = min(first, next(i for i, c in enumerate(counts) if c))
        seen = 0.0
        for i, c in enumerate(counts):
            seen += c
            if seen >= MASS_SHARE * total:
                last = max(last, i)
                break
    if first > last:
        return None
    marks = [v for v in [entry.get("tau_star"), *(entry.get("tau_ci") or [])] if v is not None]
    lo, hi = min([edges[first], *marks]), max([edges[last + 1], *marks])
    pad = 0.03 * (hi - lo)
    return [lo - pad, hi + pad]


def _target(r: dict) -> str:
    return f"**{r.get('distance')}** (t = {threshold_text(r.get('similarity_threshold'))})"


def recommendation_md(rec: dict) -> list[str]:
    """The recommendation in one line: the recommended distance and its t, the scale-invariant
    alternative (with the one caution why) where the winner is scale-dependent."""
    line = f"Recommended: {_target(rec)}, best KS separation (ties within noise go to a scale-invariant distance)"
    alt = rec.get("alternative")
    if rec.get("scale_dependent") and alt:
        line += (f" · scale-invariant alternative: {_target(alt)} — ⚠ {rec.get('distance')} is scale-dependent "
                 "(one threshold is lenient for small objects, strict for large ones)")
    elif rec.get("scale_dependent"):
        line += f" — ⚠ {rec.get('distance')} is scale-dependent (lenient for small objects, strict for large ones)"
    return [line]


def _why(rec: dict) -> str:
    """The recommendation's reason without its caution (the summary says it, once)."""
    return rec.get("reason", "").split(". Caution:")[0]


def alpha_md(rec: dict) -> list[str]:
    """The α each recommended distance gives (details)."""
    out = []
    for title, r in (("recommended", rec), ("alternative", rec.get("alternative") or {})):
        if r.get("mean_alpha") is not None:
            out.append(f"At the {title} {r.get('distance')}: mean α {fmt(r.get('mean_alpha'))}, global α "
                       f"{fmt(r.get('global_alpha'))} (standard threshold {threshold_text(r.get('standard_threshold'))})")
    return out


BRAYLAN_NAMES = {"iou": "IoU", "giou": "GIoU", "l2": "L2", "count": "Count diff"}


def braylan_markdown(res: dict) -> str | None:
    """The run's item-level agreement (Braylan) as a markdown table, a note why it is missing, or
    None for runs stored before it existed."""
    braylan = res.get("braylan")
    if not braylan:
        return None
    title = "**Item-level agreement (Braylan)**"
    if "distances" not in braylan:
        return f"{title}: not computed — {braylan.get('skipped', 'no result')}"
    from kalos_core.conventions import PHRASES

    convention = braylan.get("convention")
    note = PHRASES.get(convention or "midrank", PHRASES["midrank"]) + (
        "" if convention else " (a run stored before conventions were recorded)")
    rows = ["| distance | α | AUC | σ | KS | n |", "|---|---:|---:|---:|---:|---:|"]
    for name, d in braylan["distances"].items():
        rows.append(f"| {BRAYLAN_NAMES.get(name, name)} | {fmt(d.get('alpha'))} | {fmt(d.get('auc'))} | "
                    f"{fmt(d.get('sigma'))} | {fmt(d.get('ks'))} | {d.get('n_do', 0)} |")
    return "\n\n".join([
        f"{title} — whole annotation sets per sample: {braylan.get('n_items', '?')} samples with two raters "
        f"or more, {braylan.get('n_raters', '?')} raters, {braylan.get('n_annotations', '?')} boxes",
        "\n".join(rows),
        "n: same-sample rater pairs (Do), matched by as many random cross-sample pairs (De). "
        f"{note[0].upper()}{note[1:]}; KS = max(F_Do − F_De); σ = share of Do below the 5 % point of the De density.",
    ])


def bin_selection(res: dict, distance: str, key: str, b: int) -> tuple[list, str] | str:
    """The labels of the pairs of bin ``b`` of ``distance``'s ``key`` ("do" / "de") histogram in a
    stored run (``res["drill"]``, :mod:`kalos_core.calibration.drill`) and the panel's line
    about them; or why there is nothing to select."""
    drill, entry = res.get("drill"), (res.get("distances") or {}).get(distance) or {}
    if not drill:
        return "This calibration run was stored without the label pairs of its bins: recompute it to click its bars."
    edges, counts = entry["histogram"]["edges"], entry["histogram"][key]
    pairs = drill["distances"][distance][key][b] if b < len(counts) else []
    where = f"{distance} distance {fmt(edges[b])} – {fmt(edges[b + 1])}" if b < len(counts) else "this bin"
    if not pairs:
        return f"No {key.capitalize()} pair has a {where}."
    codes = sorted({c for c in pairs if c >= 0})
    labels = [drill["labels"][c] for c in codes]
    n_samples = len({drill["label_sample"][c] for c in codes})
    n_pairs = len(pairs) // 2
    what = ("same-sample label pairs (Do)" if key == "do" else
            "cross-sample pairs (De): each joins labels of two samples, both samples are shown")
    shown = (f"Showing all {n_pairs:,} {what} at {where}: **{len(labels):,} labels on {n_samples:,} "
             "samples** (only those labels)")
    left = counts[b] - n_pairs
    if left > 0:   # a bin beyond what a run keeps (kalos_core.calibration.drill.DRILL_CAP)
        shown = (f"Showing **{n_pairs:,} of the bar's {counts[b]:,}** {what} at {where}, an even spread over the "
                 f"samples: **{len(labels):,} labels on {n_samples:,} samples** (only those labels). "
                 f"**{left:,} pairs are left out**: a run keeps at most "
                 f"{(drill.get('caps') or {}).get(distance, drill.get('cap', n_pairs)):,} per bar; "
                 "calibrate a smaller view (fewer samples) to see every pair of the bar")
    return labels, shown


class CalibrationPanel(RunPanel):
    HELP_URL = "docs/calibration.md"
    INTRO = ("Distances between labels of the same object (Do) against chance pairs (De). The distance "
             "threshold τ* separates them (a run uses the similarity threshold t = 1 − τ*); the shaded band "
             "is its confidence interval.")
    EMPTY = ("No KaLOS calibration run on this dataset yet. Calibrate: it estimates the distance threshold τ* "
             "(and so the similarity threshold t = 1 − τ*) from the raters' own disagreement.")
    ACTION_LABEL = "Calibrate"

    NAME, LABEL, ICON = "kalos_calibration", "KaLOS: Calibration", "tune"
    HELP = "Do/De histograms, the distance threshold τ*, KS and σ of a KaLOS calibration run."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        dists = res.get("distances") or {}
        rec = res.get("recommended") or {}
        name = ctx.panel.state.distance
        if name not in dists:
            name = rec.get("distance") if rec.get("distance") in dists else next(iter(dists), None)
        ctx.panel.state.distances = list(dists)
        ctx.panel.state.distance = name
        ctx.panel.state.task = res.get("task")
        ctx.panel.state.braylan = braylan_markdown(res)
        if name is None:
            ctx.panel.state.summary = "This calibration run holds no distance."
            return
        entry = dists[name]
        traces, layout = calibration_figure(entry)
        ctx.panel.data.calibration = traces
        ctx.panel.state.plot_layout = layout
        ctx.panel.state.similarity = entry.get("similarity_threshold")
        do, de = entry.get("do") or {}, entry.get("de") or {}
        summary = [f"**{name}**: τ\\* {fmt(entry.get('tau_star'))}{_ci(entry.get('tau_ci'))} ⇒ "
                   f"**t = {threshold_text(entry.get('similarity_threshold'))}**{_ci(entry.get('similarity_ci'))} · "
                   f"**KS** {fmt(entry.get('ks'))}{_ci(entry.get('ks_ci'))}"]
        if rec:
            summary += recommendation_md(rec)
        ctx.panel.state.summary = "\n\n".join(summary)
        ctx.panel.state.targets = self._targets(rec, name, entry)
        details = [
            f"τ\\* is a distance; a run uses the similarity threshold t = 1 − τ\\* · method "
            f"{entry.get('tau_method', '—')} · **σ** {fmt(entry.get('sigma'))}",
            f"Do: {do.get('n', 0)} pairs, median {fmt(do.get('median'))} · De: {de.get('n', 0)} pairs, "
            f"median {fmt(de.get('median'))}",
            f"{res.get('n_images', '?')} samples, {res.get('bootstrap', '?')} bootstrap resamples, "
            f"{int(100 * (res.get('confidence') or 0.95))}% intervals",
        ] + ([f"Why {rec.get('distance')}: {_why(rec)}"] if rec.get("reason") else []) + alpha_md(rec)
        ctx.panel.state.details = "\n\n".join(details)

    @staticmethod
    def _targets(rec: dict, name: str, entry: dict) -> list[dict]:
        """The distances the panel offers to run agreement at: the recommended, the scale-invariant
        alternative, the one shown (each once), with its similarity threshold."""
        out = []
        for why, r in (("recommended", rec), ("scale-invariant", rec.get("alternative") or {}),
                       ("shown", {"distance": name, "similarity_threshold": entry.get("similarity_threshold")})):
            if r.get("distance") and r.get("similarity_threshold") is not None and \
                    r["distance"] not in [t["distance"] for t in out]:
                out.append({"distance": r["distance"], "t": proposed(r["similarity_threshold"]), "why": why})
        return out

    def on_click_bin(self, ctx):
        """A Do / De bar: select the label pairs stored for its bin (a De pair's two samples)."""
        key = {0: "do", 1: "de"}.get(ctx.params.get("trace_idx"))
        b = ctx.params.get("idx")
        if key is None or not isinstance(b, int):
            return
        res = load_results(ctx.dataset, ctx.panel.state.run_key)
        found = bin_selection(res, ctx.panel.state.distance, key, b)
        if isinstance(found, str):
            ctx.panel.state.selection = found
            return
        self.show_labels(ctx, *found)

    def on_change_distance(self, ctx):
        ctx.panel.state.distance = ctx.params.get("value")
        self.load_run(ctx, ctx.panel.state.run_key)

    def on_toggle_details(self, ctx):
        ctx.panel.state.show_details = bool(ctx.params.get("value"))

    def agreement_params(self, ctx, target: dict | None = None) -> dict:
        """compute_agreement prefill: ``target``'s distance and its similarity threshold t (default:
        the distance shown, at its calibrated t)."""
        key = ctx.panel.state.run_key
        name = target["distance"] if target else ctx.panel.state.distance
        similarity = ctx.panel.state.similarity
        params = {"threshold": target["t"] if target else None if similarity is None else proposed(similarity),
                  "calibration_key": key}
        kind = TASK_KINDS.get(ctx.panel.state.task, ctx.panel.state.task)   # older runs stored the kind
        if name and kind:
            from kalos_core.geometry import distances_for

            if name in distances_for(kind) or (kind == "box" and name == "mask_iou"):
                params["distance"] = name
        params.update(label_source_values(ctx.dataset.get_run_info(key).config))
        return {k: v for k, v in params.items() if v is not None}

    def run_at_tau(self, ctx):
        ctx.prompt(registry.operator_uri("agreement"), params=self.agreement_params(ctx))

    def run_target(self, ctx, index: int):
        targets = ctx.panel.state.targets or []
        if index < len(targets):
            ctx.prompt(registry.operator_uri("agreement"), params=self.agreement_params(ctx, targets[index]))

    def run_target_0(self, ctx):
        self.run_target(ctx, 0)

    def run_target_1(self, ctx):
        self.run_target(ctx, 1)

    def run_target_2(self, ctx):
        self.run_target(ctx, 2)

    def render_run(self, panel, ctx):
        names = ctx.panel.state.distances or []
        if names:
            panel.enum("distance", names, default=ctx.panel.state.distance, label="Distance",
                       view=dropdown(names), on_change=self.on_change_distance)
        panel.md(ctx.panel.state.summary or "", name="summary")
        buttons = panel.h_stack("run_buttons", gap=1)
        for i, t in enumerate((ctx.panel.state.targets or [])[:3]):
            buttons.btn(f"run_target_{i}", label=f"Run {t['distance']} at t = {threshold_text(t['t'])}",
                        icon="play_arrow", variant="contained" if i == 0 else "outlined",
                        on_click=getattr(self, f"run_target_{i}"))
        buttons.btn("open_operator", label="Recompute", icon="refresh", on_click=self.open_operator)
        if ctx.panel.state.distance:
            chart(panel, "calibration", ctx.panel.state.plot_layout, on_click=self.on_click_bin)
        if ctx.panel.state.details or ctx.panel.state.braylan:
            panel.bool("show_details", default=bool(ctx.panel.state.show_details), label="Details",
                       view=types.SwitchView(), on_change=self.on_toggle_details)
            if ctx.panel.state.show_details:
                panel.md(ctx.panel.state.details or "", name="details")
                if ctx.panel.state.braylan:
                    panel.md(ctx.panel.state.braylan, name="braylan")
