"""End-to-end: the Calibration and Localisation sensitivity charts answer a click, on the demo data
set. A Do bar shows the samples of the label pairs the calibration run stored for its bin; a
threshold on the sensitivity curve the samples whose units (matched at the run's t) fall apart
there. The grid's count must become the number computed here from the stored run results.
"""

from __future__ import annotations

import pytest
from e2e_pages import DATASET, chart_points, click_mark, open_app, open_panel, point, wait_for_chart, wait_for_count

pytestmark = pytest.mark.e2e


def _dataset():
    import fiftyone as fo

    return fo.load_dataset(DATASET)


def _open(page, app, panel: str) -> None:
    open_app(page, app)
    wait_for_chart(open_panel(page, panel), timeout=120)  # the App is slow on a busy machine
    page.wait_for_timeout(500)  # the markdown above the chart settles


def test_a_do_bar_shows_the_samples_of_its_label_pairs(page, demo_app):
    res = _dataset().load_run_results("kalos_calibration")
    distance, drill = res.recommended["distance"], res.drill
    samples = [len({drill["label_sample"][c] for c in pairs if c >= 0})
               for pairs in drill["distances"][distance]["do"]]

    _open(page, demo_app, "kalos_calibration")
    drawn = [p for p in chart_points(page, 0) if p["name"].startswith("Do ")]   # bars tall enough to click
    bar = max((p for p in drawn if 0 < samples[p["i"]] < demo_app.n_samples), key=lambda p: float(p["yv"]), default=None)
    assert bar is not None, ("no drawn Do bar filters the grid", samples, [p["i"] for p in drawn])
    b = bar["i"]
    click_mark(page, bar)
    got = wait_for_count(page, lambda n: n == samples[b], what=f"== {samples[b]} (samples of bin {b}'s pairs)")
    assert got == samples[b]


def test_a_sensitivity_threshold_shows_the_samples_whose_units_fall_apart(page, demo_app):
    res = _dataset().load_run_results("kalos")
    apart = {t: len(v["samples"]) for t, v in res.lsa_falls_apart.items()}
    t = next(t for t, n in sorted(apart.items(), reverse=True) if 0 < n < demo_app.n_samples)

    _open(page, demo_app, "kalos_localisation_sensitivity")
    click_mark(page, point(chart_points(page, 0), "mean α", xv=t))
    got = wait_for_count(page, lambda n: n == apart[t], what=f"== {apart[t]} (samples whose units fall apart at {t})")
    assert got == apart[t]
