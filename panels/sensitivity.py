"""Localisation sensitivity: mean α against the similarity threshold, with the run's threshold t marked.

A curve that drops sharply towards strict thresholds means raters find the same objects but
draw them differently; a flat curve means disagreement is about *which* objects exist.
``Δ = α(t) − α(t_strict)`` summarises the drop. A click on a threshold selects the samples whose
units, matched at the run's t, fall apart there (:mod:`kalos_core.agreement.falls_apart`).

Names (the same in every panel): **t** is a run's *similarity* threshold (two labels may match
when their similarity is at least t); **τ*** is only the calibrated *distance* threshold of a
calibration run, and a run made from one says so: "τ* = 0.430 (distance) ⇒ similarity threshold
t = 0.57".
"""

from __future__ import annotations


from kalos_core.agreement.config import SENSITIVITY_THRESHOLDS
from kalos_core.params import fraction_key
from kalos_core.thresholds import threshold_text

from .common import (LEGEND, NEUTRAL, RunPanel, band_color, chart, clean, clicked, fmt, load_results,
                     plot_layout, vline)


def calibrated_tau(dataset, run_key: str) -> tuple[float, str] | None:
    """``(τ*, calibration key)`` when the agreement run was made from a calibration run that
    still exists and holds the run's distance; else None."""
    cfg = dataset.get_run_info(run_key).config
    key = getattr(cfg, "calibration_key", None)
    if not key or key not in dataset.list_runs():
        return None
    try:
        cal = load_results(dataset, key)
    except Exception:  # a deleted or foreign run: no τ* to show
        return None
    entry = (cal.get("distances") or {}).get(getattr(cfg, "distance", None)) or {}
    tau = entry.get("tau_star")
    return (float(tau), key) if tau is not None else None


def threshold_md(dataset, run_key: str) -> str:
    """How every panel names a run's threshold: "similarity threshold t = 0.597" (as every text shows a
    threshold, :func:`kalos_core.thresholds.threshold_text`), preceded by "τ* = 0.403 (distance) ⇒"
    when the run came from a calibration."""
    t = getattr(dataset.get_run_info(run_key).config, "threshold", None)
    text = f"similarity threshold t = {threshold_text(t)}"
    cal = calibrated_tau(dataset, run_key)
    return f"τ\\* = {fmt(cal[0])} (distance, calibration *{cal[1]}*) ⇒ {text}" if cal else text


def sensitivity_points(lsa: dict, threshold: float | None, mean_alpha: float | None) -> list[tuple[float, float]]:
    """``(threshold, mean α)`` points sorted by threshold; the run's own threshold included."""
    points = {round(float(t), 6): v for t, v in (lsa or {}).items() if v is not None}
    if threshold is not None and mean_alpha is not None:
        points.setdefault(round(float(threshold), 6), mean_alpha)
    return sorted(points.items())


def falls_apart_selection(res: dict, x: float) -> tuple[list, str] | str:
    """The labels of the units of a stored agreement run that fall apart at threshold ``x``
    (``res["lsa_falls_apart"]``, :mod:`kalos_core.agreement.falls_apart`) and the panel's line; or why there is nothing to select."""
    t = (res.get("agreement_config") or {}).get("threshold")
    if t is not None and fraction_key(x) == fraction_key(t):
        return f"t = {threshold_text(t)} is the run's own threshold: no unit falls apart there. Click another threshold."
    drill = res.get("lsa_falls_apart")
    if drill is None:
        return "This run was stored without the units that fall apart at each threshold: recompute it to click the curve."
    entry = drill.get(fraction_key(x))
    if entry is None:
        return f"No threshold {threshold_text(x)} in this run."
    n, labels = len(entry["samples"]), entry["labels"]
    # a stricter threshold drops a link of a unit; a more lenient one lets a label pair elsewhere
    stricter = t is None or float(x) > float(t)
    at = f"{'the stricter' if stricter else 'the more lenient'} {threshold_text(x)}"
    why = ("a link of theirs falls below it" if stricter else
           "a label of theirs pairs with another rater's label instead")
    if not n:
        return f"No unit matched at t = {threshold_text(t)} falls apart at {at}."
    return labels, (f"Showing the **{n} samples** whose units matched at t = {threshold_text(t)} fall apart at "
                    f"{at} ({why}): their {len(labels)} labels only")


class LocalisationSensitivityPanel(RunPanel):
    RERUN_ADDS = {"lsa_thresholds": ",".join(map(str, SENSITIVITY_THRESHOLDS))}
    INTRO = ("Mean α when the run is repeated at other similarity thresholds; the dashed line is the "
             "run's similarity threshold t. A steep drop means the raters agree on *what* is there, not on *where*.")

    NAME, LABEL, ICON = "kalos_localisation_sensitivity", "KaLOS: Localisation sensitivity", "show_chart"
    HELP = "α as a function of the similarity threshold (LSA)."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        cfg = res.get("agreement_config") or {}
        tau, mean = cfg.get("threshold"), res.get("mean_alpha")
        lsa = res.get("lsa") or {}
        ctx.panel.state.has_lsa = bool(lsa)
        if not lsa:
            return
        pts = sensitivity_points(lsa, tau, mean)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        traces = [{"type": "scatter", "mode": "lines+markers", "name": "mean α", "x": xs, "y": ys,
                   "marker": {"size": 10, "color": [band_color(y) for y in ys]}, "line": {"color": NEUTRAL},
                   "hovertemplate": "threshold %{x:.3~f}: α = %{y:.4f}<extra></extra>"}]
        if tau is not None and mean is not None:
            traces.append({"type": "scatter", "mode": "markers", "name": "t (the run's threshold)", "x": [tau],
                           "y": [mean], "marker": {"size": 16, "symbol": "star", "color": "#d62728"},
                           "hovertemplate": "t = %{x:.3~f}: α = %{y:.4f}<extra></extra>"})
        shapes, notes = [], []
        if tau is not None:
            s, a = vline(tau, f"t = {threshold_text(tau)}", "#d62728")
            shapes, notes = [s], [a]
        ctx.panel.data.sensitivity = clean(traces)
        ctx.panel.state.plot_layout = clean(plot_layout(
            f"Localisation sensitivity ({run_key})", "similarity threshold", "mean α", height=380,
            shapes=shapes, annotations=notes, showlegend=True, legend=LEGEND))
        delta = res.get("lsa_delta")
        strict = max(float(t) for t in lsa)
        ctx.panel.state.summary = (f"**Δ** = α(t = {threshold_text(tau)}) − α(t = {threshold_text(strict)}) = "
                                   f"**{fmt(delta)}** · "
                                   f"α ranges {fmt(min(ys))} – {fmt(max(ys))} over thresholds "
                                   f"{', '.join(threshold_text(x) for x in xs)}\n\n"
                                   f"The run's {threshold_md(ctx.dataset, run_key)}")

    def on_click_threshold(self, ctx):
        """A threshold on the curve: the samples whose units (matched at the run's t) fall apart there."""
        x = clicked(ctx, "x")
        if x is None:
            return
        res = load_results(ctx.dataset, ctx.panel.state.run_key)
        found = falls_apart_selection(res, float(x))
        if isinstance(found, str):
            ctx.panel.state.selection = found
            return
        self.show_labels(ctx, *found)

    def render_run(self, panel, ctx):
        if not ctx.panel.state.has_lsa:
            example = ", ".join(map(str, SENSITIVITY_THRESHOLDS))
            self.render_missing(panel, "This run was computed without localisation-sensitivity thresholds. "
                                f"Recompute it with some (e.g. {example}):", "no_lsa", label="Recompute with thresholds")
            return
        chart(panel, "sensitivity", ctx.panel.state.plot_layout, on_click=self.on_click_threshold)
        panel.md(ctx.panel.state.summary or "", name="summary")
