"""Video agreement: each video's α frame by frame, the raters' identity agreement pair by pair, and each
rater's jitter. A click on a frame shows that video as a clip from that frame; a click on a pair of
raters shows a clip around each frame where that pair switches identity.

Reads a stored video run (``config.method == "kalos_video"``, :mod:`kalos_core.video`); the clicks' views
are :func:`..fiftyone_layer.measures.video.frame_view` and :func:`~..fiftyone_layer.measures.video.switch_view`.
"""

from __future__ import annotations

import os

from ..fiftyone_layer.measures.video import SWITCH_MARGIN, frame_view, switch_view, switches_of
from .collaboration import ALPHA_SCALE
from .common import LEGEND, NEUTRAL, RunPanel, band_color, chart, clean, clicked, dropdown, fmt, load_results, plot_layout

#: the identity scores the pair matrix offers
METRICS = ("HOTA", "IDF1", "AssA", "DetA")


def frame_trace(entry: dict) -> dict:
    """A video's frame α as a line over its frame numbers (the frame number as each point's id)."""
    frames, alphas = entry.get("frames") or [], entry.get("frame_alpha") or []
    return {"type": "scatter", "mode": "lines+markers", "name": "frame α", "x": frames, "y": alphas,
            "ids": [str(f) for f in frames], "line": {"color": NEUTRAL, "width": 1.5},
            "marker": {"size": 6, "color": [band_color(a) if a is not None else "#999" for a in alphas]},
            "hovertemplate": "frame %{x}: α %{y:.3f}<extra></extra>"}


def block_trace(entry: dict) -> dict | None:
    """The pooled α of each block of frames as a step line over the frames it spans (None without
    blocks): steadier than one frame's α, which jumps with a frame's few units."""
    blocks = [b for b in entry.get("blocks") or [] if b.get("alpha") is not None]
    if not blocks:
        return None
    size = max(b["last"] - b["first"] + 1 for b in blocks)
    x = [b["first"] for b in blocks] + [blocks[-1]["last"]]
    y = [b["alpha"] for b in blocks] + [blocks[-1]["alpha"]]
    spans = [[b["first"], b["last"], b["n_units"]] for b in blocks] + [[blocks[-1]["first"], blocks[-1]["last"],
                                                                        blocks[-1]["n_units"]]]
    return {"type": "scatter", "mode": "lines", "name": f"pooled α per {size} frames", "x": x, "y": y,
            "line": {"color": "#9467bd", "width": 2.5, "shape": "hv"}, "customdata": spans,
            "hovertemplate": "frames %{customdata[0]}-%{customdata[1]}: pooled α %{y:.3f} "
                             "(%{customdata[2]} units)<extra></extra>"}


def switch_lines(entry: dict) -> list:
    """A dotted vertical line at each frame where some pair of raters switches identity."""
    frames = sorted({f for p in (entry.get("pairs") or {}).values() for f in p.get("switch_frames") or []})
    return [{"type": "line", "x0": f, "x1": f, "xref": "x", "y0": 0, "y1": 1, "yref": "paper",
             "line": {"color": "#d62728", "width": 1, "dash": "dot"}} for f in frames]


def pair_matrix(pairs: dict, metric: str) -> tuple[list, list, list]:
    """``(raters, z, text)``: the symmetric rater x rater matrix of ``metric`` (``pairs`` keyed ``"A / B"``);
    each cell's text the score and the pair's identity switches."""
    raters = sorted({r for k in pairs for r in k.split(" / ")})
    z = [[None] * len(raters) for _ in raters]
    text = [[""] * len(raters) for _ in raters]
    for key, p in pairs.items():
        a, b = key.split(" / ")
        i, j = raters.index(a), raters.index(b)
        z[i][j] = z[j][i] = p.get(metric)
        text[i][j] = text[j][i] = f"{fmt(p.get(metric), 2)}<br>{p.get('id_switches', 0)} sw"
    return raters, z, text


def pair_of(a: str, b: str) -> str:
    """The stored name of the pair of raters ``a`` and ``b`` (the first in name order the reference)."""
    return " / ".join(sorted((a, b)))


class VideoAgreementPanel(RunPanel):
    HELP_URL = "docs/video.md"
    INTRO = ("Krippendorff's α frame by frame on video, and whether the raters agree on which boxes are the same "
             "object over time (HOTA, IDF1, identity switches). Click a frame or a pair of raters.")
    EMPTY = ("No KaLOS video agreement run on this dataset yet. Compute one from one frame-level Detections field "
             "per rater.")
    ACTION_LABEL = "Compute video agreement"

    NAME, LABEL, ICON = "kalos_video", "KaLOS: Video agreement", "movie"
    HELP = "α over time per video, the raters' identity agreement per pair, and each rater's jitter."

    def load_run(self, ctx, run_key):
        res = load_results(ctx.dataset, run_key)
        per = res.get("per_video") or {}
        present = ctx.dataset.select(list(per))   # videos deleted since the run are left out
        names = dict(zip(*present.values(["id", "filepath"])))
        ids = [s for s in per if s in names]
        videos = sorted(ids, key=lambda s: (per[s].get("mean_alpha") is None, per[s].get("mean_alpha") or 0, s))
        ctx.panel.state.videos = videos
        ctx.panel.state.video_names = {s: f"{os.path.basename(names[s])} · α {fmt(per[s].get('mean_alpha'))}"
                                       for s in videos}
        p = res.get("pooled") or {}
        ctx.panel.state.summary = (
            f"**Mean α over frames** {fmt(res.get('mean_alpha'))} · global α {fmt(res.get('global_alpha'))} · "
            f"{res.get('n_videos', 0)} videos, {res.get('n_frames', 0)} frames  \n"
            f"**All pairs** HOTA {fmt(p.get('HOTA'))} (DetA {fmt(p.get('DetA'))}, AssA {fmt(p.get('AssA'))}, "
            f"LocA {fmt(p.get('LocA'))}) · IDF1 {fmt(p.get('IDF1'))} · {p.get('id_switches', 0)} identity switches, "
            f"{p.get('fragmentations', 0)} fragmentations")
        ctx.panel.state.selection = None
        chosen = ctx.panel.state.video
        self.draw_video(ctx, chosen if chosen in videos else next(iter(videos), None), res)
        metric = ctx.panel.state.metric if ctx.panel.state.metric in METRICS else METRICS[0]
        self.draw_pairs(ctx, metric, res)
        raters = res.get("raters") or {}
        names = [r for r in raters if raters[r].get("jitter") is not None]
        ctx.panel.data.jitter = clean([{
            "type": "bar", "name": "jitter", "x": names, "y": [raters[r].get("jitter_ratio") for r in names],
            "customdata": [[raters[r]["jitter"], raters[r].get("gaps", 0)] for r in names],
            "marker": {"color": NEUTRAL},
            "hovertemplate": "%{x}: %{y:.2f} × the median rater (jitter %{customdata[0]:.3f}, "
                             "%{customdata[1]} gaps)<extra></extra>"}])
        ctx.panel.state.has_jitter = bool(names)
        ctx.panel.state.jitter_layout = clean(plot_layout(
            "Jitter per rater, relative to the median rater (1: as steady as most)", "rater", "× median",
            height=260, xaxis={"type": "category"}))

    def draw_video(self, ctx, sid: str | None, res: dict | None = None) -> None:
        """The frame α line of video ``sid``, its switch frames marked, and its worst tracks in words."""
        ctx.panel.state.video = sid
        res = res or load_results(ctx.dataset, ctx.panel.state.run_key)
        entry = (res.get("per_video") or {}).get(sid) or {}
        blocks = block_trace(entry)
        ctx.panel.data.frames = clean([frame_trace(entry)] + ([blocks] if blocks else []))
        ctx.panel.state.frames_layout = clean(plot_layout(
            "α per frame" + (" and pooled over blocks of frames" if blocks else "") + " (dotted: identity switches)",
            "frame", "α", height=310 if blocks else 280, shapes=switch_lines(entry),
            **({"showlegend": True, "legend": LEGEND} if blocks else {})))
        worst = entry.get("worst_tracks") or []
        ctx.panel.state.worst = ("**Shakiest tracks** (rater #track, jitter): " + ", ".join(
            f"{w['rater']} #{w['track']} ({fmt(w['jitter'])})" for w in worst[:5])) if worst else ""

    def draw_pairs(self, ctx, metric: str, res: dict | None = None) -> None:
        ctx.panel.state.metric = metric
        res = res or load_results(ctx.dataset, ctx.panel.state.run_key)
        raters, z, text = pair_matrix(res.get("pairs") or {}, metric)
        ctx.panel.state.has_pairs = len(raters) >= 2
        ctx.panel.data.pairs = clean([{
            "type": "heatmap", "name": metric, "x": raters, "y": raters, "z": z, "text": text,
            "texttemplate": "%{text}", "zmin": 0, "zmax": 1, "colorscale": ALPHA_SCALE,
            "colorbar": {"title": {"text": metric}}, "hoverongaps": False,
            "hovertemplate": f"%{{y}} × %{{x}}: {metric} %{{z:.3f}}<extra></extra>"}])
        ctx.panel.state.pairs_layout = clean(plot_layout(
            f"{metric} per rater pair, all videos (click: its switches)", "rater", "rater",
            height=max(280, 40 * len(raters) + 120), xaxis={"type": "category"}, yaxis={"type": "category"}))

    def on_change_video(self, ctx):
        self.draw_video(ctx, ctx.params.get("value"))
        self._count_traces(ctx)

    def on_change_metric(self, ctx):
        self.draw_pairs(ctx, ctx.params.get("value") or METRICS[0])
        self._count_traces(ctx)

    def on_click_frame(self, ctx):
        sid, frame = ctx.panel.state.video, clicked(ctx, "x")
        if sid is None or frame is None:
            return
        res = load_results(ctx.dataset, ctx.panel.state.run_key)
        entry = res["per_video"][sid]
        alpha = dict(zip(entry["frames"], entry["frame_alpha"])).get(int(frame))
        name = (ctx.panel.state.video_names or {}).get(sid, sid).split(" · ")[0]
        self.show(ctx, frame_view(ctx.dataset, sid, int(frame)),
                  f"Showing **{name}** from frame **{int(frame)}** (α {fmt(alpha)}): open the clip to play it "
                  "from there")

    def on_click_pair(self, ctx):
        a, b = ctx.params.get("x"), ctx.params.get("y")
        if a is None or b is None or a == b:
            return
        pair = pair_of(str(a), str(b))
        switches = switches_of(ctx.dataset, ctx.panel.state.run_key, pair)
        n = sum(len(f) for f in switches.values())
        if not switches:
            ctx.panel.state.selection = f"**{pair}** never switch identity"
            return
        self.show(ctx, switch_view(ctx.dataset, switches),
                  f"Showing the **{n}** identity switches of **{pair}** in **{len(switches)}** videos, each as a clip "
                  f"of ±{SWITCH_MARGIN} frames")

    def render_run(self, panel, ctx):
        self.render_summary(panel, ctx)
        panel.btn("open_operator", label="Recompute", icon="play_arrow", on_click=self.open_operator)
        videos = ctx.panel.state.videos or []
        if videos:
            panel.enum("video", videos, default=ctx.panel.state.video, label="Video (lowest α first)",
                       view=dropdown(videos, ctx.panel.state.video_names or {}), on_change=self.on_change_video)
            chart(panel, "frames", ctx.panel.state.frames_layout, on_click=self.on_click_frame)
            if ctx.panel.state.worst:
                panel.md(ctx.panel.state.worst, name="worst")
        if ctx.panel.state.has_pairs:
            panel.enum("metric", list(METRICS), default=ctx.panel.state.metric, label="Identity score",
                       view=dropdown(list(METRICS)), on_change=self.on_change_metric)
            chart(panel, "pairs", ctx.panel.state.pairs_layout, on_click=self.on_click_pair)
        if ctx.panel.state.has_jitter:
            chart(panel, "jitter", ctx.panel.state.jitter_layout)
