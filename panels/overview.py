"""Agreement overview: mean and global α with CI, interpretation band, per-sample α histogram.

Clicking a bar of the histogram shows exactly the samples whose α lies in that bin, worst first.
An optional second run ("Compare with") overlays its histogram on the same bins, with both
means, and the summary gives the difference (second − first). When one run covers samples the
other does not (a second round on the review queue), both histograms and means are taken on the
samples both scored, and the summary says how many improved and worsened from the older run.

"Split by" splits the run's per-sample α by a subset definition over samples (a scalar sample
field's values, ``tags``, or the user's saved views: :mod:`fiftyone_layer.subsets`): mean α and n
per subset side by side, a click on a bar shows exactly the samples it counts, lowest α first.
Object size and label attributes split labels, not samples: they cannot split a per-sample α.
"""

from __future__ import annotations

import math

import numpy as np
from fiftyone import ViewField as F

from kalos_core.thresholds import threshold_text

from .common import (AGREEMENT_METHOD, BANDS, LEGEND, RunPanel, band_color, band_of, bands_text, chart, clean,
                     clicked, dropdown, fmt, load_results, plot_layout, runs_of, vline)
from .sensitivity import threshold_md
from ..fiftyone_layer.paired_alpha import paired_alpha
from ..fiftyone_layer.subsets import sample_choices, sample_values, split_samples
from .splits import NO_SPLIT, show_subset, split_md
from ..fiftyone_layer.views import RunLayout, alpha_range_view

BIN_WIDTH = 0.05
#: the two runs' colours when compared (the single histogram is coloured by band)
RUN_COLORS = ("#1f77b4", "#ff7f0e")
NO_COMPARE = "none"
#: why the overview offers fewer subset definitions than the scorecard
SAMPLE_ONLY = ("Split by sample fields and saved views only: α is one number per sample, so object size "
               "and label attributes (which split labels) cannot split it; the scorecard panel splits by them.")


def alpha_bin_edges(low: float | None, width: float = BIN_WIDTH) -> list[float]:
    """Bin edges from below ``low`` up to 1.0 in steps of ``width``; α below -1 shares one
    wide first bin. The last bin is closed (α = 1 belongs to it)."""
    low = 0.0 if low is None or not math.isfinite(low) else min(float(low), 1.0 - width)
    start = max(-1.0, math.floor(round(low / width, 9)) * width)
    n = int(round((1.0 - start) / width))
    edges = [round(start + k * width, 10) for k in range(n + 1)]
    if low < -1.0:
        edges.insert(0, float(math.floor(low)))
    return edges


def alpha_histogram(dataset, alpha_field: str, low: float | None):
    """One database aggregation: ``(edges, counts, n_undefined)`` of the per-sample α.

    Bins are ``[edges[k], edges[k+1])``; the last edge lies just above 1 so α = 1 falls in the
    last bin. Click handlers reuse these exact edges, so a bin's view holds exactly its count.
    NaN (undefined α) falls outside every bin and is counted in ``n_undefined``.
    """
    nominal = alpha_bin_edges(low)
    top = float(np.nextafter(1.0, 2.0))
    wide = nominal[0] < -1.0  # then one wide first bin [floor(min α), -1)
    start = nominal[1] if wide else nominal[0]
    samples = dataset.exists(alpha_field)
    # FiftyOne 1.22.1 rejects explicit bin edges (int(list)); range + bins builds the same $bucket
    counts, edges, other = samples.histogram_values(alpha_field, bins=len(nominal) - 1 - wide, range=[start, top])
    edges, counts, other = [float(e) for e in edges], [int(c) for c in counts], int(other)
    if wide:
        below = samples.match((F(alpha_field) >= nominal[0]) & (F(alpha_field) < start)).count()
        edges, counts, other = [nominal[0]] + edges, [below] + counts, other - below
    return edges, counts, other


def bin_of(params: dict, edges: list[float]) -> int | None:
    """Which bin a plotly click hit: the point index, else its id, else its x (bin centre)."""
    n = len(edges) - 1
    for key in ("idx", "id"):
        v = params.get(key)
        if isinstance(v, (int, str)) and str(v).isdigit() and int(v) < n:
            return int(v)
    x = params.get("x")
    if isinstance(x, (int, float)):
        k = int(np.searchsorted(edges, x, side="right")) - 1
        return min(max(k, 0), n - 1)
    return None


def lowest_alpha(*results: dict) -> float | None:
    """The lowest defined per-sample α over ``results`` (the bins must reach it)."""
    values = [v for res in results for v in (res.get("per_image_alpha") or {}).values()
              if v is not None and math.isfinite(v)]
    return min(values) if values else None


def histogram_traces(edges: list[float], runs: list[tuple[str, list[int]]]) -> list[dict]:
    """One bar trace per ``(run key, counts)`` on the same ``edges``: a single run coloured by
    band, two runs overlaid in two colours. The trace ``name`` is the run key (clicks name it)."""
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    widths = [(b - a) * 0.95 for a, b in zip(edges[:-1], edges[1:])]
    traces = []
    for k, (key, counts) in enumerate(runs):
        color = [band_color(x) for x in centers] if len(runs) == 1 else RUN_COLORS[k % 2]
        trace = {"type": "bar", "name": key, "x": centers, "y": list(counts), "width": widths,
                 "ids": [str(i) for i in range(len(counts))], "marker": {"color": color},
                 "hovertemplate": f"{key}<br>α %{{x:.3f}}: %{{y}} samples<extra></extra>"}
        if len(runs) > 1:
            trace["opacity"] = 0.6
        traces.append(trace)
    return traces


#: the mean-α line of a single run and the global-α line: strong colours apart from the bands' own
MEAN_COLOR, GLOBAL_COLOR = "#17becf", "#9467bd"
#: a bar this many times taller than the next is cut at 1.5x the next (its count written on it)
TALL_BAR = 2.5


def tall_bar_cut(edges: list[float], counts: list[list[int]]) -> tuple[dict | None, dict | None]:
    """``(yaxis, annotation)`` cutting one bar that would flatten the rest (e.g. α = 1 on 97 of 200
    samples): the y range ends at 1.5x the next tallest, and the cut bar says its count; ``(None,
    None)`` when no bar stands out so."""
    heights = [max(col) for col in zip(*counts)] if counts else []
    order = sorted(range(len(heights)), key=heights.__getitem__, reverse=True)
    if len(order) < 2 or heights[order[1]] <= 0 or heights[order[0]] <= TALL_BAR * heights[order[1]]:
        return None, None
    k, top = order[0], 1.5 * heights[order[1]]
    note = {"x": (edges[k] + edges[k + 1]) / 2, "y": top, "xref": "x", "yref": "y", "yanchor": "top",
            "text": f"<b>{heights[k]}</b> ↑ (cut)", "showarrow": False, "font": {"size": 11},
            "bgcolor": "rgba(255,255,255,0.85)", "bordercolor": "#444", "borderwidth": 1}
    return {"title": {"text": "samples"}, "range": [0, top]}, note


def histogram_layout(title: str, edges: list[float], means: list[tuple[str, float | None, str]],
                     glob: float | None = None, counts: list[list[int]] = ()) -> dict:
    """Band backgrounds, a solid line per ``(label, mean, colour)`` and a dashed global α line (single
    run only), each labelled with its value on alternating sides (close lines do not print over each
    other); a bar far taller than the rest (``counts``: each run's) is cut (:func:`tall_bar_cut`)."""
    shapes, notes = [], []
    for lo, hi, _, color in BANDS:
        x0, x1 = max(lo, edges[0]), min(hi, edges[-1])
        if x1 > x0:
            shapes.append({"type": "rect", "x0": x0, "x1": x1, "xref": "x", "y0": 0, "y1": 1,
                           "yref": "paper", "fillcolor": f"rgba({color},0.10)", "line": {"width": 0},
                           "layer": "below"})
    lines = [(label, value, color, "solid") for label, value, color in means]
    lines += [("global α", glob, GLOBAL_COLOR, "dash")] if glob is not None else []
    for j, (label, value, color, dash) in enumerate(v for v in lines if v[1] is not None):
        s, a = vline(value, f"{label} {fmt(value)}", color, dash=dash)
        s["line"]["width"] = 3
        a.update(xanchor="right" if j % 2 == 0 else "left", font={"color": color, "size": 12})
        shapes.append(s)
        notes.append(a)
    yaxis, cut = tall_bar_cut(edges, list(counts))
    notes += [cut] if cut else []
    extra = {"barmode": "overlay", "showlegend": True, "legend": LEGEND} if len(means) > 1 else {}
    extra.update({"yaxis": yaxis} if yaxis else {})
    return plot_layout(title, "α", "samples", shapes=shapes, annotations=notes, bargap=0.02,
                       xaxis={"title": {"text": "α"}, "range": [edges[0], edges[-1]]}, **extra)


#: |Δ| below this reads "unchanged" (it rounds to 0.000 in the text)
SAME_DELTA = 0.0005


def delta_text(old: float | None, new: float | None) -> str:
    """``Δ +0.088, better``: new − old, signed, with what it means for agreement in words."""
    if old is None or new is None or not (math.isfinite(old) and math.isfinite(new)):
        return "Δ —"
    d = new - old
    word = "unchanged" if abs(d) < SAME_DELTA else "better" if d > 0 else "worse"
    return f"Δ {'+' if d >= 0 else ''}{fmt(d)}, {word}"


def comparison_md(older: str, res_older: dict, newer: str, res_newer: dict, own: bool = False) -> str:
    """The older run against the newer one: each mean and global α, old → new, and Δ = newer − older
    (said here once; the shared-samples line follows the same convention); ``own``: say that each
    run's figures cover its own samples (they differ)."""
    def change(name: str) -> str:
        a, b = res_older.get(name), res_newer.get(name)
        return f"{fmt(a)} → {fmt(b)} ({delta_text(a, b)})"

    return (f"**{older} → {newer}**{' (each run over its own samples)' if own else ''}: "
            f"mean α {change('mean_alpha')} · global α {change('global_alpha')} · "
            f"Δ = {newer} − {older} (newer minus older): + is better agreement, − worse")


def shared_md(pair: dict) -> str:
    """The two runs on the samples both scored (``pair``: :meth:`AgreementOverviewPanel.shared_samples`),
    older → newer as in :func:`comparison_md`."""
    older, newer, n = pair["older"], pair["newer"], pair["samples"]
    same = n - pair["changed"]
    return (f"**On the {n} samples both runs scored** ({older}: {pair['scored_first']} samples, {newer}: "
            f"{pair['scored_second']}): mean α {fmt(pair['mean_first'])} → {fmt(pair['mean_second'])} "
            f"({delta_text(pair['mean_first'], pair['mean_second'])}) · "
            f"**{pair['improved']} better**, **{pair['worsened']} worse**, {same} unchanged")


def split_alpha(dataset, alpha_field: str, choice: str) -> dict:
    """The per-sample α of ``alpha_field`` split by ``choice`` (:func:`sample_choices`):
    ``{subset: {"ids", "mean"}}`` (:func:`split_samples`, samples with a defined α only)."""
    scores = dict(zip(*dataset.values(["id", alpha_field])))
    return split_samples(scores, sample_values(dataset, choice) or {})


def split_trace(split: dict) -> dict:
    """One bar per subset: its mean α (coloured by band), n on hover; point ids the subsets."""
    names = list(split)
    means = [split[s]["mean"] for s in names]
    return {"type": "bar", "name": "mean α", "x": names, "y": means, "ids": names,
            "customdata": [len(split[s]["ids"]) for s in names], "marker": {"color": [band_color(m) for m in means]},
            "hovertemplate": "%{x}: mean α %{y:.3f} over %{customdata} samples<extra></extra>"}


class AgreementOverviewPanel(RunPanel):
    INTRO = "Per-sample α of the run; click a bar to show those samples in the grid, lowest α first."

    NAME, LABEL, ICON = "kalos_agreement_overview", "KaLOS: Agreement overview", "insights"
    HELP = ("Krippendorff's α after instance matching, per sample and for the dataset; click a "
            "histogram bar to browse its samples.")

    @staticmethod
    def compare_key(ctx, run_key: str) -> str | None:
        """The run to compare with: the chosen one while it exists and is not the run itself
        (also keeps the dropdown's choices, the other runs, in ``compare_choices``)."""
        others = [k for k in runs_of(ctx.dataset, AGREEMENT_METHOD) if k != run_key]
        ctx.panel.state.compare_choices = others
        key = ctx.panel.state.compare_key
        return key if key in others else None

    @staticmethod
    def shared_samples(ctx, run_key: str, other: str):
        """``(comparison, view)``: :func:`paired_alpha` of the older run then the newer one, and
        the view of the samples both scored with a defined α, when one run covers samples the
        other does not (e.g. round 2 on the review queue); ``(comparison, None)`` when both runs
        scored the same samples or none in common (each histogram then covers its own run's)."""
        older, newer = [k for k in runs_of(ctx.dataset, AGREEMENT_METHOD) if k in (run_key, other)]
        pair = paired_alpha(ctx.dataset, *(RunLayout.from_run(ctx.dataset, k).alpha_field for k in (older, newer)))
        pair["older"], pair["newer"] = older, newer
        if pair["same_samples"] or not pair["samples"]:
            return pair, None
        return pair, ctx.dataset.select(list(pair["per_sample"]))

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        other = self.compare_key(ctx, run_key)
        res_b = load_results(ctx.dataset, other) if other else None
        pair, shared = self.shared_samples(ctx, run_key, other) if other else (None, None)
        scope = ctx.dataset if shared is None else shared
        low = (lowest_alpha(res, *([res_b] if res_b else [])) if shared is None
               else min(min(p) for p in pair["per_sample"].values()))
        edges, counts, undefined = alpha_histogram(scope, RunLayout.from_run(ctx.dataset, run_key).alpha_field, low)
        runs, means = [(run_key, counts)], [("mean α", res.get("mean_alpha"), MEAN_COLOR)]
        if other:
            edges_b, counts_b, _ = alpha_histogram(scope, RunLayout.from_run(ctx.dataset, other).alpha_field, low)
            if edges_b != edges:  # same lowest α, same bins: a bug if ever
                raise ValueError(f"the histograms of {run_key} and {other} do not share their bins")
            runs.append((other, counts_b))
            mean_of = {run_key: res.get("mean_alpha"), other: res_b.get("mean_alpha")}
            if shared is not None:
                mean_of = {pair["older"]: pair["mean_first"], pair["newer"]: pair["mean_second"]}
            means = [(f"mean α {k}", mean_of[k], RUN_COLORS[i]) for i, k in enumerate((run_key, other))]
        on = f" on {pair['samples']} shared samples" if shared is not None else ""
        title = f"Per-sample α ({run_key}{f' vs {other}' if other else ''}{on})"
        layout = histogram_layout(title, edges, means, None if other else res.get("global_alpha"),
                                  [c for _, c in runs])
        ctx.panel.data.histogram = clean(histogram_traces(edges, runs))
        # the dropdown's own value ("none" too): a state that differs from what it shows makes the
        # App send on_change_compare at once, a second load of the run on every open
        ctx.panel.state.compare_key = other or NO_COMPARE
        ctx.panel.state.compare_loaded = other or NO_COMPARE
        ctx.panel.state.shared_only = shared is not None
        ctx.panel.state.edges = edges
        ctx.panel.state.counts = clean(counts)
        ctx.panel.state.compare_counts = clean(runs[1][1]) if other else None
        ctx.panel.state.histogram_layout = clean(layout)
        summary = self._summary(res, int(undefined) if shared is None else None, threshold_md(ctx.dataset, run_key))
        if other:
            older, newer = [k for k in runs_of(ctx.dataset, AGREEMENT_METHOD) if k in (run_key, other)]
            by_key = {run_key: res, other: res_b}
            summary += "\n\n" + comparison_md(older, by_key[older], newer, by_key[newer], own=shared is not None)
        if shared is not None:
            summary += "\n\n" + shared_md(pair)
        ctx.panel.state.summary = summary
        ctx.panel.state.selection = None
        skip = set(RunLayout.from_run(ctx.dataset, run_key).fields)
        ctx.panel.state.split_choices = {NO_SPLIT: "(no split)", **sample_choices(ctx.dataset, skip=skip)}
        split = ctx.panel.state.split
        self.draw_split(ctx, split if split in ctx.panel.state.split_choices else NO_SPLIT)

    def draw_split(self, ctx, choice: str) -> None:
        """The run's per-sample α split by ``choice``: mean α and n per subset."""
        ctx.panel.state.split = choice
        if choice == NO_SPLIT:
            ctx.panel.data.subsets, ctx.panel.state.subsets_layout, ctx.panel.state.subsets_md = [], None, None
            return
        key = ctx.panel.state.run_key
        split = split_alpha(ctx.dataset, RunLayout.from_run(ctx.dataset, key).alpha_field, choice)
        label = (ctx.panel.state.split_choices or {}).get(choice, choice)
        ctx.panel.data.subsets = clean([split_trace(split)])
        ctx.panel.state.subsets_layout = clean(plot_layout(
            f"Mean α of {key} by {label} (click a bar: its samples)", "subset", "mean α", height=300,
            xaxis={"type": "category"}, yaxis={"title": {"text": "mean α"}, "range": [min(0.0, *(
                v["mean"] for v in split.values())) if split else 0.0, 1.05]}))
        ctx.panel.state.subsets_md = split_md(split, None, "mean α")

    def on_change_split(self, ctx):
        self.draw_split(ctx, ctx.params.get("value") or NO_SPLIT)

    def on_click_subset(self, ctx):
        subset, choice = clicked(ctx, "id", "x"), ctx.panel.state.split
        if subset is None or choice in (None, NO_SPLIT):
            return
        key = ctx.panel.state.run_key
        ids = split_alpha(ctx.dataset, RunLayout.from_run(ctx.dataset, key).alpha_field, choice).get(str(subset))
        if ids is None:
            return
        show_subset(self, ctx, ids["ids"], subset, f"with a defined α of {key}, lowest first")

    @staticmethod
    def _summary(res: dict, undefined: int | None, threshold: str | None = None) -> str:
        ci = res.get("mean_alpha_ci")
        ci_text = f" (95% CI {fmt(ci[0])} – {fmt(ci[1])})" if ci else ""
        cfg = res.get("agreement_config") or {}
        mean = res.get("mean_alpha")
        lines = [
            f"**Mean α** {fmt(mean)}{ci_text} · **Global α** {fmt(res.get('global_alpha'))} · "
            f"interpretation: **{res.get('interpretation') or band_of(mean)}**",
            f"{res.get('n_images', 0)} samples{'' if undefined is None else f' ({undefined} with undefined α)'}, "
            f"{res.get('n_annotations', 0)} labels in {res.get('n_units', 0)} units · "
            f"{threshold or 'similarity threshold t = ' + threshold_text(cfg.get('threshold'))}, "
            f"distance {cfg.get('distance', '—')}, solver {cfg.get('solver', '—')}",
            "Bands: " + bands_text(),
        ]
        return "\n\n".join(lines)

    def on_click_bin(self, ctx):
        edges = ctx.panel.state.edges or []
        k = bin_of(ctx.params, edges)
        if k is None:
            return
        lo, hi, last = edges[k], edges[k + 1], k == len(edges) - 2
        key, counts = ctx.panel.state.run_key, ctx.panel.state.counts or []
        other = self.compare_key(ctx, key)
        if other and (ctx.params.get("trace") == other or ctx.params.get("trace_idx") == 1):
            key, counts = other, ctx.panel.state.compare_counts or []
        n = counts[k] if k < len(counts) else "?"
        upper = f"≤ {fmt(1.0, 2)}" if last else f"< {fmt(hi, 2)}"
        run = f" of {key}" if other else ""
        shared = other and ctx.panel.state.shared_only
        scope = self.shared_samples(ctx, ctx.panel.state.run_key, other)[1] if shared else None
        shown = " (of the samples both runs scored)" if scope is not None else ""
        self.show(ctx, alpha_range_view(ctx.dataset if scope is None else scope, RunLayout.from_run(ctx.dataset, key),
                                        lo, hi, current=ctx.view),
                  f"Showing {n} sample{'' if n == 1 else 's'} with {fmt(lo, 2)} ≤ α{run} {upper}{shown}")

    def on_change_compare(self, ctx):
        value = ctx.params.get("value") or NO_COMPARE
        # the comparison loaded already: nothing to load (the App writes the dropdown's value into
        # state.compare_key before calling this, so that key cannot tell)
        if value == ctx.panel.state.compare_loaded:
            return
        ctx.panel.state.compare_key = value
        self.load_run(ctx, ctx.panel.state.run_key)

    def render_run(self, panel, ctx):
        others = ctx.panel.state.compare_choices or []
        if others:
            choices = [NO_COMPARE] + others
            panel.enum("compare_key", choices, default=ctx.panel.state.compare_key or NO_COMPARE,
                       label="Compare with", view=dropdown(choices, {NO_COMPARE: "— no second run —"}),
                       on_change=self.on_change_compare)
        self.render_summary(panel, ctx)
        chart(panel, "histogram", ctx.panel.state.histogram_layout, on_click=self.on_click_bin)
        choices = ctx.panel.state.split_choices or {}
        if len(choices) > 1:
            panel.enum("split", list(choices), default=ctx.panel.state.split or NO_SPLIT, label="Split by",
                       view=dropdown(list(choices), choices), on_change=self.on_change_split)
            panel.md(SAMPLE_ONLY, name="split_note")
            if ctx.panel.state.subsets_layout:
                chart(panel, "subsets", ctx.panel.state.subsets_layout, on_click=self.on_click_subset)
                panel.md(ctx.panel.state.subsets_md or "", name="subsets_table")
