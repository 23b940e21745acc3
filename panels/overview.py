"""Agreement overview: mean and global α with CI, interpretation band, per-sample α histogram.

Clicking a bar of the histogram shows exactly the samples whose α lies in that bin, worst first.
"""

from __future__ import annotations

import math

import fiftyone.operators as foo
import numpy as np
from fiftyone import ViewField as F

from .common import BANDS, RunPanel, band_color, band_of, chart, clean, fmt, load_results, plot_layout, vline
from .views import RunLayout, alpha_range_view

BIN_WIDTH = 0.05


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


class AgreementOverviewPanel(RunPanel):
    TITLE = "KaLOS: Agreement overview"
    INTRO = "Per-sample α of the run; click a bar to show those samples in the grid, lowest α first."

    @property
    def config(self):
        return foo.PanelConfig(name="kalos_agreement_overview", label="KaLOS: Agreement overview",
                               icon="insights", category=foo.Categories.ANALYZE,
                               help_markdown="Krippendorff's α after instance matching, per sample and "
                                             "for the dataset; click a histogram bar to browse its samples.")

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        lay = RunLayout.from_run(ctx.dataset, run_key)
        per_image = [v for v in (res.get("per_image_alpha") or {}).values() if v is not None]
        edges, counts, undefined = alpha_histogram(ctx.dataset, lay.alpha_field,
                                                   min(per_image) if per_image else None)
        centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
        widths = [(b - a) * 0.95 for a, b in zip(edges[:-1], edges[1:])]
        colors = [band_color(x) for x in centers]
        trace = {"type": "bar", "name": "samples", "x": centers, "y": counts, "width": widths,
                 "ids": [str(k) for k in range(len(counts))], "marker": {"color": colors},
                 "hovertemplate": "α %{x:.3f}: %{y} samples<extra></extra>"}
        mean, glob = res.get("mean_alpha"), res.get("global_alpha")
        shapes, notes = [], []
        for lo, hi, name, color in BANDS:
            x0, x1 = max(lo, edges[0]), min(hi, edges[-1])
            if x1 > x0:
                shapes.append({"type": "rect", "x0": x0, "x1": x1, "xref": "x", "y0": 0, "y1": 1,
                               "yref": "paper", "fillcolor": f"rgba({color},0.10)", "line": {"width": 0},
                               "layer": "below"})
        for value, label, color in ((mean, "mean α", "#222"), (glob, "global α", "#7f7f7f")):
            if value is not None:
                s, a = vline(value, label, color)
                shapes.append(s)
                notes.append(a)
        layout = plot_layout(f"Per-sample α ({run_key})", "α", "samples", shapes=shapes, annotations=notes,
                             bargap=0.02, xaxis={"title": {"text": "α"}, "range": [edges[0], edges[-1]]})
        ctx.panel.data.histogram = clean([trace])
        ctx.panel.state.edges = edges
        ctx.panel.state.counts = clean(counts)
        ctx.panel.state.histogram_layout = clean(layout)
        ctx.panel.state.summary = self._summary(res, int(undefined))
        ctx.panel.state.selection = None

    @staticmethod
    def _summary(res: dict, undefined: int) -> str:
        ci = res.get("mean_alpha_ci")
        ci_text = f" (95% CI {fmt(ci[0])} – {fmt(ci[1])})" if ci else ""
        cfg = res.get("agreement_config") or {}
        mean = res.get("mean_alpha")
        lines = [
            f"**Mean α** {fmt(mean)}{ci_text} · **Global α** {fmt(res.get('global_alpha'))} · "
            f"interpretation: **{res.get('interpretation') or band_of(mean)}**",
            f"{res.get('n_images', 0)} samples ({undefined} with undefined α), "
            f"{res.get('n_annotations', 0)} labels in {res.get('n_units', 0)} units · threshold "
            f"{fmt(cfg.get('threshold'), 2)}, distance {cfg.get('distance', '—')}, solver {cfg.get('solver', '—')}",
            "Bands: < 0 systematic disagreement · 0–0.4 weak · 0.4–0.6 moderate · 0.6–0.8 substantial · "
            "≥ 0.8 near-perfect",
        ]
        return "\n\n".join(lines)

    def on_click_bin(self, ctx):
        edges = ctx.panel.state.edges or []
        k = bin_of(ctx.params, edges)
        if k is None:
            return
        lo, hi, last = edges[k], edges[k + 1], k == len(edges) - 2
        counts = ctx.panel.state.counts or []
        n = counts[k] if k < len(counts) else "?"
        upper = f"≤ {fmt(1.0, 2)}" if last else f"< {fmt(hi, 2)}"
        self.show(ctx, alpha_range_view(ctx.dataset, self.layout(ctx), lo, hi),
                  f"Showing {n} sample{'' if n == 1 else 's'} with {fmt(lo, 2)} ≤ α {upper}")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        chart(panel, "histogram", ctx.panel.state.histogram_layout, on_click=self.on_click_bin)
