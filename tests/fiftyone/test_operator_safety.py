"""Issue 15, operators: never fail silently, never overwrite without asking.

Each case: the user sees a clear error (form error, or an error the App shows) naming the
culprit, and the dataset - documents, schema, runs, saved views, info - is identical before
and after."""

import json
import math
import uuid

import pytest

from tests.fiftyone.helpers import (BOX, COMPUTE, PLUGIN, form_errors, refused, resolved_form as form, same_boxes_dataset as boxes_dataset,
                                   snapshot, try_operator as execute)
def run_generator(uri, ds, **params):
    """Drive a generator ``execute`` as the App does: ``(operations, exception or None)``."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext, Executor
    ctx = ExecutionContext({"dataset_name": ds.name, "params": params}, executor=Executor())
    ops = []
    try:
        for message in foo.get_operator(uri).execute(ctx):
            json.loads(message.to_json_line())  # what the App's stream sends: strict JSON, else the stream ends
            ops.append((message.body.operator_uri, message.body.params))
    except Exception as e:  # noqa: BLE001 - returned for the test to check
        return ops, e
    return ops, None


# -- 1. data loss ---------------------------------------------------------------------------------------------

def test_a_users_label_attribute_named_like_the_run_is_refused(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ds.set_values("raters_a.detections.kalos_status", [["mine", "mine"]] * len(ds))
    msg = refused(COMPUTE, ds, "'kalos_status'", rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert "raters_a" in msg
    props = form(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert props["run_key"].invalid and "kalos_status" in props["run_key"].error_message


def test_a_3000_character_run_key_is_a_form_error(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    refused(COMPUTE, ds, "at most 64", rater_fields=["raters_a", "raters_b"], run_key="k" * 3000)


def test_an_empty_view_never_replaces_a_run(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds = boxes_dataset(fo_isolated)
    compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], run_key="kalos", bootstrap=0)
    before = snapshot(ds)
    with pytest.raises(SetupError, match="nothing to compute"):
        compute_agreement_run(ds.limit(0), rater_fields=["raters_a", "raters_b"], run_key="kalos", overwrite=True)
    assert snapshot(ds) == before and len(ds.exists("kalos_alpha")) == len(ds)
    props = form(COMPUTE, ds.limit(0), rater_fields=["raters_a", "raters_b"], run_key="kalos_2")
    assert props["run_key"].invalid and "nothing to compute" in props["run_key"].error_message


def test_fields_sharing_label_ids_are_refused(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ds.clone_sample_field("raters_a", "raters_copy")   # keeps the label ids
    msg = refused(COMPUTE, ds, "label ids are not unique", rater_fields=["raters_a", "raters_copy"], run_key="k")
    assert "raters_a and raters_copy" in msg


def test_simulate_never_replaces_a_field_and_checks_all_before_writing(fo_isolated):
    fo = fo_isolated
    ds = boxes_dataset(fo)
    s = ds.first()
    s["synthetic_rater_2"] = fo.Polylines(polylines=[])   # another label type, second of the names
    s.save()
    msg = refused(f"{PLUGIN}/simulate_raters", ds, "synthetic_rater_2", reference_field="raters_a", n_raters=3,
                  prefix="synthetic")
    assert "never replaces" in msg
    assert form(f"{PLUGIN}/simulate_raters", ds)["prefix"].default == "synthetic_2"


def test_simulate_adds_to_rater_list_and_the_original_raters_still_run(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds = boxes_dataset(fo_isolated, raters=("r1", "r2"))
    res = execute(f"{PLUGIN}/simulate_raters", ds, reference_field="raters_r1", n_raters=2, prefix="syn")
    assert res.error is None
    assert ds.values("rater_list") == [["r1", "r2", "rater_1", "rater_2"]] * len(ds)
    result = compute_agreement_run(ds, rater_fields=["raters_r1", "raters_r2"], run_key="kalos", bootstrap=0)
    assert result.mean_alpha == pytest.approx(1.0) and result.n_images == len(ds)


def test_simulate_rejects_a_nan_reference_box(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ds.set_values("raters_a.detections.bounding_box", [[[math.nan, 0.1, 0.2, 0.2], BOX]] + [[BOX, BOX]] * 3)
    refused(f"{PLUGIN}/simulate_raters", ds, "non-finite", reference_field="raters_a", n_raters=2, prefix="syn")


@pytest.fixture
def coco_file(tmp_path):
    import json
    images = [{"id": i, "file_name": f"{i}.jpg", "width": 100, "height": 100, "rater_list": ["a", "b"]}
              for i in (1, 2)]
    anns = [{"id": 10 * i + k, "image_id": i, "category_id": 1, "bbox": [10, 10, 20, 20], "rater_id": r}
            for i in (1, 2) for k, r in enumerate("ab")]
    path = tmp_path / "coco.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "x"}]}))
    return str(path)


@pytest.mark.parametrize("field, value, held", [("rater_list", "r1", "StringField"), ("coco_id", "one", "StringField")])
def test_import_refuses_fields_of_another_type(fo_isolated, coco_file, field, value, held):
    fo = fo_isolated
    ds = fo.Dataset(f"kalos-safety-{uuid.uuid4().hex[:8]}")
    ds.add_sample(fo.Sample(filepath="/nonexistent/x.jpg", **{field: value}))
    msg = refused(f"{PLUGIN}/import_multirater_coco", ds, f"field {field!r}", labels_path=coco_file)
    assert held in msg
    fo.load_dataset(ds.name)   # still loads


def test_importing_the_same_file_twice_is_refused_or_skipped(fo_isolated, coco_file):
    fo = fo_isolated
    uri = f"{PLUGIN}/import_multirater_coco"
    ds = fo.Dataset(f"kalos-safety-{uuid.uuid4().hex[:8]}")
    assert execute(uri, ds, labels_path=coco_file).error is None and len(ds) == 2
    msg = refused(uri, ds, "already in dataset", labels_path=coco_file)
    assert "coco_id [1, 2]" in msg
    assert form(uri, ds, labels_path=coco_file)["on_existing"].default == "error"
    assert execute(uri, ds, labels_path=coco_file, on_existing="skip").error is None
    assert len(ds) == 2


def test_import_into_a_new_dataset(fo_isolated, coco_file):
    fo = fo_isolated
    uri = f"{PLUGIN}/import_multirater_coco"
    ds = fo.Dataset(f"kalos-safety-{uuid.uuid4().hex[:8]}")
    name = f"kalos-new-{uuid.uuid4().hex[:8]}"
    ops, error = run_generator(uri, ds, labels_path=coco_file, target="new", new_dataset=name)
    assert error is None and len(ds) == 0
    new = fo.load_dataset(name)
    assert len(new) == 2 and new.persistent
    progress = [p["progress"] for uri_, p in ops if uri_.endswith("set_progress")]
    assert progress[-1] == 1.0
    assert any(u.endswith("show_output") for u, _ in ops) and any(u.endswith("open_dataset") for u, _ in ops)
    assert form(uri, ds, target="new", new_dataset=name)["new_dataset"].invalid   # exists now
    new.delete()


# -- 2. silently wrong --------------------------------------------------------------------------------------

def test_a_rater_outside_the_selection_is_not_part_of_the_run(fo_isolated):
    ds = boxes_dataset(fo_isolated)      # a, b, c drew identical boxes; rater_list [a, b, c]
    assert execute(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos").error is None
    res = ds.load_run_results("kalos")
    assert res.mean_alpha == pytest.approx(1.0) and res.global_alpha == pytest.approx(1.0)
    assert set(res.rater_summary) == {"a", "b"}


def test_a_nan_box_is_an_error_naming_sample_and_label(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ds.set_values("raters_b.detections.bounding_box", [[[math.nan, 0.1, 0.2, 0.2], BOX]] + [[BOX, BOX]] * 3)
    sid, lid = ds.first().id, ds.first()["raters_b"].detections[0].id
    msg = refused(COMPUTE, ds, "non-finite", rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert sid in msg and lid in msg


# -- 3. overwrites --------------------------------------------------------------------------------------------

def test_the_form_proposes_an_unused_key_and_overwriting_needs_a_described_confirmation(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    fields = ["raters_a", "raters_b"]
    assert form(COMPUTE, ds, rater_fields=fields)["run_key"].default == "kalos"
    assert execute(COMPUTE, ds, rater_fields=fields, run_key="kalos").error is None   # the proposed key
    assert ds.list_runs() == ["kalos"]
    props = form(COMPUTE, ds, rater_fields=fields)
    assert props["run_key"].default == "kalos_2" and "overwrite" not in props
    props = form(COMPUTE, ds, rater_fields=fields, run_key="kalos")
    about = props["overwrite"].view.description
    assert "Detections" in about and "a, b" in about and "UTC" in about
    assert props["overwrite"].invalid
    refused(COMPUTE, ds, "confirm overwriting", rater_fields=fields, run_key="kalos", threshold=0.9)
    assert execute(COMPUTE, ds, rater_fields=fields, run_key="kalos", threshold=0.9, overwrite=True).error is None
    assert ds.get_run_info("kalos").config.threshold == 0.9


def test_delete_removes_the_runs_saved_view(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    execute(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert execute(f"{PLUGIN}/browse_disagreements", ds, run_key="kalos").error is None
    assert ds.list_saved_views() == ["kalos_disagreements"]
    assert execute(f"{PLUGIN}/delete_agreement_run", ds, run_key="kalos").error is None
    assert ds.list_saved_views() == [] and ds.list_runs() == []


def test_calibration_panel_prefill_gets_an_unused_key(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run
    ds = boxes_dataset(fo_isolated)
    execute(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    calibrate_run(ds, rater_fields=["raters_b", "raters_c"], bootstrap=0)
    from fiftyone.plugins.orgs.kalos.agreement.panels.calibration import CalibrationPanel  # noqa: F401  (the prefill is its agreement_params)
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext
    panel = foo.get_operator(f"{PLUGIN}/kalos_calibration")
    ctx = ExecutionContext({"dataset_name": ds.name, "params": {"panel_id": "p", "panel_state": {
        "run_key": "kalos_calibration", "distance": "iou", "similarity": 0.5, "task": "bbox"}}})
    params = panel.agreement_params(ctx)
    assert params["rater_fields"] == ["raters_b", "raters_c"]
    props = form(COMPUTE, ds, **params)
    assert props["run_key"].default == "kalos_2" and not props["run_key"].invalid


# -- 4. failures the App must show ------------------------------------------------------------------------

@pytest.mark.parametrize("params, param, text", [
    (dict(rater_fields=[]), "rater_fields", "at least two rater fields"),   # the preselection emptied
    (dict(layout="rater_attribute"), "label_field", "choose the label field"),
    (dict(rater_fields=["raters_a", "raters_b"], lsa_thresholds="0.1, abc, 2", run_key="k"), "lsa_thresholds",
     "'abc'"),
    (dict(rater_fields=["raters_a", "raters_b"], run_key="kalos_calibration"), "run_key", "KaLOS calibration run"),
])
def test_bad_agreement_inputs_are_form_errors(fo_isolated, params, param, text):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run
    ds = boxes_dataset(fo_isolated)
    calibrate_run(ds, rater_fields=["raters_a", "raters_b"], bootstrap=0)
    props = form(COMPUTE, ds, **params)
    assert props[param].invalid and text in props[param].error_message
    refused(COMPUTE, ds, text, **params)


@pytest.mark.parametrize("uri", [COMPUTE, f"{PLUGIN}/calibrate"])
def test_a_form_opened_without_params_shows_no_error_while_its_defaults_exist(fo_isolated, uri):
    """The App draws a dynamic form before it passes the preselected rater fields back: that
    first draw has no error under a field that shows two raters, and running with no params uses
    them; without a preselection (no rater_list) the form asks for the fields."""
    ds = boxes_dataset(fo_isolated)
    props = form(uri, ds)
    assert props["rater_fields"].default == ["raters_a", "raters_b", "raters_c"]
    assert form_errors(props) == {}
    bare = boxes_dataset(fo_isolated, rater_list=False)
    assert "at least two rater fields" in form_errors(form(uri, bare))["rater_fields"]


def test_running_without_params_uses_the_preselected_raters(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    res = execute(COMPUTE, ds, run_key="k")
    assert res.error is None, res.error
    assert all(ds.count(f"raters_{r}.detections.k_unit") == 2 * len(ds) for r in "abc")


def test_an_execution_error_reaches_the_user_and_never_says_done(fo_isolated):
    ds = boxes_dataset(fo_isolated, rater_list=False)
    ds.set_values("rater_list", [["a"]] * len(ds))       # b labels, but b is not in rater_list
    before = snapshot(ds)
    ops, error = run_generator(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert error is not None and "not in its rater_list" in str(error)
    notes = [p for uri, p in ops if uri.endswith("notify")]
    assert notes and notes[-1]["variant"] == "error" and "not in its rater_list" in notes[-1]["message"]
    # the progress dialog is replaced by an error card with the whole message (no "100%")
    (card,) = [p for uri, p in ops if uri.endswith("show_output")]
    box = card["outputs"]["type"]["properties"]["failed"]["view"]
    assert box["name"] == "Error" and "failed" in box["label"] and "not in its rater_list" in box["description"]
    assert all(p.get("progress", 0) < 1 for uri, p in ops if uri.endswith("set_progress"))
    assert snapshot(ds) == before


def test_compute_agreement_finishes_at_100_percent_with_a_result(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ops, error = run_generator(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    assert error is None
    assert [p["progress"] for uri, p in ops if uri.endswith("set_progress")][-1] == 1.0
    (note,) = [p for uri, p in ops if uri.endswith("notify")]
    assert note["variant"] == "success" and "mean α 1.000" in note["message"] and "CI" in note["message"]


def test_calibrate_finishes_at_100_percent(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    ops, error = run_generator(f"{PLUGIN}/calibrate", ds, rater_fields=["raters_a", "raters_b"], bootstrap=0)
    assert error is None
    assert [p["progress"] for uri, p in ops if uri.endswith("set_progress")][-1] == 1.0
    assert any(uri.endswith("show_output") for uri, _ in ops)


@pytest.mark.parametrize("uri", [f"{PLUGIN}/browse_disagreements", f"{PLUGIN}/delete_agreement_run"])
def test_unknown_run_keys_are_clear_errors(fo_isolated, uri):
    ds = boxes_dataset(fo_isolated)
    execute(COMPUTE, ds, rater_fields=["raters_a", "raters_b"], run_key="kalos")
    refused(uri, ds, "no run 'nope'", run_key="nope")
