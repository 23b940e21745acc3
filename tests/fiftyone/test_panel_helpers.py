"""The panels' pure helpers: α bins and ranges, interpretation bands, rater order and map."""

import numpy as np
import pytest


def test_alpha_range_view_is_half_open_and_skips_undefined(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import RunLayout, alpha_range_view

    ds = fo_isolated.Dataset()
    values = [-0.5, 0.0, 0.25, 0.5, 0.5, 1.0, float("nan"), None]
    ds.add_samples([fo_isolated.Sample(filepath=f"/x/{k}.jpg", k=k, r_alpha=v) for k, v in enumerate(values)])
    lay = RunLayout("r", ("a", "b"))
    k_of = dict(zip(ds.values("id"), ds.values("k")))
    assert [k_of[i] for i in alpha_range_view(ds, lay, 0.0, 0.5).values("id")] == [1, 2]
    assert [k_of[i] for i in alpha_range_view(ds, lay, 0.5, 1.0, include_hi=True).values("id")] == [3, 4, 5]
    assert alpha_range_view(ds, lay, -1.0, 1.0, include_hi=True).count() == 6


def test_alpha_bins_cover_low_values_and_end_at_one():
    from fiftyone.plugins.orgs.kalos.agreement.panels.overview import alpha_bin_edges

    assert alpha_bin_edges(0.73) == pytest.approx([0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0])
    assert alpha_bin_edges(None)[0] == 0.0 and alpha_bin_edges(-0.31)[:2] == pytest.approx([-0.35, -0.3])
    assert alpha_bin_edges(-2.4)[:3] == pytest.approx([-3.0, -1.0, -0.95])


def test_the_panels_bands_are_the_engines_with_a_colour_each():
    from kalos_core.reliability import ALPHA_BANDS
    from fiftyone.plugins.orgs.kalos.agreement.panels.common import BANDS, band_color, bands_text

    assert [b[:3] for b in BANDS] == list(ALPHA_BANDS)
    assert band_color(0.85) == "rgba(44,160,44,0.8)" and band_color(0.4 - 1e-16, 0.1) == "rgba(230,190,30,0.1)"
    assert band_color(-1e-9) == "rgba(214,39,40,0.8)"
    assert bands_text() == ("< 0 systematic disagreement · 0–0.4 weak · 0.4–0.6 moderate · 0.6–0.8 substantial · "
                            "≥ 0.8 near-perfect")


def test_cluster_order_puts_schools_of_thought_together():
    from fiftyone.plugins.orgs.kalos.agreement.panels.ordering import cluster_order

    # raters a, c agree (0.9); b, d agree (0.85); across the schools α ~ 0.1
    names = ["a", "b", "c", "d"]
    m = np.array([[1.0, 0.1, 0.9, 0.15],
                  [0.1, 1.0, 0.12, 0.85],
                  [0.9, 0.12, 1.0, 0.1],
                  [0.15, 0.85, 0.1, 1.0]])
    order = [names[i] for i in cluster_order(m)]
    assert {frozenset(order[:2]), frozenset(order[2:])} == {frozenset("ac"), frozenset("bd")}
    assert cluster_order(m) == cluster_order(m.copy())  # deterministic
    assert cluster_order(np.array([[1.0]])) == [0]


def test_cluster_order_tolerates_unknown_pairs():
    from fiftyone.plugins.orgs.kalos.agreement.panels.ordering import alpha_matrix, cluster_order

    nested = {"a": {"b": 0.9}, "b": {"a": 0.9, "c": None}, "c": {"d": 0.8}, "d": {}}
    m = alpha_matrix(nested, ["a", "b", "c", "d"])
    assert m[3, 2] == 0.8 and np.isnan(m[0, 2])
    order = cluster_order(m)
    assert sorted(order) == [0, 1, 2, 3] and abs(order.index(0) - order.index(1)) == 1


def test_classical_mds_recovers_points_on_a_line():
    from fiftyone.plugins.orgs.kalos.agreement.panels.ordering import classical_mds

    x = np.array([0.0, 0.1, 0.5, 0.9])  # raters on a line: 1 - α = |x_i - x_j|
    d = np.abs(x[:, None] - x[None, :])
    coords = classical_mds(d, dims=2)
    got = np.linalg.norm(coords[:, None, :] - coords[None, :, :], axis=-1)
    assert got == pytest.approx(d, abs=1e-9)
    assert coords[:, 1] == pytest.approx(np.zeros(4), abs=1e-7)  # one dimension suffices
    assert coords[:, 0] == pytest.approx(x - x.mean()) or coords[:, 0] == pytest.approx(x.mean() - x)
    assert np.array_equal(coords, classical_mds(d.copy(), dims=2))
    pivot = np.argmax(np.abs(coords[:, 0]))
    assert coords[pivot, 0] > 0  # sign fixed: largest coordinate positive


def test_classical_mds_of_a_square():
    from fiftyone.plugins.orgs.kalos.agreement.panels.ordering import classical_mds

    pts = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    coords = classical_mds(d)
    got = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    assert got == pytest.approx(d, abs=1e-9)


def test_a_long_chart_title_is_broken_between_words_with_room_made_for_its_lines():
    from fiftyone.plugins.orgs.kalos.agreement.panels.common import TITLE_CHARS, plot_layout

    short = plot_layout("α per class", "α", "class", height=300)
    assert short["title"]["text"] == "α per class" and (short["height"], short["margin"]["t"]) == (300, 40)
    title = "careful: confusion against the reference (click a cell: its labels); the 20 classes with the most labels"
    layout = plot_layout(title, "x", "y", height=300, margin={"t": 50, "l": 120})
    lines = layout["title"]["text"].split("<br>")
    assert " ".join(lines) == title and all(len(line) <= TITLE_CHARS for line in lines) and len(lines) == 2
    assert layout["height"] == 320 and layout["margin"] == {"t": 70, "l": 120}   # the caller's margins kept
