"""compute_attribute_agreement on a real database: three rater fields whose Detections carry
attributes; the stored α is the engine's (and the hand-computed one) on the agreement run's units;
bad input is refused by name with nothing written; the panel's bars and its click."""

import json
import uuid

import pytest

from kalos_core.attributes import compute_attributes
from tests.fiftyone.helpers import form_errors, resolved_form, run_operator

FIELDS = ["raters_r1", "raters_r2", "raters_r3"]
PANEL = "@kalos/agreement/kalos_attributes"


def three_raters(fo):
    """Sample 1: a car and a person drawn by all three raters; sample 2: a car by r1 and r2, another
    car by r3 alone. occluded: [F, F, T] [T, T, T] [F, F]; colour: [red] * 3, [blue, blue, -], [grey, red]."""
    ds = fo.Dataset(f"kalos-attr-{uuid.uuid4().hex[:8]}")
    d = lambda label, box, **attrs: fo.Detection(label=label, bounding_box=box, **attrs)  # noqa: E731
    s1 = fo.Sample(filepath="/nonexistent/1.jpg", rater_list=["r1", "r2", "r3"],
                   metadata=fo.ImageMetadata(width=100, height=100))
    s2 = s1.copy()
    s2.filepath = "/nonexistent/2.jpg"
    car, person = [0.10, 0.10, 0.30, 0.30], [0.60, 0.50, 0.20, 0.40]
    for f, occluded, colour in zip(FIELDS, (False, False, True), ("blue", "blue", None)):
        person_attrs = {"colour": colour} if colour else {}
        s1[f] = fo.Detections(detections=[d("car", car, occluded=occluded, colour="red"),
                                          d("person", person, occluded=True, **person_attrs)])
    s2["raters_r1"] = fo.Detections(detections=[d("car", [0.2, 0.2, 0.4, 0.3], occluded=False, colour="grey")])
    s2["raters_r2"] = fo.Detections(detections=[d("car", [0.2, 0.21, 0.4, 0.3], occluded=False, colour="red")])
    s2["raters_r3"] = fo.Detections(detections=[d("car", [0.7, 0.7, 0.1, 0.1], occluded=False, colour="red")])
    ds.add_samples([s1, s2])
    run_operator("compute_agreement", ds, rater_fields=FIELDS, run_key="kalos", bootstrap=0)
    return ds


@pytest.fixture()
def ds(fo_isolated):
    return three_raters(fo_isolated)


def engine(ds):
    """The engine on the same labels: matched by itself (no units given)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import read_dataset, resolve_source

    data = read_dataset(ds, resolve_source(ds, FIELDS, None, "rater_id"))
    attributes = {}
    for f in FIELDS:
        for ids, occ, col in zip(*ds.values([f"{f}.detections.{a}" for a in ("id", "occluded", "colour")])):
            attributes.update({i: {"occluded": o, "colour": c} for i, o, c in zip(ids, occ, col)})
    return compute_attributes(data, attributes)


def snapshot(ds):
    return ds.list_runs(), sorted(ds.get_field_schema(flat=True)), json.dumps(ds.values(f"{FIELDS[0]}.detections"),
                                                                              default=str)


def test_the_stored_alpha_is_the_engines_and_the_hand_computed_one(ds):
    run_operator("compute_attribute_agreement", ds, run_key="attrs")
    res = ds.load_run_results("attrs")
    cfg = ds.get_run_info("attrs").config
    assert cfg.method == "kalos_attributes" and cfg.agreement_key == "kalos" and cfg.rater_fields == FIELDS
    want = engine(ds).per_attribute
    assert set(res.per_attribute) == {"colour", "occluded"}
    for name in res.per_attribute:
        got = res.per_attribute[name]
        assert got["alpha"] == pytest.approx(want[name]["alpha"]) and got["n_values"] == want[name]["n_values"]
        assert {c: e["alpha"] for c, e in got["per_class"].items()} == pytest.approx(
            {c: e["alpha"] for c, e in want[name]["per_class"].items()})
    assert res.per_attribute["occluded"]["alpha"] == pytest.approx(1 - 14 / 32)      # docs/attributes.md, by hand
    assert res.per_attribute["colour"]["alpha"] == pytest.approx(1 - 12 / 28)
    # the units are the agreement run's own: the disagreeing one holds the labels of the first car
    (unit,) = res.per_attribute["occluded"]["disagreeing_units"]
    assert set(ds.values(f"{FIELDS[0]}.detections.kalos_unit", unwind=True)) >= {unit}
    assert res.units_from == "given" and not ds.has_field("raters_r1.detections.attrs_unit")


def test_metrics_are_stored_and_a_numeric_metric_on_text_is_refused(ds):
    run_operator("compute_attribute_agreement", ds, run_key="a2", names=["occluded"], metrics=["occluded:interval"])
    res = ds.load_run_results("a2")
    assert list(res.per_attribute) == ["occluded"] and res.per_attribute["occluded"]["metric"] == "interval"
    assert res.per_attribute["occluded"]["alpha"] == pytest.approx(1 - 14 / 32)   # two values: interval is nominal
    before = snapshot(ds)
    with pytest.raises(Exception, match="'colour' \\(interval\\) needs numbers"):
        run_operator("compute_attribute_agreement", ds, run_key="a3", metrics=["colour:interval"])
    assert snapshot(ds) == before


def test_an_attribute_no_label_carries_is_refused_by_name_and_nothing_is_written(ds):
    before = snapshot(ds)
    with pytest.raises(Exception, match="no rater label carries the attribute 'size'"):
        run_operator("compute_attribute_agreement", ds, run_key="bad", names=["size", "colour"])
    assert snapshot(ds) == before
    errors = form_errors(resolved_form("compute_attribute_agreement", ds, run_key="bad", names=["size"]))
    assert "size" in errors["names"]
    props = resolved_form("compute_attribute_agreement", ds, run_key="ok", names=["occluded"])
    assert form_errors(props) == {} and "threshold" not in props      # the matching is the agreement run's


def test_a_missing_or_foreign_agreement_run_is_refused(ds, fo_isolated):
    run_operator("compute_attribute_agreement", ds, run_key="attrs")
    with pytest.raises(Exception, match="'attrs' is not a KaLOS agreement run"):
        run_operator("compute_attribute_agreement", ds, run_key="x", agreement_key="attrs")
    with pytest.raises(Exception, match="no run 'nosuch'"):
        run_operator("compute_attribute_agreement", ds, run_key="x", agreement_key="nosuch")
    empty = fo_isolated.Dataset(f"kalos-attr-{uuid.uuid4().hex[:8]}")
    with pytest.raises(Exception, match="no KaLOS agreement run on this dataset"):
        run_operator("compute_attribute_agreement", empty, run_key="x")
    assert "x" not in ds.list_runs() and empty.list_runs() == []


def _panel(ds, method, state, **params):
    import fiftyone.operators as foo

    res = foo.execute_operator(PANEL, dataset=ds.name, params={"panel_id": "t", "__method__": method,
                                                               "panel_state": state, **params})
    assert res.error is None, res.error
    return res.executor.to_json()["requests"]


def test_the_panel_draws_a_bar_per_attribute_and_a_click_shows_the_disagreeing_units(ds):
    import fiftyone.core.view as fov

    run_operator("compute_attribute_agreement", ds, run_key="attrs")
    requests = _panel(ds, "on_load", {})
    data = {k: v for r in requests if r["operator_uri"] == "patch_panel_data" for k, v in r["params"]["data"].items()}
    (bars,) = data["attributes"]
    assert bars["x"] == ["colour", "occluded"] and bars["y"] == pytest.approx([1 - 12 / 28, 1 - 14 / 32])
    assert data["classes"][0]["x"] == ["car", "person"]
    requests = _panel(ds, "on_click_attribute", {"run_key": "attrs"}, x="occluded")
    (shown,) = [r["params"] for r in requests if r["operator_uri"] == "set_view"]
    view = fov.DatasetView._build(ds, shown["view"])
    assert view.values("filepath") == ["/nonexistent/1.jpg"]
    assert view.count("raters_r1.detections") == 1 and view.distinct("raters_r3.detections.label") == ["car"]


def test_the_panels_recompute_opens_the_form_of_the_same_run(ds):
    run_operator("compute_attribute_agreement", ds, run_key="attrs", names=["occluded"])
    requests = _panel(ds, "open_operator", {"run_key": "attrs"})
    (prompt,) = [r["params"] for r in requests if r["operator_uri"] == "prompt_user_for_operation"]
    assert prompt["operator_uri"] == "@kalos/agreement/compute_attribute_agreement"
    assert {k: prompt["params"][k] for k in ("agreement_key", "run_key", "names")} == {
        "agreement_key": "kalos", "run_key": "attrs", "names": ["occluded"]}
