"""Panels Label convergence and Noise-aware AP, driven through ``execute_operator`` like the App:
they draw the stored run, and a click sets exactly the view it says."""

import uuid

import pytest

from tests.fiftyone.helpers import Panel, demo_data, model_dataset


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_data(tmp_path_factory, n_images=16, seed=2)

PLUGIN = "@kalos/agreement"


@pytest.fixture(scope="module")
def runs_ds(fo_isolated, demo):  # noqa: F811
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import noise_aware_run

    ds, fields = model_dataset(fo_isolated, demo, copy_of=0)
    convergence_run(ds, rater_fields=fields, run_key="conv", bootstrap=40, predictions_field="model")
    noise_aware_run(ds, predictions_field="model", reference_field=fields[1], noise_fields=[fields[2]], run_key="na")
    return ds, fields


@pytest.mark.parametrize("name,uri", [("kalos_label_convergence", "label_convergence"),
                                      ("kalos_noise_aware", "noise_aware_evaluation")])
def test_without_a_run_the_panel_offers_its_operator(fo_isolated, name, uri):
    ds = fo_isolated.Dataset(f"kalos-empty-{uuid.uuid4().hex[:6]}")
    p = Panel(ds, name).call("on_load")
    assert {"empty_state", "open_operator"} <= p.rendered()
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == f"{PLUGIN}/{uri}"


def test_convergence_panel_draws_distribution_intervals_full_set_and_model(runs_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import load_convergence

    ds, _ = runs_ds
    res = load_convergence(ds, "conv")
    p = Panel(ds, "kalos_label_convergence").call("on_load")
    assert p.state["run_key"] == "conv"
    traces = p.data["distribution"]
    boxes = [t for t in traces if t["type"] == "box"]
    assert [b["name"] for b in boxes] == ["mAP", *[f"{t / 100:.2f}" for t in range(50, 100, 5)]]
    assert boxes[1]["y"] == res["bootstrap"]["per_threshold"]["0.50"]["values"]
    full = next(t for t in traces if t["name"] == "full set")
    assert full["y"][0] == pytest.approx(res["full_set"]["map"])
    normal = next(t for t in traces if t["name"].startswith("normal"))
    lo, hi = res["bootstrap"]["ci_normal"]
    assert normal["y"][0] == pytest.approx((lo + hi) / 2) and normal["error_y"]["array"][0] == pytest.approx((hi - lo) / 2)
    model = next(t for t in traces if t["name"].startswith("model"))
    assert model["y"][0] == pytest.approx(res["model"]["map"])
    # the model's mAP: a level line named in the legend, no label on the plot over the error bars
    level = next(t for t in traces if t["name"].startswith("model mAP"))
    assert level["name"] == f"model mAP {res['model']['map']:.1f}" and level["mode"] == "lines"
    assert level["y"] == pytest.approx([res["model"]["map"]] * 11) and level["x"] == boxes_x(boxes)
    assert not p.state["dist_layout"].get("annotations") and not p.state["dist_layout"].get("shapes")
    assert set(p.data["classes"][0]["y"]) == set(res["full_set"]["per_class"])
    assert {"summary", "distribution", "classes"} <= p.rendered()


def boxes_x(boxes):
    return [b["name"] for b in boxes]


def test_clicking_a_threshold_shows_exactly_the_samples_with_labels_unmatched_at_it(runs_ds):
    ds, fields = runs_ds
    p = Panel(ds, "kalos_label_convergence").call("on_load").call("on_click_threshold", x="0.75")
    view = p.view()
    want = set()
    for f in fields:
        for sid, flags in zip(ds.values("id"), ds.values(f"{f}.detections.conv_matched")):
            if any(fl is not None and not fl[5] for fl in flags or []):
                want.add(sid)
    assert want and set(view.values("id")) == want
    shown = [fl for f in fields for row in view.values(f"{f}.detections.conv_matched") for fl in row or []]
    assert shown and all(not fl[5] for fl in shown)
    assert p.state["selection"].startswith(f"Showing **{len(shown)} rater labels unmatched at IoU 0.75** on {len(want)} samples")


def test_clicking_a_class_shows_only_its_labels(runs_ds):
    ds, fields = runs_ds
    p = Panel(ds, "kalos_label_convergence").call("on_load")
    label = p.state["class_names"][0]
    view = p.call("on_click_class", y=label).view()
    labels = {lab for f in fields for row in view.values(f"{f}.detections.label") for lab in row or []}
    assert labels == {label}
    want = {sid for f in fields for sid, row in zip(ds.values("id"), ds.values(f"{f}.detections.label"))
            if label in (row or [])}
    assert set(view.values("id")) == want
    n = sum(row.count(label) for f in fields for row in ds.values(f"{f}.detections.label") if row)
    assert p.state["selection"].startswith(f"Showing only the **{n} {label} labels**, on the {len(want)} samples")


def test_noise_aware_panel_draws_bounds_and_the_eps_heatmap(runs_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import load_noise_aware

    ds, _ = runs_ds
    res = load_noise_aware(ds, "na")
    p = Panel(ds, "kalos_noise_aware").call("on_load")
    bars = p.data["bounds"]
    assert [b["name"] for b in bars] == ["lower bound (IoU − ε̄)", "AP", "upper bound (IoU + ε̄)"]   # no caret text
    assert bars[0]["x"] == ["50:95", "50", "75", "95"]
    assert [b["y"][0] for b in bars] == [res["ap"]["50:95"][k] for k in ("lower", "ap", "upper")]
    (heat,) = p.data["eps"]
    assert heat["type"] == "heatmap" and heat["z"] == res["eps_grid"]["eps"]
    p.call("on_change_size", value="small")
    assert p.state["size"] == "small"
    assert [b["y"][1] for b in p.data["bounds"]] == [res["by_size"]["small"]["50"][k] for k in ("lower", "ap", "upper")]


@pytest.mark.parametrize("x,index", [("75", 5), ("50:95", None)])
def test_clicking_a_bar_shows_exactly_the_uncertain_predictions(runs_ds, x, index):
    ds, _ = runs_ds
    p = Panel(ds, "kalos_noise_aware").call("on_load").call("on_click_bar", x=x)
    view = p.view()
    statuses = [s for row in ds.values("model.detections.na_status") for s in row or []]
    want = sum(1 for s in statuses if s is not None and ("uncertain" in s if index is None else s[index] == "uncertain"))
    assert want > 0 and view.count("model.detections") == want
    shown = [s for row in view.values("model.detections.na_status") for s in row or []]
    assert all(("uncertain" in s) if index is None else s[index] == "uncertain" for s in shown)
    assert p.state["selection"].startswith(f"Showing **{want} predictions whose bounds disagree at IoU {x}**, on {len(view)}")


def test_class_chart_keeps_the_lowest_classes_and_summary_reads_pairs_and_each_rater(runs_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import load_convergence
    from fiftyone.plugins.orgs.kalos.agreement.panels.convergence import CLASS_BARS, class_figure, summary_md

    per_class = {f"c{k:02d}": float(k) for k in range(CLASS_BARS + 5)} | {"none": None}
    bars, names = class_figure(per_class)
    assert names == [f"c{k:02d}" for k in range(CLASS_BARS)] and bars["x"][0] == 0.0
    ds, _ = runs_ds
    res = load_convergence(ds, "conv")
    text = summary_md(res)
    pair = res["pairs"][0]
    assert len(res["pairs"]) > 1 and f"{' × '.join(pair['raters'])} {pair['full_set']['map']:.2f}" in text
    for rater, summary in res["model"]["per_rater"].items():
        assert f"{rater} {summary['map']:.2f} ({res['model']['per_rater_placement'][rater]['ci_normal']})" in text


def test_clicking_the_pooled_map_column_changes_nothing_and_says_why(runs_ds):
    ds, _ = runs_ds
    p = Panel(ds, "kalos_label_convergence").call("on_load").call("on_click_threshold", x="mAP")
    assert not p.ops("set_view") and p.state["selection"].startswith("The mAP column is not clickable")
    assert "click a threshold's column" in p.state["selection"].lower()
    assert "selection" in p.rendered()


def test_recompute_reopens_each_form_with_the_stored_parameters_and_fields(runs_ds):
    """Recompute: every declared parameter of the stored run, the predictions (and reference / noise)
    fields; the convergence form, run from that prefill, stores the same result."""
    ds, fields = runs_ds
    (prompt,) = Panel(ds, "kalos_label_convergence").call("on_load").call("open_operator").ops(
        "prompt_user_for_operation")
    params = prompt["params"]
    assert prompt["operator_uri"] == f"{PLUGIN}/label_convergence"
    assert params["run_key"] == "conv" and params["rater_fields"] == fields and params["predictions_field"] == "model"
    assert {k: params[k] for k in ("task", "bootstrap", "fraction", "seed", "confidence")} == {
        "task": "bbox", "bootstrap": 40, "fraction": 0.1, "seed": 0, "confidence": 0.95}
    assert "raters" not in params and "alpha" not in params       # no such input; alpha by the default rule
    import fiftyone.operators as foo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import load_convergence

    before = load_convergence(ds, "conv")
    res = foo.execute_operator(f"{PLUGIN}/label_convergence", dataset=ds.name, params={**params, "overwrite": True})
    assert res.error is None
    after = load_convergence(ds, "conv")
    assert after["full_set"] == before["full_set"] and after["bootstrap"] == before["bootstrap"]
    assert after["model"]["per_rater"] == before["model"]["per_rater"]

    (prompt,) = Panel(ds, "kalos_noise_aware").call("on_load").call("open_operator").ops("prompt_user_for_operation")
    params = prompt["params"]
    assert (params["predictions_field"], params["reference_field"], params["noise_fields"]) == (
        "model", fields[1], [fields[2]])
    assert {k: params[k] for k in ("share", "iou_min", "fence_k", "grid_points", "quad_nodes")} == {
        "share": "split", "iou_min": 0.1, "fence_k": 1.5, "grid_points": 24, "quad_nodes": 8}
    cfg = ds.get_run_info("na").config
    assert cfg.noise_fields == [fields[2]] and cfg.rater_fields == [fields[1], fields[2]] and cfg.share == "split"
