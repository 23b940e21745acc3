"""End-to-end: the Label convergence and Noise-aware AP panels in the App, clicked through on the
demo data set (runs "convergence" and "noise_aware", predictions field "model").

Every click is checked against counts computed here in Python from the stored per-label fields:
the grid's sample count must equal the number of samples holding the selected labels, and the
panel's selection line must state the number of labels the view keeps. In the busy demo scenes a
class or a threshold's unmatched labels occur on (nearly) every sample, so the sample count
alone could not tell a working click from one that does nothing; the label count can (each test
first checks that it is below the data set's total).
"""

from __future__ import annotations

import re

import pytest
from e2e_pages import (DATASET, chart_points, click_mark, count_kept, open_app, open_panel, point, selection_numbers,
                       wait_for_chart, wait_for_count, wait_for_text)

pytestmark = pytest.mark.e2e

CONV, NA = "convergence", "noise_aware"
THRESHOLDS = [f"{t / 100:.2f}" for t in range(50, 100, 5)]

def _dataset():
    import fiftyone as fo

    return fo.load_dataset(DATASET)


def rater_labels(ds, run_key: str, keep) -> tuple[int, int, int]:
    """(labels kept, samples holding one, all labels) over the run's rater fields."""
    cfg = ds.get_run_info(run_key).config
    return count_kept(ds, [f"{field}.{cfg.list_name}" for field in cfg.rater_fields], keep)


def predictions(ds, run_key: str, keep) -> tuple[int, int, int]:
    """(predictions kept, samples holding one, all predictions) of a noise-aware run."""
    return count_kept(ds, [f"{ds.get_run_info(run_key).config.predictions_field}.detections"], keep)


def _open(page, app, panel: str):
    open_app(page, app)
    content = open_panel(page, panel)
    wait_for_chart(content)
    page.wait_for_timeout(500)  # the markdown above the chart settles


def test_convergence_threshold_clicks_show_the_labels_unmatched_at_each(page, demo_app):
    """Three thresholds clicked in turn in one App session (each click replaces the selection):
    the selection line names the threshold and its label and sample counts, the grid its samples."""
    ds = _dataset()
    attr = f"{CONV}_matched"
    _open(page, demo_app, "kalos_label_convergence")
    for threshold in ("0.50", "0.75", "0.95"):
        t = THRESHOLDS.index(threshold)
        want_labels, want_samples, total = rater_labels(
            ds, CONV, lambda lab, t=t: lab[attr] is not None and not lab[attr][t])
        assert 0 < want_labels < total, (threshold, want_labels, total)  # the click has something to filter
        click_mark(page, point(chart_points(page, 0), "full set", xv=threshold))
        n_labels, n_samples = selection_numbers(
            page, rf"Showing (\d+) rater labels unmatched at IoU {re.escape(threshold)} on (\d+) samples")
        assert (n_labels, n_samples) == (want_labels, want_samples), threshold
        got = wait_for_count(page, lambda n, w=want_samples: n == w,
                             what=f"== {want_samples} (samples with labels unmatched at {threshold})")
        assert got == want_samples


def test_convergence_unmatched_labels_grow_with_the_threshold(demo_app):  # demo_app: builds the data set (or skips)
    """The data the threshold clicks rest on: stricter IoU, more unmatched labels (a known order)."""
    ds = _dataset()
    attr = f"{CONV}_matched"
    counts = [rater_labels(ds, CONV, lambda lab, t=t: lab[attr] is not None and not lab[attr][t])[0]
              for t in range(len(THRESHOLDS))]
    assert counts == sorted(counts) and counts[0] < counts[-1], counts


def test_convergence_class_click_shows_exactly_that_class(page, demo_app):
    ds = _dataset()
    _open(page, demo_app, "kalos_label_convergence")
    bars = [p for p in chart_points(page, 1) if p["name"] == "AP per class"]
    assert len(bars) >= 2, bars
    for bar in (bars[0], bars[-1]):  # the lowest- and the highest-AP class
        label = bar["yv"]
        want_labels, want_samples, total = rater_labels(ds, CONV, lambda lab, c=label: lab.label == c)
        assert 0 < want_labels < total, (label, want_labels, total)
        bar = point(chart_points(page, 1), "AP per class", yv=label)  # positions after any re-render
        click_mark(page, bar)
        wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} (samples with {label})")
        n_labels, n_samples = selection_numbers(
            page, rf"Showing only the (\d+) {re.escape(label)} labels, on the (\d+) samples")
        assert (n_labels, n_samples) == (want_labels, want_samples), label


def _uncertain(key, size=None):
    t = {"50": 0, "75": 5, "95": 9}.get(key)

    def keep(d):
        status = d[f"{NA}_status"]
        if status is None or (size and d[f"{NA}_size"] != size):
            return False
        return "uncertain" in status if t is None else status[t] == "uncertain"
    return keep


def test_noise_aware_bar_click_shows_the_uncertain_predictions(page, demo_app):
    ds = _dataset()
    _open(page, demo_app, "kalos_noise_aware")
    for key in ("75", "50:95"):
        want, want_samples, total = predictions(ds, NA, _uncertain(key))
        assert 0 < want < total, (key, want, total)
        click_mark(page, point(chart_points(page, 0), "AP", xv=key))
        wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} (samples, IoU {key})")
        n, n_samples = selection_numbers(
            page, rf"Showing (\d+) predictions whose bounds disagree at IoU {re.escape(key)}, on (\d+) samples")
        assert (n, n_samples) == (want, want_samples), key


def test_noise_aware_size_then_bar_shows_that_size_only(page, demo_app):
    ds = _dataset()
    counts = {s: predictions(ds, NA, _uncertain("75", s)) for s in ("small", "medium", "large")}
    size = max(counts, key=lambda s: counts[s][0])
    want, want_samples, _ = counts[size]
    assert 0 < want < predictions(ds, NA, _uncertain("75"))[0], counts  # the size narrows the selection

    _open(page, demo_app, "kalos_noise_aware")
    page.get_by_text(re.compile(rf"^{size}\b")).first.click()
    wait_for_text(page.locator("body"), f"AP with its lower and upper bounds ({size}")
    page.wait_for_timeout(500)
    click_mark(page, point(chart_points(page, 0), "AP", xv="75"))
    wait_for_count(page, lambda n: n == want_samples, what=f"== {want_samples} ({size} uncertain at 75)")
    n, n_samples = selection_numbers(
        page, rf"Showing (\d+) predictions whose bounds disagree at IoU 75, {size} boxes, on (\d+) samples")
    assert (n, n_samples) == (want, want_samples)
