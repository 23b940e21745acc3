"""Colour labels by status, by rater, or as the user had them (``set_label_colors``): the App colour
scheme KaLOS writes, what it keeps of the user's, and that no label changes."""

import pytest

from tests.fiftyone.helpers import PLUGIN, run_operator as execute, same_boxes_dataset as boxes_dataset

OPERATOR = f"{PLUGIN}/set_label_colors"
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")


def by_path(ds):
    return {e["path"]: e for e in ds.app_config.color_scheme.fields}


def set_colors(ds, mode):
    res = execute(OPERATOR, ds, color_by=mode)
    reqs = [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "set_color_scheme"]
    scheme = ds.app_config.color_scheme
    assert reqs and reqs[0]["params"]["fields"] == list(scheme and scheme.fields or [])   # the open App follows
    return res


def labels(ds, fields):
    return [ds.values(f"{f}.detections") for f in fields]


@pytest.fixture
def ds(fo_isolated):
    return boxes_dataset(fo_isolated, raters=("a", "b", "c", "d"))


def test_by_rater_each_rater_its_own_colour_then_status_as_before_then_the_users_own(fo_isolated, ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    fo = fo_isolated
    raters = ["raters_a", "raters_b", "raters_c"]
    mine = {"path": "raters_a", "fieldColor": "#abcdef"}
    ds.app_config.color_scheme = fo.ColorScheme(color_by="field", fields=[mine])
    ds.save()
    compute_agreement_run(ds, rater_fields=raters, run_key="k", bootstrap=0)
    status = by_path(ds)
    before = labels(ds, raters + ["raters_d"])

    set_colors(ds, "rater")
    entries = by_path(ds)
    colours = [entries[f]["fieldColor"] for f in raters]
    assert colours == list(OKABE_ITO[:3])                     # one colour-blind-safe colour per rater, in order
    for f in raters:                                          # every label of the field in it: an attribute none has
        assert entries[f]["colorByAttribute"] == "kalos_rater_colour"
        assert entries[f]["valueColors"] == [{"value": "none", "color": entries[f]["fieldColor"]}]
        assert ds.count(f"{f}.detections.kalos_rater_colour") == 0
    assert entries["raters_d"]["colorByAttribute"] == "kalos_one_colour"   # not a rater of the run: one colour
    assert entries["raters_d"]["fieldColor"] not in colours
    assert entries["k_alpha"] == status["k_alpha"]            # the tiles' α keeps its band scale
    assert ds.app_config.color_scheme.color_by == "value"
    assert labels(ds, raters + ["raters_d"]) == before        # no label written

    set_colors(ds, "status")                                  # exactly the status scheme of the run
    assert by_path(ds) == status
    assert by_path(ds)["raters_a"]["fieldColor"] == "#abcdef"  # the user's sidebar colour, not the rater's

    set_colors(ds, "none")                                    # the user's scheme as it was
    scheme = ds.app_config.color_scheme
    assert scheme.color_by == "field" and [e for e in scheme.fields if e["path"] != "k_alpha"] == [mine]
    assert not {"kalos_color_fields_before", "kalos_color_by_before"} & set(ds.info)
    compute_agreement_run(ds, rater_fields=raters, run_key="k2", bootstrap=0)   # and later runs leave it so
    scheme = ds.app_config.color_scheme
    assert scheme.color_by == "field" and [e for e in scheme.fields if not e["path"].endswith("_alpha")] == [mine]


def test_a_rater_keeps_its_colour_across_runs_and_loses_it_with_the_last_run(fo_isolated, ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import (compute_agreement_run,
                                                                                          delete_agreement_run)

    compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], run_key="k1", bootstrap=0)
    set_colors(ds, "rater")
    b = by_path(ds)["raters_b"]["fieldColor"]
    compute_agreement_run(ds, rater_fields=["raters_b", "raters_c"], run_key="k2", bootstrap=0)  # keeps "rater"
    entries = by_path(ds)
    assert entries["raters_b"]["fieldColor"] == b
    assert len({entries[f]["fieldColor"] for f in ("raters_a", "raters_b", "raters_c")}) == 3
    delete_agreement_run(ds, "k1")
    entries = by_path(ds)
    assert entries["raters_a"]["colorByAttribute"] == "kalos_one_colour"   # on no run now: one colour, not a rater's
    assert entries["raters_b"]["fieldColor"] == b
    compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], model_fields=["raters_d"], run_key="m",
                          bootstrap=0)                        # a model is a rater too, named by its field
    d = by_path(ds)["raters_d"]
    assert d["colorByAttribute"] == "kalos_rater_colour" and d["fieldColor"] in OKABE_ITO
    delete_agreement_run(ds, "k2")                            # the model's colour stays with its run
    assert by_path(ds)["raters_d"] == d
    delete_agreement_run(ds, "m")
    assert [e["path"] for e in ds.app_config.color_scheme.fields] == []
    assert ds.app_config.color_scheme.color_by is None


def test_raters_sharing_one_field_are_coloured_by_their_attribute(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import (color_labels,
                                                                                          compute_agreement_run)

    fo = fo_isolated
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=f"/nonexistent/{k}.jpg", gt=fo.Detections(detections=[
        fo.Detection(label="cat", bounding_box=[0.1, 0.1, 0.3, 0.3 + 0.01 * k], rater_id=r) for r in "xyz"]))
        for k in range(3)])
    compute_agreement_run(ds, label_field="gt", rater_attribute="rater_id", run_key="k", bootstrap=0)
    color_labels(ds, "rater")
    entry = by_path(ds)["gt"]
    assert entry["colorByAttribute"] == "rater_id"
    shown = {v["value"]: v["color"] for v in entry["valueColors"] if v["value"] != "kalos_rater_colour"}
    assert shown == dict(zip("xyz", OKABE_ITO))


def test_the_form_offers_the_three_choices_and_preselects_the_current_one(fo_isolated, ds):
    from tests.fiftyone.helpers import resolved_form

    props = resolved_form(OPERATOR, ds)
    assert props["color_by"].default == "status"
    assert [c.value for c in props["color_by"].view.choices] == ["status", "rater", "none"]
    set_colors(ds, "rater")
    assert resolved_form(OPERATOR, ds)["color_by"].default == "rater"
