"""Split by, for the panels whose numbers are, per key (a class, a rater), means over samples: the
run stores each key's per-sample values, :mod:`fiftyone_layer.subsets` says which subsets a sample
is in (a scalar sample field's values, ``tags``, the saved views), and the chart draws one bar per
key and subset, the mean over the subset's samples where the key has a value. A click on a bar
shows exactly the samples it averages, lowest first.

A panel mixes in :class:`SampleSplit` and implements :meth:`SampleSplit.split_scores`.
"""

from __future__ import annotations

import json

from ..fiftyone_layer.subsets import NONE, sample_choices, sample_values, split_samples
from .common import LEGEND, chart, clean, clicked, dropdown, fmt, plot_layout

NO_SPLIT = "none"
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def split_keyed(scores: dict, values: dict) -> dict:
    """``{key: {subset: {"ids", "mean"}}}``: each key's per-sample ``{sample id: value}`` split by
    the samples' subsets ``values`` (:func:`split_samples`), keys in their order."""
    return {k: split_samples(s, values) for k, s in scores.items()}


def split_traces(split: dict, horizontal: bool = False) -> list[dict]:
    """One bar trace per subset over the keys: the mean, the number of samples on hover; point ids
    ``[key, subset]`` as JSON."""
    subsets = sorted({s for per in split.values() for s in per}, key=lambda s: (s == NONE, s))
    traces = []
    for n, subset in enumerate(subsets):
        keys = [k for k, per in split.items() if subset in per]
        means = [split[k][subset]["mean"] for k in keys]
        axes = {"y": keys, "x": means, "orientation": "h"} if horizontal else {"x": keys, "y": means}
        at = "%{y}: %{x:.4f}" if horizontal else "%{x}: %{y:.4f}"
        traces.append({"type": "bar", "name": subset, **axes, "marker": {"color": COLOURS[n % len(COLOURS)]},
                       "ids": [json.dumps([k, subset]) for k in keys],
                       "customdata": [len(split[k][subset]["ids"]) for k in keys],
                       "hovertemplate": f"{subset} · {at} (%{{customdata}} samples)<extra></extra>"})
    return traces


def split_md(split: dict, key_name: str | None, value_name: str) -> str:
    """The split as a table: a row per key and subset, its mean and number of samples; with no
    ``key_name``, ``split`` is one key's ``{subset: ...}`` and the table has no key column."""
    if key_name is None:
        lines = [f"| subset | {value_name} | samples |", "|---|---|---|"]
        return "\n".join(lines + [f"| {s} | {fmt(v['mean'])} | {len(v['ids'])} |" for s, v in split.items()])
    lines = [f"| {key_name} | subset | {value_name} | samples |", "|---|---|---|---|"]
    lines += [f"| {k} | {s} | {fmt(v['mean'])} | {len(v['ids'])} |" for k, per in split.items() for s, v in per.items()]
    return "\n".join(lines)


def show_subset(panel, ctx, ids: list, subset: str, what: str) -> None:
    """Show exactly the samples ``ids``, in their order, and say which subset they are (``what``
    ends the sentence)."""
    panel.show(ctx, ctx.dataset.select(ids, ordered=True),
               f"Showing the {len(ids)} sample{'' if len(ids) == 1 else 's'} of **{subset}** {what}")


class SampleSplit:
    """The "Split by" dropdown, its chart and table, and the click on a bar. ``SPLIT_KEY`` and
    ``SPLIT_VALUE`` name a key and what its bars average; ``SPLIT_HORIZONTAL`` lays the keys on the
    y axis."""

    SPLIT_KEY, SPLIT_VALUE, SPLIT_HORIZONTAL = "key", "mean", False

    def split_scores(self, ctx) -> dict | None:
        """``{key: {sample id: value}}`` of the chosen run, keys in display order; None when the run
        stored no per-sample values."""
        raise NotImplementedError

    def init_split(self, ctx, skip=()) -> None:
        """The choices for the dataset (``skip``: sample fields not to offer); redraw the chosen one."""
        ctx.panel.state.split_choices = {NO_SPLIT: "(no split)", **sample_choices(ctx.dataset, skip=skip)}
        split = ctx.panel.state.split
        self.draw_split(ctx, split if split in ctx.panel.state.split_choices else NO_SPLIT)

    def _split(self, ctx, choice: str) -> dict | None:
        scores = self.split_scores(ctx)
        return None if scores is None else split_keyed(scores, sample_values(ctx.dataset, choice) or {})

    def draw_split(self, ctx, choice: str) -> None:
        s = ctx.panel.state
        s.split, s.split_missing = choice, False
        ctx.panel.data.subsets, s.subsets_layout, s.subsets_md = [], None, None
        if choice == NO_SPLIT:
            return
        split = self._split(ctx, choice)
        if split is None:
            s.split_missing = True
            return
        label = (s.split_choices or {}).get(choice, choice)
        ctx.panel.data.subsets = clean(split_traces(split, self.SPLIT_HORIZONTAL))
        h = self.SPLIT_HORIZONTAL
        key_axis = {"type": "category", "automargin": True, "title": {"text": self.SPLIT_KEY}}
        s.subsets_layout = clean(plot_layout(
            f"{self.SPLIT_VALUE} by {label}: mean over each subset's samples (click a bar: its samples)",
            self.SPLIT_VALUE if h else self.SPLIT_KEY, self.SPLIT_KEY if h else self.SPLIT_VALUE,
            height=min(640, max(300, 40 * len(split) + 120)) if h else 320, showlegend=True, legend=LEGEND,
            barmode="group", **({"yaxis": {**key_axis, "autorange": "reversed"}} if h else {"xaxis": key_axis})))
        s.subsets_md = split_md(split, self.SPLIT_KEY, self.SPLIT_VALUE)

    def on_change_split(self, ctx):
        self.draw_split(ctx, ctx.params.get("value") or NO_SPLIT)

    def on_click_subset(self, ctx):
        point, choice = clicked(ctx, "id"), ctx.panel.state.split
        if point is None or choice in (None, NO_SPLIT):
            return
        try:
            key, subset = json.loads(point)
        except (TypeError, ValueError):
            return
        cell = ((self._split(ctx, choice) or {}).get(key) or {}).get(subset)
        if cell is None:
            return
        show_subset(self, ctx, cell["ids"], subset,
                    f"where **{key}** has a {self.SPLIT_VALUE} ({fmt(cell['mean'])} on average), lowest first")

    def render_split(self, panel, ctx) -> None:
        choices = ctx.panel.state.split_choices or {}
        if len(choices) < 2:
            return
        panel.enum("split", list(choices), default=ctx.panel.state.split or NO_SPLIT, label="Split by",
                   view=dropdown(list(choices), choices), on_change=self.on_change_split)
        if ctx.panel.state.split_missing:
            panel.md("This run predates per-sample values: recompute it to split.", name="split_missing")
        elif ctx.panel.state.subsets_layout:
            chart(panel, "subsets", ctx.panel.state.subsets_layout, on_click=self.on_click_subset)
            panel.md(ctx.panel.state.subsets_md or "", name="subsets_table")
