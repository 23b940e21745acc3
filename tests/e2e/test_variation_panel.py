"""End-to-end: the Variation types panel in the App, clicked through on the demo data set (run
"variations", types stored on every rater label at the run's threshold).

Every click is checked against counts computed here in Python from the stored per-label fields
(``variations_variation``, ``variations_iou``): the grid's sample count must equal the number of
samples holding the selected labels, and the panel's selection line must state the number of
labels the view keeps; each expected label count is first checked to be below the data set's
total, so a click that does nothing fails.
"""

from __future__ import annotations

import re

import pytest
from e2e_pages import (DATASET, chart_points, click_mark, count_kept, grid_count, open_app, open_panel,
                       selection_numbers, wait_for_chart, wait_for_count, wait_for_text)

pytestmark = pytest.mark.e2e

RUN = "variations"
PANEL = "kalos_variation_types"
TYPE, IOU = f"{RUN}_variation", f"{RUN}_iou"


def _dataset():
    import fiftyone as fo

    return fo.load_dataset(DATASET)


def labels(ds, keep, fields=None) -> tuple[int, int, int]:
    """(labels kept, samples holding one, all labels) over the run's rater fields (or ``fields``)."""
    cfg = ds.get_run_info(RUN).config
    return count_kept(ds, [f"{field}.{cfg.list_name}" for field in fields or cfg.rater_fields], keep)


def _get(label, name):
    """A label's attribute, None where the run wrote none (e.g. no IoU on unmatched labels)."""
    return label[name] if label.has_field(name) else None


def _open(page, app):
    open_app(page, app)
    content = open_panel(page, PANEL)
    wait_for_chart(content)
    page.wait_for_timeout(500)


def _threshold(ds) -> str:
    return f"{ds.get_run_info(RUN).config.threshold:g}"


def _type(legend_name: str) -> str:
    """The stored variation type of a legend name ("wrong class" -> "wrong_class")."""
    from fiftyone.plugins.orgs.kalos.agreement.panels.variations import TYPE_NAMES

    return next((t for t, name in TYPE_NAMES.items() if name == legend_name), legend_name)


def _biggest(points, x, exclude=("agreed",)) -> dict:
    """The tallest segment at category ``x`` whose type is not in ``exclude``."""
    segs = [p for p in points if p["xv"] == x and p["name"] not in exclude and float(p["yv"]) > 0]
    assert segs, (x, points)
    return max(segs, key=lambda p: float(p["yv"]))


def test_threshold_segment_shows_that_type_and_other_thresholds_change_nothing(page, demo_app):
    ds = _dataset()
    t = _threshold(ds)
    _open(page, demo_app)
    seg = _biggest(chart_points(page, 0), t)
    vtype = _type(seg["name"])
    want, want_samples, total = labels(ds, lambda lab: _get(lab, TYPE) == vtype)
    assert 0 < want < total, (vtype, want, total)
    assert want == int(float(seg["yv"]))  # the bar is the stored count
    click_mark(page, seg)
    wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} (samples with {vtype})")
    name = vtype.replace("_", " ")
    n, n_samples = selection_numbers(
        page, rf"Showing only the (\d+) {re.escape(name)} labels at IoU {re.escape(t)}, on (\d+) samples")
    assert (n, n_samples) == (want, want_samples)

    # another threshold: types exist only at the run's; the click says so and keeps the view
    other = next(p for p in chart_points(page, 0) if p["xv"] != t and p["name"] == seg["name"])
    click_mark(page, other)
    wait_for_text(page.locator("body"), f"Labels carry their type only at the run's IoU {t}")
    page.wait_for_timeout(1000)
    assert grid_count(page) == want_samples


def test_rater_segment_shows_that_raters_labels_of_the_type(page, demo_app):
    ds = _dataset()
    t = _threshold(ds)
    raters = ds.get_run_info(RUN).config.raters
    _open(page, demo_app)
    points = chart_points(page, 1)
    rater = sorted({p["xv"] for p in points})[-1]
    seg = _biggest(points, rater)
    vtype, field = _type(seg["name"]), next(f for f, r in raters.items() if str(r) == rater)
    want, want_samples, _ = labels(ds, lambda lab: _get(lab, TYPE) == vtype, fields=[field])
    total = labels(ds, lambda lab: True)[0]
    assert 0 < want < total and want < labels(ds, lambda lab: _get(lab, TYPE) == vtype)[0], (rater, vtype, want)
    click_mark(page, seg)
    wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} ({rater}'s {vtype})")
    n, n_samples = selection_numbers(
        page, rf"Showing only the (\d+) {re.escape(vtype.replace('_', ' '))} labels of {re.escape(rater)} at IoU "
              rf"{re.escape(t)}, on (\d+) samples")
    assert (n, n_samples) == (want, want_samples)


def test_iou_bin_shows_the_agreed_labels_in_it(page, demo_app):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.variations import load_variations

    ds = _dataset()
    edges = load_variations(ds, RUN)["boundary_iou"]["bins"]
    _open(page, demo_app)
    bars = [p for p in chart_points(page, 2) if p["name"] == "agreed pairs" and float(p["yv"]) > 0]
    assert len(bars) >= 2, bars
    bar = max(bars, key=lambda p: float(p["yv"]))
    k = next(i for i in range(len(edges) - 1) if f"{edges[i]:.2f}" == bar["xv"])
    low, high = edges[k], edges[k + 1]

    def keep(lab):
        iou = _get(lab, IOU)
        return _get(lab, TYPE) == "agreed" and iou is not None and low <= iou and (iou <= high if high >= 1 else iou < high)

    want, want_samples, _ = labels(ds, keep)
    agreed = labels(ds, lambda lab: _get(lab, TYPE) == "agreed")[0]
    assert 0 < want < agreed, (low, high, want, agreed)
    click_mark(page, bar)
    wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} (IoU bin {low:.2f})")
    n, n_samples = selection_numbers(
        page, rf"Showing only the (\d+) agreed labels with IoU in \[{low:.2f}, {high:.2f}[\])], on (\d+) samples")
    assert (n, n_samples) == (want, want_samples)
