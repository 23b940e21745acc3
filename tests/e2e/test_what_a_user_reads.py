"""End-to-end: what a newcomer reads on the demo, checked against the stored runs.

After a calibration compute_agreement's form proposes the distance and the threshold the
calibration card and the panel show (one recommendation, one rounding); the Overview's *Compare
with* says Δ one way, once; a Calibration bar's drill-down shows as many pairs as its bar holds;
the README's make demo transcript is what the demo printed; a chart legend stays off the x-axis
title. KALOS_SHOTS_DIR=<folder> also saves each panel's screenshot there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_pages import (
    DATASET, PLOT, REPO, VIEWPORT, chart_points, click_mark, form_field, open_app, open_operator, open_panel,
    pick_after_label, pick_choices, save_png, settled_execute_button, wait_for_chart, wait_for_count, wait_for_text,
)

pytestmark = pytest.mark.e2e

BOXES = ["raters_detections_careful", "raters_detections_sloppy"]


def _dataset():
    import fiftyone as fo

    return fo.load_dataset(DATASET)


def _shot(page, name: str) -> None:
    folder = os.environ.get("KALOS_SHOTS_DIR")
    if folder:
        page.mouse.move(5, VIEWPORT["height"] - 5)
        page.wait_for_timeout(800)
        save_png(page.screenshot(), Path(folder) / f"{name}.png")


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_transcript_is_what_the_demo_printed(demo_app):
    from kalos_core.demo_transcript import MARKER, readme_block
    from kalos_core.measure_docs import block_of

    printed = demo_app.demo_stdout.replace(str(demo_app.demo_folder), "data/demo")
    assert readme_block(printed, f"{REPO}/") == block_of((REPO / "README.md").read_text(), MARKER), \
        "README's make demo transcript is stale: run make demo-transcript"


def test_after_a_calibration_the_form_proposes_what_the_calibration_shows(page, demo_app):
    cfg = _dataset().get_run_info("kalos_calibration").config
    shown = f"{round(cfg.thresholds[cfg.distance], 3):g}"
    assert cfg.distance == "iou"          # the demo's centroid KS ties with iou's within noise
    open_app(page, demo_app)
    content = open_panel(page, "kalos_calibration")
    wait_for_chart(content, timeout=120)
    text = _words(wait_for_text(content, "Recommended:"))
    assert f"Recommended: {cfg.distance} (t = {shown})" in text and "scale-dependent" not in text
    _shot(page, "calibration")
    open_app(page, demo_app)
    form = open_operator(page, "compute agreement", "KaLOS: compute agreement")
    pick_choices(form, "Rater fields", BOXES)
    settled_execute_button(form)
    threshold = form_field(form, "Similarity threshold").locator("input").first.input_value()
    distance = form_field(form, "Distance").locator("[role='combobox'], [aria-haspopup='listbox']").first.inner_text()
    assert threshold == shown and cfg.distance in distance, (threshold, distance)
    page.keyboard.press("Escape")


def test_compare_with_says_delta_one_way_once(page, demo_app):
    ds = _dataset()
    old, new = ds.load_run_results("kalos_model"), ds.load_run_results("kalos")   # kalos_model ran first
    d = new.mean_alpha - old.mean_alpha
    open_app(page, demo_app)
    content = open_panel(page, "kalos_agreement_overview")
    wait_for_chart(content, timeout=120)
    _shot(page, "overview")
    pick_after_label(page, "Compare with", "kalos_model")
    text = _words(wait_for_text(content, "Δ = "))
    assert "kalos_model → kalos" in text and text.count("Δ = ") == 1 and "Δ = kalos − kalos_model" in text
    word = "better" if d >= 0.0005 else "worse" if d <= -0.0005 else "unchanged"
    assert f"{old.mean_alpha:.3f} → {new.mean_alpha:.3f} (Δ {'+' if d >= 0 else ''}{d:.3f}, {word})" in text
    _shot(page, "overview_compare")


def test_a_calibration_bar_shows_every_pair_it_counts(page, demo_app):
    res = _dataset().load_run_results("kalos_calibration")
    name = res.recommended["distance"]
    counts, drill = res.distances[name]["histogram"]["de"], res.drill
    b = max(range(len(counts)), key=counts.__getitem__)     # the fullest De bar (2,760 pairs on the demo)
    pairs = drill["distances"][name]["de"][b]
    samples = len({drill["label_sample"][c] for c in pairs if c >= 0})
    assert len(pairs) // 2 == counts[b] > 100
    open_app(page, demo_app)
    content = open_panel(page, "kalos_calibration")
    wait_for_chart(content, timeout=120)
    bar = next(p for p in chart_points(page, 0) if p["name"].startswith("De ") and p["i"] == b)
    click_mark(page, bar)
    text = _words(wait_for_text(content, "Showing all"))
    assert f"Showing all {counts[b]:,} cross-sample pairs" in text and f"on {samples:,} samples" in text
    assert wait_for_count(page, lambda n: n == samples, what=f"== {samples}") == samples
    _shot(page, "calibration_drill")


_BOXES_JS = r"""
(gd) => {
  const box = (sel) => { const el = gd.querySelector(sel); if (!el) return null;
    const r = el.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  return {legend: box('.legend'), xtitle: box('.g-xtitle'), xticks: box('.xaxislayer-above'),
          plot: box('.nsewdrag')};
}
"""


def _apart(a, b) -> bool:
    return a["r"] <= b["l"] or b["r"] <= a["l"] or a["b"] <= b["t"] or b["b"] <= a["t"]


@pytest.mark.parametrize("panel", ["kalos_label_convergence", "kalos_calibration"])
def test_a_legend_stays_off_the_x_axis_and_the_plot_keeps_its_height(page, demo_app, panel):
    open_app(page, demo_app)
    content = open_panel(page, panel)
    wait_for_chart(content, timeout=120)
    page.wait_for_timeout(800)
    boxes = page.locator(PLOT).first.evaluate(_BOXES_JS)
    assert boxes["legend"] and boxes["xtitle"], boxes
    assert _apart(boxes["legend"], boxes["xtitle"]) and _apart(boxes["legend"], boxes["xticks"]), boxes
    assert boxes["plot"]["b"] - boxes["plot"]["t"] >= 150, boxes     # the plot area itself, not only its frame
    _shot(page, panel)


_PLOTS_JS = r"""
(root) => Array.from(root.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const r = gd.getBoundingClientRect();
  const texts = Array.from(gd.querySelectorAll('.textpoint text')).map((t) => {
    const b = t.getBoundingClientRect(); return {l: b.left, r: b.right, t: b.top, b: b.bottom}; });
  return {l: r.left, r: r.right, t: r.top, b: r.bottom, texts};
})
"""


def test_the_rater_map_follows_the_heatmap_and_shows_every_name(page, demo_app):
    open_app(page, demo_app)
    content = open_panel(page, "kalos_collaboration")
    wait_for_chart(content, timeout=120)
    page.wait_for_timeout(800)
    heat, mds = page.locator("body").evaluate(_PLOTS_JS)[:2]
    _shot(page, "collaboration")
    assert mds["t"] - heat["b"] < 60, (heat, mds)                  # no empty gap between the two charts
    assert mds["texts"] and all(mds["l"] <= t["l"] and t["r"] <= mds["r"] and mds["t"] <= t["t"]
                                for t in mds["texts"]), mds       # every rater's name inside its chart


def test_the_tiles_alpha_bubbles_read_on_one_colour_scale(page, demo_app):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.status_colors import ALPHA_BAND_COLORS
    from kalos_core.reliability import interpret

    open_app(page, demo_app)
    box = page.locator('[data-cy="checkbox-kalos_alpha"]').first
    box.scroll_into_view_if_needed()
    if not box.locator("input").first.is_checked():
        box.click()
    page.wait_for_timeout(3_000)   # the grid redraws its tiles
    bubbles = page.evaluate("""() => Array.from(document.querySelectorAll('[title^="kalos_alpha: "]')).map(
        (d) => [d.textContent, getComputedStyle(d).backgroundColor])""")
    _shot(page, "grid_alpha_bubbles")
    box.click()                    # as it was
    assert len(bubbles) >= 8, bubbles
    rgb = {name: "rgb(%d, %d, %d)" % tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))
           for name, h in ALPHA_BAND_COLORS.items()}
    wrong = [(v, c) for v, c in bubbles if c != rgb[interpret(float(v))]]
    assert not wrong, wrong        # each α as shown (0.512) in its band's colour, the Overview's
