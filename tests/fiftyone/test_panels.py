"""KaLOS panels: handlers run through ``fiftyone.operators.execute_operator`` on a real database
(the view a click sets holds exactly the samples it should), empty states, and the pure
helpers (view builders, rater ordering, classical MDS)."""

import math
import uuid

import pytest

from tests.fiftyone.helpers import (CALIBRATION, DISAGREEING, PLUGIN, Panel, agreement_dataset, rater_fields,
                                   store_calibration)
# -- fixtures and helpers ----------------------------------------------------------------------

def statuses_by_sample(ds, field, rater=None, list_name="detections"):
    """{sample id: [status, ...]} of a field's labels (optionally one rater's, attribute layout)."""
    ids = ds.values("id")
    st = ds.values(f"{field}.{list_name}.kalos_status")
    who = ds.values(f"{field}.{list_name}.rater_id") if rater is not None else None
    out = {}
    for k, sid in enumerate(ids):
        rows = st[k] or []
        out[sid] = [s for j, s in enumerate(rows) if who is None or str(who[k][j]) == rater]
    return out


def unit_keys(ds, field, rater=None):
    """{sample id: {(unit, label)}} of one rater's labels."""
    ids = ds.values("id")
    units, labels = ds.values(f"{field}.detections.kalos_unit"), ds.values(f"{field}.detections.label")
    who = ds.values(f"{field}.detections.rater_id") if rater is not None else None
    return {sid: {(u, lab) for j, (u, lab) in enumerate(zip(units[k] or [], labels[k] or []))
                  if who is None or str(who[k][j]) == rater} for k, sid in enumerate(ids)}


# -- registration and empty states -------------------------------------------------------------

#: the panels of agreement runs (every registered panel: tests/fiftyone/test_manifest.py)
NAMES = ["kalos_agreement_overview", "kalos_annotator_vitality", "kalos_collaboration", "kalos_calibration",
         "kalos_localisation_sensitivity", "kalos_class_difficulty"]


@pytest.mark.parametrize("name,uri", [(n, f"{PLUGIN}/compute_agreement") for n in NAMES if n != "kalos_calibration"]
                         + [("kalos_calibration", f"{PLUGIN}/calibrate")])
def test_without_a_run_each_panel_offers_the_operator_that_makes_one(fo_isolated, name, uri):
    ds = fo_isolated.Dataset(f"kalos-empty-{uuid.uuid4().hex[:6]}")
    p = Panel(ds, name).call("on_load")
    assert {"empty_state", "open_operator"} <= p.rendered()
    assert p.state["runs"] == []
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == uri
    assert prompt["on_success"].endswith(f"{name}#refresh")


# -- agreement overview ------------------------------------------------------------------------

def test_overview_shows_summary_and_histogram_of_every_defined_alpha(fields_ds):
    res = fields_ds.load_run_results("kalos")
    p = Panel(fields_ds, "kalos_agreement_overview").call("on_load")
    assert p.state["run_key"] == "kalos" and {"summary", "histogram", "header"} <= p.rendered()
    assert f"{res.mean_alpha:.3f}" in p.state["summary"] and f"{res.global_alpha:.3f}" in p.state["summary"]
    assert res.interpretation in p.state["summary"]
    (trace,) = p.data["histogram"]
    alphas = [a for a in fields_ds.values("kalos_alpha") if a is not None and not math.isnan(a)]
    assert sum(trace["y"]) == len(alphas) == sum(p.state["counts"])
    assert len(p.state["edges"]) == len(trace["x"]) + 1


def test_clicking_the_lowest_bin_shows_exactly_its_samples_sorted_by_alpha(fields_ds):
    p = Panel(fields_ds, "kalos_agreement_overview").call("on_load")
    edges, counts = p.state["edges"], p.state["counts"]
    k = next(i for i, c in enumerate(counts) if c)
    view = p.call("on_click_bin", idx=k, x=p.data["histogram"][0]["x"][k], id=str(k)).view()
    expected = {sid for sid, a in zip(fields_ds.values("id"), fields_ds.values("kalos_alpha"))
                if a is not None and edges[k] <= a < edges[k + 1]}
    assert set(view.values("id")) == expected and len(expected) == counts[k]
    got = view.values("kalos_alpha")
    assert got == sorted(got)
    assert "Showing" in p.state["selection"]


def test_every_bin_holds_exactly_its_count_and_bins_cover_all_defined_alphas(fields_ds):
    p = Panel(fields_ds, "kalos_agreement_overview").call("on_load")
    seen = []
    for k, c in enumerate(p.state["counts"]):
        if c:
            ids = p.call("on_click_bin", x=p.data["histogram"][0]["x"][k]).view().values("id")
            assert len(ids) == c
            seen += ids
    assert sorted(seen) == sorted(sid for sid, a in zip(fields_ds.values("id"), fields_ds.values("kalos_alpha"))
                                  if a is not None and not math.isnan(a))


def test_run_selector_switches_run(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    compute_agreement_run(ds, rater_fields=rater_fields(ds), run_key="strict", threshold=0.9, bootstrap=0)
    p = Panel(ds, "kalos_agreement_overview").call("on_load")
    assert set(p.state["runs"]) == {"kalos", "strict"} and p.state["run_key"] == "strict"  # newest first shown
    p.call("on_change_run", value="kalos")
    assert p.state["run_key"] == "kalos"
    assert f"{ds.load_run_results('kalos').mean_alpha:.3f}" in p.state["summary"]


# -- annotator vitality ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_vitality_click_shows_samples_where_that_rater_has_non_agreed_labels(layout, fields_ds, attr_ds):
    ds = fields_ds if layout == "rater_fields" else attr_ds
    res = ds.load_run_results("kalos")
    p = Panel(ds, "kalos_annotator_vitality").call("on_load")
    (bars,) = p.data["vitality"]
    assert dict(zip(bars["x"], bars["y"])) == pytest.approx(res.vitality)
    assert bars["y"] == sorted(bars["y"], reverse=True)
    for rater in bars["x"]:
        view = p.call("on_click_rater", x=rater, idx=0).view()
        if layout == "rater_fields":
            field = next(f for f, r in ds.get_run_info("kalos").config.raters.items() if r == rater)
            st = statuses_by_sample(ds, field)
            shown = view.values(f"{field}.detections.kalos_status", unwind=True)
        else:
            st = statuses_by_sample(ds, "raters", rater=rater)
            shown = view.values("raters.detections.kalos_status", unwind=True)
            assert set(view.values("raters.detections.rater_id", unwind=True)) >= {rater} or not len(view)
        expected = {sid for sid, s in st.items() if DISAGREEING & set(s)}
        assert set(view.values("id")) == expected
        assert set(shown) <= DISAGREEING  # that rater's agreed labels are hidden
    assert {"vitality", "scope", "summary"} <= p.rendered()


def test_vitality_scope_switches_to_global(fields_ds):
    p = Panel(fields_ds, "kalos_annotator_vitality").call("on_load")
    p.call("on_change_scope", value="global")
    (bars,) = p.data["vitality"]
    assert dict(zip(bars["x"], bars["y"])) == pytest.approx(fields_ds.load_run_results("kalos").vitality_global)


# -- collaboration -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_heatmap_cell_click_shows_samples_where_the_pair_disagrees(layout, fields_ds, attr_ds):
    from fiftyone.plugins.orgs.kalos.agreement.panels.ordering import alpha_matrix, cluster_order

    ds = fields_ds if layout == "rater_fields" else attr_ds
    res = ds.load_run_results("kalos")
    p = Panel(ds, "kalos_collaboration").call("on_load")
    (hm,) = p.data["heatmap"]
    raters = sorted(res.collaboration)
    assert hm["x"] == [raters[i] for i in cluster_order(alpha_matrix(res.collaboration, raters))]
    assert len(p.data["mds"][0]["x"]) == len(raters)
    cfg_raters = ds.get_run_info("kalos").config.raters or {}
    field_of = {r: f for f, r in cfg_raters.items()}
    lists = dict(zip(ds.values("id"), ds.values("rater_list")))
    a, b = hm["x"][0], hm["x"][-1]
    view = p.call("on_click_cell", x=a, y=b, z=0.5).view()
    if layout == "rater_fields":
        ka, kb = unit_keys(ds, field_of[a]), unit_keys(ds, field_of[b])
    else:
        ka, kb = unit_keys(ds, "raters", a), unit_keys(ds, "raters", b)
    expected = {sid for sid in ka if {a, b} <= set(lists[sid]) and ka[sid] != kb[sid]}
    assert expected and set(view.values("id")) == expected
    if layout == "rater_attribute":
        assert set(view.values("raters.detections.rater_id", unwind=True)) <= {a, b}
    else:
        assert set(view.get_field_schema()) >= {field_of[a], field_of[b]}
        assert not {field_of[r] for r in raters if r not in (a, b)} & set(view.get_field_schema())
    # a diagonal cell and a rater on the map show that rater's non-agreed labels
    assert p.call("on_click_cell", x=a, y=a).view().count() == p.call("on_click_rater", id=a).view().count()


# -- localisation sensitivity, class difficulty ------------------------------------------------

def test_sensitivity_curve_has_lsa_points_and_tau_marker(fields_ds):
    res = fields_ds.load_run_results("kalos")
    p = Panel(fields_ds, "kalos_localisation_sensitivity").call("on_load")
    curve, star = p.data["sensitivity"]
    assert curve["x"] == [0.3, 0.5, 0.7, 0.9]
    assert dict(zip(curve["x"], curve["y"])) == pytest.approx({0.3: res.lsa["0.3"], 0.5: res.mean_alpha,
                                                               0.7: res.lsa["0.7"], 0.9: res.lsa["0.9"]})
    assert star["x"] == [0.5] and star["y"] == pytest.approx([res.mean_alpha])
    assert p.state["plot_layout"]["shapes"][0]["x0"] == 0.5
    assert f"{res.lsa_delta:.3f}" in p.state["summary"]
    # a threshold shows the samples whose units fall apart there (what the run stored for it)
    apart = res.lsa_falls_apart["0.9"]
    assert apart["samples"] and len(apart["samples"]) < len(fields_ds)
    view = p.call("on_click_threshold", x=0.9, idx=3, trace_idx=0, path="sensitivity").view()
    assert set(view.values("id")) == set(apart["samples"]) and "selection_bar" in p.rendered()


def test_sensitivity_without_lsa_offers_a_prefilled_recompute(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    compute_agreement_run(ds, rater_fields=rater_fields(ds), run_key="kalos", threshold=0.6, bootstrap=0,
                          solver="shm", cost="neg", distance="giou", diagnostics=("vitality",), seed=4, overwrite=True)
    p = Panel(ds, "kalos_localisation_sensitivity").call("on_load")
    assert p.state["has_lsa"] is False and "no_lsa" in p.rendered()
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == f"{PLUGIN}/compute_agreement"
    assert prompt["params"]["rater_fields"] == rater_fields(ds) and prompt["params"]["threshold"] == 0.6
    assert prompt["params"]["run_key"] == "kalos" and prompt["params"]["lsa_thresholds"]
    # the rest of the stored config, never the form's defaults
    assert {k: prompt["params"][k] for k in ("solver", "cost", "distance", "diagnostics", "seed")} == {
        "solver": "shm", "cost": "neg", "distance": "giou", "diagnostics": ["vitality"], "seed": 4}


@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_class_click_filters_labels_to_that_class(layout, fields_ds, attr_ds):
    ds = fields_ds if layout == "rater_fields" else attr_ds
    res = ds.load_run_results("kalos")
    p = Panel(ds, "kalos_class_difficulty").call("on_load")
    (bars,) = p.data["classes"]
    p.call("on_change_min_units", value=0)   # the demo's few classes, every one shown
    (bars,) = p.data["classes"]
    assert dict(zip(bars["y"], bars["x"])) == pytest.approx(res.class_difficulty)
    assert bars["x"] == sorted(bars["x"])  # hardest first
    label = bars["y"][0]
    view = p.call("on_click_class", y=label, x=bars["x"][0]).view()
    fields = ds.get_run_info("kalos").config.rater_fields or ["raters"]
    per_sample = [list(zip(ds.values(f"{f}.detections.label"), ds.values(f"{f}.detections.kalos_status")))
                  for f in fields]
    expected = {sid for k, sid in enumerate(ds.values("id"))
                if any(lab == label and st in DISAGREEING for col in per_sample
                       for lab, st in zip(col[k][0] or [], col[k][1] or []))}
    assert expected and set(view.values("id")) == expected
    assert {lab for f in fields for lab in view.values(f"{f}.detections.label", unwind=True)} == {label}


# -- calibration -------------------------------------------------------------------------------

def test_calibration_shows_do_de_tau_and_runs_agreement_at_tau(fields_ds):
    store_calibration(fields_ds, rater_fields=rater_fields(fields_ds))
    p = Panel(fields_ds, "kalos_calibration").call("on_load")
    assert p.state["runs"] == ["calibration"] and p.state["distance"] == "iou"  # the recommended one
    do, de = p.data["calibration"]
    assert len(do["x"]) == 20 and sum(do["y"]) == pytest.approx(1) and sum(de["y"]) == pytest.approx(1)
    layout = p.state["plot_layout"]
    assert layout["barmode"] == "overlay"
    line = next(s for s in layout["shapes"] if s["type"] == "line")
    band = next(s for s in layout["shapes"] if s["type"] == "rect")
    assert line["x0"] == 0.42 and (band["x0"], band["x1"]) == pytest.approx((0.38, 0.45))
    # the summary first: distance, τ* ⇒ t with their CIs, KS; σ and the rest folded in the details
    assert p.state["summary"].startswith("**iou**: τ\\* 0.420 (CI 0.380 – 0.450) ⇒ **t = 0.58** (CI 0.550 – 0.620)")
    assert "**KS** 0.810 (CI 0.760 – 0.860)" in p.state["summary"] and "σ" not in p.state["summary"]
    assert "**σ** 0.080" in p.state["details"] and "details" not in p.rendered()      # folded until asked
    assert "details" in p.call("on_toggle_details", value=True).rendered()
    p.call("on_click_bin", trace_idx=0, idx=3, path="calibration")   # a run stored without its bins' pairs
    assert "stored without the label pairs of its bins" in p.state["selection"] and not p.ops("set_view")
    (prompt,) = p.call("run_at_tau").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == f"{PLUGIN}/compute_agreement"
    assert prompt["params"]["threshold"] == pytest.approx(0.58) and prompt["params"]["distance"] == "iou"
    assert prompt["params"]["rater_fields"] == rater_fields(fields_ds)
    p.call("on_change_distance", value="giou")
    assert p.state["distance"] == "giou" and p.state["similarity"] == pytest.approx(0.45)
    (prompt,) = p.call("run_at_tau").ops("prompt_user_for_operation")
    assert prompt["params"]["threshold"] == pytest.approx(0.45) and prompt["params"]["distance"] == "giou"
    fields_ds.delete_run("calibration")


def test_calibration_warns_about_a_scale_dependent_recommendation_and_shows_the_alternative(fields_ds):
    alt = {"distance": "giou", "tau_star": 0.55, "similarity_threshold": 0.45, "standard_threshold": 0.45,
           "reason": "best scale-invariant", "ks": 0.77, "scale_dependent": False, "mean_alpha": 0.61,
           "global_alpha": 0.58, "alternative": None}
    rec = {**CALIBRATION["recommended"], "distance": "iou", "scale_dependent": True, "mean_alpha": 0.72,
           "reason": "iou separates best (KS 0.810). Caution: iou measures offsets relative to the image, not to "
                     "the object, so one threshold is lenient for small objects and strict for large ones",
           "global_alpha": 0.7, "alternative": alt}
    cfg = fields_ds.init_run(method="kalos_calibration", similarity_threshold=0.58, rater_fields=rater_fields(fields_ds))
    fields_ds.register_run("scaled", cfg, overwrite=True, cleanup=False)
    fields_ds.save_run_results("scaled", fields_ds.init_run_results("scaled", **{**CALIBRATION, "recommended": rec}),
                               overwrite=True)
    p = Panel(fields_ds, "kalos_calibration").call("on_load")
    summary, details = p.state["summary"], p.state["details"]
    assert ("Recommended: **iou** (t = 0.58), best KS separation (ties within noise go to a scale-invariant "
            "distance) · scale-invariant alternative: **giou** (t = 0.45)") in summary
    assert (summary + details).count("scale-dependent") == 1 and "Caution" not in details   # the caution once
    assert "Why iou: iou separates best (KS 0.810)" in details
    assert "mean α 0.720" in details and "mean α 0.610, global α 0.580" in details
    # a button for the recommended distance and one for the alternative, each at its own t
    assert [(t["distance"], t["t"], t["why"]) for t in p.state["targets"]] == [
        ("iou", 0.58, "recommended"), ("giou", 0.45, "scale-invariant")]
    for i, (name, t) in enumerate((("iou", 0.58), ("giou", 0.45))):
        (prompt,) = p.call(f"run_target_{i}").ops("prompt_user_for_operation")
        assert prompt["operator_uri"] == f"{PLUGIN}/compute_agreement"
        assert (prompt["params"]["distance"], prompt["params"]["threshold"]) == (name, pytest.approx(t))
        assert prompt["params"]["calibration_key"] == "scaled"
    fields_ds.delete_run("scaled")


BRAYLAN = {"distances": {"iou": {"alpha": 0.8031, "auc": 0.9817, "sigma": 0.99, "ks": 0.97, "n_do": 200,
                                  "n_de": 200},
                          "count": {"alpha": 0.8984, "auc": 0.8458, "sigma": 0.78, "ks": 0.53, "n_do": 200,
                                    "n_de": 200}},
           "n_items": 200, "n_raters": 2, "n_annotations": 3521}


def test_calibration_panel_shows_the_braylan_table(fields_ds):
    from fiftyone.plugins.orgs.kalos.agreement.panels.calibration import braylan_markdown

    store_calibration(fields_ds, rater_fields=rater_fields(fields_ds))
    p = Panel(fields_ds, "kalos_calibration").call("on_load")
    assert p.state["braylan"] is None and "braylan" not in p.call("on_toggle_details", value=True).rendered()
    fields_ds.save_run_results("calibration", fields_ds.init_run_results(
        "calibration", **CALIBRATION, braylan=BRAYLAN), overwrite=True)
    p.call("refresh")
    assert "braylan" in p.rendered()                              # in the details (opened above)
    table = p.state["braylan"]
    assert "| distance | α | AUC | σ | KS | n |" in table
    assert "| IoU | 0.803 | 0.982 | 0.990 | 0.970 | 200 |" in table
    assert "| Count diff | 0.898 | 0.846 | 0.780 | 0.530 | 200 |" in table
    assert "200 samples" in table and "3521 boxes" in table
    assert "Midrank convention" in table and "stored before conventions were recorded" in table   # no key: old run
    for convention, says in (("braylan", "Braylan convention: similarity floored at 0, strict AUC"),
                             ("midrank", "Midrank convention: AUC with ties counted half")):
        text = braylan_markdown({"braylan": {**BRAYLAN, "convention": convention}})
        assert says in text and "stored before" not in text
    skipped = braylan_markdown({"braylan": {"skipped": "boxes only"}})
    assert "not computed" in skipped and "boxes only" in skipped and "|" not in skipped
    fields_ds.delete_run("calibration")


def test_calibration_panel_reads_a_run_of_the_real_calibrate_operator(fo_isolated, demo):
    import fiftyone.operators as foo

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    res = foo.execute_operator(f"{PLUGIN}/calibrate", dataset=ds.name, params={
        "layout": "rater_fields", "rater_fields": rater_fields(ds), "run_key": "calib", "bootstrap": 20})
    assert res.error is None, res.error
    stored = ds.load_run_results("calib", load_view=False)
    p = Panel(ds, "kalos_calibration").call("on_load")
    name = stored.recommended["distance"]
    assert p.state["runs"] == ["calib"] and p.state["distance"] == name
    assert set(p.state["distances"]) == set(stored.distances)
    do, de = p.data["calibration"]
    assert len(do["x"]) == len(stored.distances[name]["histogram"]["edges"]) - 1
    line = next(s for s in p.state["plot_layout"]["shapes"] if s["type"] == "line")
    assert line["x0"] == pytest.approx(stored.distances[name]["tau_star"])
    (prompt,) = p.call("run_at_tau").ops("prompt_user_for_operation")
    # the threshold as the panel shows it (three decimals), which is the one the run then uses
    assert prompt["params"]["threshold"] == round(stored.distances[name]["similarity_threshold"], 3)
    assert prompt["params"]["distance"] == name and prompt["params"]["calibration_key"] == "calib"


def test_the_calibration_axis_spans_where_the_pairs_are():
    from fiftyone.plugins.orgs.kalos.agreement.panels.calibration import mass_range

    # every pair within 0 – 0.3 of an axis to 1 (the image-diagonal centroid): the axis shows 0 – 0.3
    edges = [i / 10 for i in range(11)]
    hist = {"edges": edges, "do": [50, 30, 0, 0, 0, 0, 0, 0, 0, 0], "de": [0, 10, 40, 0, 0, 0, 0, 0, 0, 0]}
    assert mass_range(hist, {"tau_star": 0.12, "tau_ci": [0.1, 0.15]}) == pytest.approx([-0.009, 0.309])
    # τ* beyond the mass widens it; a far tail of 1 in 1,000 pairs does not
    hist["de"] = [0, 10, 989, 0, 0, 0, 0, 0, 0, 1]
    assert mass_range(hist, {"tau_star": 0.45})[1] == pytest.approx(0.45 + 0.03 * 0.45)
