"""Vitality and Collaboration panels with a model as a rater, and the Collaboration panel's
second-run comparison (DIC from the two stored matrices), driven through the real handlers."""

import json

import pytest

from kalos_core.dic import compare_runs
from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
from tests.fiftyone.helpers import MODEL_RATER_FIELDS as FIELDS, Panel, model_rater_dataset as boxes_dataset


@pytest.fixture(scope="module")
def model_ds(fo_isolated):
    ds = boxes_dataset(fo_isolated, seed=2)
    compute_agreement_run(ds, rater_fields=FIELDS, run_key="humans", bootstrap=0)
    compute_agreement_run(ds, rater_fields=FIELDS, model_fields=["model"], run_key="with_model", bootstrap=0)
    return ds


def test_vitality_marks_the_model_and_states_the_verdict(model_ds):
    p = Panel(model_ds, "kalos_annotator_vitality").call("on_load")
    (bars,) = p.data["vitality"]
    shapes = dict(zip(bars["x"], bars["marker"]["pattern"]["shape"]))
    assert shapes == {"a": "", "b": "", "c": "", "model": "/"}
    ticks = dict(zip(p.state["plot_layout"]["xaxis"]["tickvals"], p.state["plot_layout"]["xaxis"]["ticktext"]))
    assert ticks["model"] == "model (model)" and ticks["a"] == "a"
    verdict = model_ds.load_run_results("with_model").model_comparison["per_image"]["model"]["verdict"]
    assert verdict in p.state["summary"] and "the humans" in verdict
    # a click on the model's bar shows the samples where the model's labels do not agree
    view = p.call("on_click_rater", x="model").view()
    st = model_ds.values("model.detections.with_model_status")
    expected = {sid for sid, row in zip(model_ds.values("id"), st)
                if any(s in ("unmatched", "class_disagreement") for s in row or [])}
    assert expected and set(view.values("id")) == expected


def test_collaboration_marks_the_model_on_the_axes_and_the_map(model_ds):
    p = Panel(model_ds, "kalos_collaboration").call("on_load")
    assert not p.state.get("error"), p.state.get("error")
    ticks = dict(zip(p.state["heatmap_layout"]["xaxis"]["tickvals"], p.state["heatmap_layout"]["xaxis"]["ticktext"]))
    assert ticks["model"] == "◆ model (model)" and ticks["b"] == "b"
    (mds,) = p.data["mds"]
    symbols = dict(zip(mds["ids"], mds["marker"]["symbol"]))
    assert symbols["model"] == "diamond" and symbols["a"] == "circle"


def test_second_run_shows_dic_of_the_two_stored_matrices(model_ds):
    p = Panel(model_ds, "kalos_collaboration").call("on_load")
    assert p.state["compare_runs"] == ["(none)", "humans"]
    p.call("on_change_compare", value="humans")
    a, b = model_ds.load_run_results("with_model"), model_ds.load_run_results("humans")
    expected = compare_runs(a.collaboration, b.collaboration, a.collaboration_n, b.collaboration_n)
    dic = p.state["dic"]
    assert dic["value"] == pytest.approx(expected.dic) and dic["only_first"] == ["model"]
    assert dic["only_second"] == [] and dic["masked"] == []
    # same raters, same labels: the human structure is unchanged
    assert expected.dic == pytest.approx(0.0, abs=1e-12)
    assert f"**{expected.dic:.4f}**" in json.dumps(p.call("on_load").output["type"]["properties"]["dic_summary"],
                                                   ensure_ascii=False)
    (diff,) = p.data["dic_difference"]
    assert diff["x"] == expected.raters and diff["z"] == expected.difference
    links, first, second = p.data["dic_maps"]
    assert first["ids"] == second["ids"] == expected.raters
    assert len(links["x"]) == 3 * len(expected.raters)
    view = p.call("on_click_cell", x="a", y="c").view()
    assert view.count() > 0 and "**a** and **c** disagree" in p.state["selection"]
    assert set(view.get_field_schema()) >= {"raters_a", "raters_c"} and "raters_b" not in view.get_field_schema()
    assert {"dic_summary", "dic_difference", "dic_maps", "compare_key"} <= p.rendered()


def test_compare_masks_pairs_with_few_shared_images(model_ds):
    few = model_ds.limit(6)
    compute_agreement_run(few, rater_fields=FIELDS, run_key="few", bootstrap=0)
    p = Panel(model_ds, "kalos_collaboration").call("on_change_run", value="with_model")
    p.call("on_change_compare", value="few")
    assert sorted(p.state["dic"]["masked"]) == ["a × b", "a × c", "b × c"]
    assert p.state["dic"]["value"] is None
    (diff,) = p.data["dic_difference"]
    assert diff["text"][0][1] == "masked"
