"""The overview compares two runs (two histograms on the same bins, both means, the
difference; on the samples both scored when one run covers a subset, e.g. a second round on
the review queue), and every panel names a run's threshold t and a calibration's τ* alike."""

import math

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset, rater_fields, store_calibration


@pytest.fixture(scope="module")
def two_runs(fo_isolated, demo):  # noqa: F811
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")   # run "kalos" at t = 0.5
    compute_agreement_run(ds, rater_fields=rater_fields(ds), run_key="strict", threshold=0.9, bootstrap=0)
    return ds


def _defined(ds, field):
    return [a for a in ds.values(field) if a is not None and not math.isnan(a)]


def test_overview_overlays_a_second_run_on_the_same_bins(two_runs):
    ds = two_runs
    a, b = ds.load_run_results("kalos"), ds.load_run_results("strict")
    p = Panel(ds, "kalos_agreement_overview").call("on_load")
    p.call("on_change_run", value="kalos")
    assert len(p.data["histogram"]) == 1 and p.state["compare_choices"] == ["strict"]
    assert "compare_key" in p.rendered()

    p.state["compare_key"] = "strict"   # the App writes the dropdown's value into the state first
    p.call("on_change_compare", value="strict")
    first, second = p.data["histogram"]
    assert (first["name"], second["name"]) == ("kalos", "strict")
    assert first["x"] == second["x"] and len(p.state["edges"]) == len(first["x"]) + 1  # same bins
    assert sum(first["y"]) == len(_defined(ds, "kalos_alpha"))
    assert sum(second["y"]) == len(_defined(ds, "strict_alpha"))
    assert first["y"] != second["y"]  # t = 0.9 moves samples to lower α
    edges = p.state["edges"]
    low = min(_defined(ds, "kalos_alpha") + _defined(ds, "strict_alpha"))
    assert edges[0] <= low and edges[-1] > 1.0
    layout = p.state["histogram_layout"]
    assert layout["barmode"] == "overlay" and layout["showlegend"] is True
    lines = sorted(s["x0"] for s in layout["shapes"] if s["type"] == "line")
    assert lines == pytest.approx(sorted([a.mean_alpha, b.mean_alpha]))  # both means, no global line
    d = b.mean_alpha - a.mean_alpha
    # one convention, said once: newer − older (strict ran after kalos), in words too
    summary = p.state["summary"]
    assert d < 0 and f"{a.mean_alpha:.3f} → {b.mean_alpha:.3f} (Δ {d:.3f}, worse)" in summary
    assert "**kalos → strict**" in summary and summary.count("Δ = ") == 1 and "Δ = strict − kalos" in summary
    assert f"{b.mean_alpha:.3f}" in p.state["summary"]
    assert p.state["shared_only"] is False and "both runs scored" not in p.state["summary"]  # same samples

    # a click on the second run's bar shows that run's samples of the bin
    k = next(i for i, c in enumerate(second["y"]) if c)
    view = p.call("on_click_bin", idx=k, trace="strict", trace_idx=1).view()
    alphas = dict(zip(ds.values("id"), ds.values("strict_alpha")))
    expected = {i for i, v in alphas.items() if v is not None and edges[k] <= v < edges[k + 1]}
    assert set(view.values("id")) == expected and len(expected) == second["y"][k]
    assert "of strict" in p.state["selection"]

    p.call("on_change_compare", value="none")
    assert len(p.data["histogram"]) == 1 and p.state["compare_key"] == "none"
    assert "Δ" not in p.state["summary"]


@pytest.fixture(scope="module")
def round2(fo_isolated, demo):  # noqa: F811
    """Run "round2" on 5 of the 16 samples, then hand-set α: the first five samples' round-1 α
    0.22, 0.52, 0.92, -0.28, NaN against round 2's 0.62, 0.52, 0.72, 0.42, 0.8; the 11 others 0.22 in
    round 1 (no α on a bin edge: FiftyOne's edges are floats)"""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    ids = ds.values("id")
    compute_agreement_run(ds.select(ids[:5]), rater_fields=rater_fields(ds), run_key="round2", bootstrap=0)
    ds.set_values("kalos_alpha", [0.22, 0.52, 0.92, -0.28, math.nan] + [0.22] * (len(ids) - 5))
    ds.set_values("round2_alpha", [0.62, 0.52, 0.72, 0.42, 0.8] + [None] * (len(ids) - 5))
    return ds


def test_round2_on_a_subset_is_compared_on_the_samples_both_scored(round2):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr

    ds, ids = round2, round2.values("id")
    p = Panel(ds, "kalos_agreement_overview").call("on_load")
    p.call("on_change_run", value="round2")
    p.state["compare_key"] = "kalos"
    p.call("on_change_compare", value="kalos")
    assert p.state["shared_only"] is True
    first, second = p.data["histogram"]
    edges = p.state["edges"]
    assert edges[0] == pytest.approx(-0.3)   # the lowest paired α (NaN and unpaired samples left out)

    def at(trace):   # the α of each counted bin's lower edge
        return sorted(round(edges[k], 2) for k, c in enumerate(trace["y"]) for _ in range(c))

    assert (first["name"], at(first)) == ("round2", [0.4, 0.5, 0.6, 0.7])
    assert (second["name"], at(second)) == ("kalos", [-0.3, 0.2, 0.5, 0.9])
    means = sorted(s["x0"] for s in p.state["histogram_layout"]["shapes"] if s["type"] == "line")
    assert means == pytest.approx([0.345, 0.57])   # (0.62+0.52+0.72+0.42)/4, (0.22+0.52+0.92-0.28)/4
    summary = p.state["summary"]
    assert ("**On the 4 samples both runs scored** (kalos: 16 samples, round2: 5): mean α 0.345 → "
            "0.570 (Δ +0.225, better) · **2 better**, **1 worse**, 1 unchanged") in summary
    # shown from round2 (the newer), compared with kalos: still older → newer, one Δ convention
    assert "**kalos → round2** (each run over its own samples): mean α" in summary
    assert summary.count("Δ = ") == 1 and "Δ = round2 − kalos (newer minus older)" in summary
    assert "on 4 shared samples" in p.state["histogram_layout"]["title"]["text"].replace("<br>", " ")

    # kalos's bin [0.2, 0.25) holds 12 samples of the dataset, 1 of the shared ones: the click shows that one
    k = edges.index(next(e for e in edges if e == pytest.approx(0.2)))
    view = p.call("on_click_bin", idx=k, trace="kalos", trace_idx=1).view()
    assert view.values("id") == [ids[0]] and "both runs scored" in p.state["selection"]

    out = lsr.compare_rounds(ds, "kalos", "round2")   # the same comparison from Python
    assert (out["samples"], out["improved"], out["worsened"]) == (4, 2, 1)
    assert out["mean_first"] == pytest.approx(0.345) and out["mean_second"] == pytest.approx(0.57)


def test_a_run_compared_with_itself_is_shown_alone(two_runs):
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    p.call("on_change_run", value="kalos")
    p.state["compare_key"] = "kalos"
    p.call("refresh")
    assert len(p.data["histogram"]) == 1 and p.state["compare_key"] == "none"


def test_a_runs_threshold_is_t_and_only_a_calibration_says_tau(two_runs):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = two_runs
    sens = Panel(ds, "kalos_localisation_sensitivity")
    over = Panel(ds, "kalos_agreement_overview")
    compute_agreement_run(ds, rater_fields=rater_fields(ds), run_key="plain", threshold=0.5,
                          lsa_thresholds=(0.3, 0.7), bootstrap=0)
    for p in (sens, over):
        p.call("on_load").call("on_change_run", value="plain")
        assert "similarity threshold t = 0.5" in p.state["summary"] and "τ" not in p.state["summary"]
    curve, star = sens.data["sensitivity"]
    assert star["name"].startswith("t ") and "τ" not in sens.state["plot_layout"]["annotations"][0]["text"]

    store_calibration(ds, rater_fields=rater_fields(ds))    # iou: τ* 0.42, similarity 0.58
    compute_agreement_run(ds, rater_fields=rater_fields(ds), run_key="calibrated", threshold=0.58,
                          distance="iou", lsa_thresholds=(0.3, 0.7), bootstrap=0, calibration_key="calibration")
    for p in (sens, over):
        p.call("on_change_run", value="calibrated")
        assert "τ\\* = 0.420 (distance, calibration *calibration*) ⇒ similarity threshold t = 0.58" \
            in p.state["summary"], p.state["summary"]
    ds.delete_run("calibration")   # the calibration is gone: back to t alone
    sens.call("refresh")
    assert "similarity threshold t = 0.58" in sens.state["summary"] and "τ" not in sens.state["summary"]


def test_one_tall_bar_is_cut_and_the_mean_and_global_labels_sit_apart():
    from fiftyone.plugins.orgs.kalos.agreement.panels.overview import histogram_layout

    edges = [0.0, 0.25, 0.5, 0.75, 1.0]
    # α = 1 on 97 of 120 samples: the axis ends at 1.5x the next bar (10), the cut bar says 97
    layout = histogram_layout("t", edges, [("mean α", 0.512, "#17becf")], 0.515, [[3, 10, 10, 97]])
    assert layout["yaxis"]["range"] == [0, 15.0]
    notes = {n["text"]: n for n in layout["annotations"]}
    assert notes["<b>97</b> ↑ (cut)"]["x"] == 0.875
    # two lines 0.003 apart: their labels name their values and lie on either side of their lines
    assert notes["mean α 0.512"]["xanchor"] == "right" and notes["global α 0.515"]["xanchor"] == "left"
    # no bar stands out: nothing is cut
    assert "range" not in histogram_layout("t", edges, [("mean α", 0.5, "#17becf")], None, [[3, 10, 10, 20]])["yaxis"]
