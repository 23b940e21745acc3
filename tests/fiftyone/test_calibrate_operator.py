"""The calibrate operator on a real FiftyOne database: same numbers as the engine, the stored
run's schema, compute_agreement picking up the calibration, form errors, delegation."""

import functools

import pytest

from kalos_core import load_coco
from kalos_core.calibration import CalibrationConfig, calibrate
from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import Panel, rater_dataset, resolved_form as form, run_operator as execute

make_dataset = functools.partial(rater_dataset, annotation_ids=False)   # calibration's datasets: no label ids


PLUGIN = "@kalos/agreement"
URI = f"{PLUGIN}/calibrate"
SCHEMA_KEYS = {"task", "n_images", "seed", "bootstrap", "confidence", "distances", "recommended",
               "similarity_threshold"}
DISTANCE_KEYS = {"ks", "ks_ci", "tau_star", "tau_ci", "similarity_threshold", "similarity_ci", "sigma",
                 "tau_method", "do", "de", "histogram", "strata"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return load_coco(build_demo(tmp_path_factory.mktemp("demo"), n_images=16, seed=2, with_images=False), "bbox")


def test_operator_stores_what_the_engine_computes(fo_isolated, demo):
    # with image sizes the operator compares pixel geometry, as the engine does on the file
    ds, fields = make_dataset(fo_isolated, demo, with_metadata=True)
    execute(URI, ds, rater_fields=fields, bootstrap=25, seed=3, stratify=True)
    info = ds.get_run_info("kalos_calibration")
    stored = ds.load_run_results("kalos_calibration", load_view=False)
    expected = calibrate(demo, CalibrationConfig(bootstrap=25, seed=3, stratify=True)).to_dict()
    assert SCHEMA_KEYS <= set(vars(stored))
    assert list(stored.distances) == list(expected["distances"]) == ["iou", "centroid", "centroid_box", "giou"]
    for name, d in stored.distances.items():
        assert DISTANCE_KEYS <= set(d)
        for key in ("ks", "tau_star", "similarity_threshold", "sigma"):
            assert d[key] == pytest.approx(expected["distances"][name][key], abs=1e-5)
        assert d["tau_ci"] == pytest.approx(expected["distances"][name]["tau_ci"], abs=1e-5)
        assert d["histogram"] == expected["distances"][name]["histogram"]
        assert set(d["strata"]) == {"small", "medium", "large"}
    assert stored.recommended["distance"] == expected["recommended"]["distance"]
    assert (info.config.method, info.config.distance) == ("kalos_calibration", stored.recommended["distance"])
    assert info.config.similarity_threshold == stored.similarity_threshold == stored.recommended["similarity_threshold"]
    assert info.config.rater_fields == fields and info.config.label_type == "Detections"
    assert set(ds.get_field_schema()) == set(make_dataset(fo_isolated, demo)[0].get_field_schema())  # no fields


def test_both_layouts_and_the_python_entries_agree(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibration_runs, load_calibration
    a, fields = make_dataset(fo_isolated, demo)
    b, _ = make_dataset(fo_isolated, demo, "rater_attribute")
    execute(URI, a, rater_fields=fields, bootstrap=10, run_key="cal")
    execute(URI, b, layout="rater_attribute", label_field="raters", bootstrap=10, run_key="cal")
    ra, rb = load_calibration(a, "cal"), load_calibration(b, "cal")
    da, db = ra.pop("drill"), rb.pop("drill")   # the bins' pairs name each data set's own ids
    assert ra == rb
    assert {d: {k: [len(p) for p in v] for k, v in x.items()} for d, x in da["distances"].items()} == \
        {d: {k: [len(p) for p in v] for k, v in x.items()} for d, x in db["distances"].items()}
    assert calibration_runs(a) == ["cal"]
    import fiftyone.operators as foo
    direct = foo.get_operator(URI)(a, rater_fields=fields, bootstrap=10, run_key="again")
    assert direct.similarity_threshold == pytest.approx(load_calibration(a, "cal")["similarity_threshold"], abs=1e-6)
    assert calibration_runs(a) == ["cal", "again"] and set(direct.timings) >= {"read_s", "compute_s", "write_s"}


def test_compute_agreement_defaults_to_the_calibration_and_records_it(fo_isolated, demo):
    ds, fields = make_dataset(fo_isolated, demo)
    before = form(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields)
    assert before["threshold"].default == 0.5 and before["distance"].default is None
    execute(URI, ds, rater_fields=fields, bootstrap=10, distances=["centroid", "giou"])
    cfg = ds.get_run_info("kalos_calibration").config
    assert cfg.distance in ("centroid", "giou")
    after = form(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields)
    assert after["threshold"].default == round(cfg.similarity_threshold, 3)   # the shown value is the used one
    assert after["distance"].default == cfg.distance
    # a run at the calibrated threshold records the calibration; another threshold does not
    execute(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields, run_key="at_tau",
            threshold=after["threshold"].default, distance=cfg.distance)
    execute(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields, run_key="strict", threshold=0.9)
    assert ds.get_run_info("at_tau").config.calibration_key == "kalos_calibration"
    assert ds.get_run_info("strict").config.calibration_key is None


def test_the_newest_calibration_wins(fo_isolated, demo):
    ds, fields = make_dataset(fo_isolated, demo)
    execute(URI, ds, rater_fields=fields, bootstrap=0, run_key="first", distances=["centroid"])
    execute(URI, ds, rater_fields=fields, bootstrap=0, run_key="second", distances=["iou"])
    f = form(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields)
    assert f["distance"].default == "iou"
    assert f["threshold"].default == round(ds.get_run_info("second").config.similarity_threshold, 3)


@pytest.mark.parametrize("params, message", [
    (dict(rater_fields=[]), "choose at least two rater fields"),
    (dict(rater_fields=["raters_careful"]), "at least two rater fields"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], run_key="bad key"), "run key must"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], run_key="kalos"), "another kind of run"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], distances=["iou", "mpjpe"]), "not a box distance"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], bootstrap=-1), "bootstrap"),
])
def test_bad_setups_are_form_errors(fo_isolated, demo, params, message):
    from fiftyone.operators.executor import ExecutionError
    ds, fields = make_dataset(fo_isolated, demo)
    assert {"raters_careful", "raters_sloppy"} <= set(fields)
    execute(f"{PLUGIN}/compute_agreement", ds, rater_fields=fields, run_key="kalos", bootstrap=0)
    import fiftyone.operators as foo
    with pytest.raises(ExecutionError, match=message):
        foo.execute_operator(URI, dataset=ds.name, params=params)
    assert "kalos_calibration" not in ds.list_runs()


def test_delegated_execution_gives_the_same_run(fo_isolated, demo):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    ds, fields = make_dataset(fo_isolated, demo)
    op = foo.get_operator(URI)
    assert op.config.allow_delegated_execution and op.config.execute_as_generator
    queued = op(ds, delegate=True, rater_fields=fields, run_key="queued", bootstrap=10)
    assert queued.delegated and "queued" not in ds.list_runs()
    DelegatedOperationService().execute_queued_operations(limit=5, log=False)
    ds.reload()
    execute(URI, ds, rater_fields=fields, run_key="direct", bootstrap=10)
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import load_calibration
    assert load_calibration(ds, "queued") == load_calibration(ds, "direct")


# -- Braylan's item-level measures in the stored run ---------------------------------------------

def test_box_calibration_stores_braylan_item_level_measures(fo_isolated, demo):
    from kalos_core.calibration.braylan import BraylanConfig, braylan_agreement
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import load_calibration
    assert all(float(im.width).is_integer() and float(im.height).is_integer() for im in demo.images)
    ds, fields = make_dataset(fo_isolated, demo, with_metadata=True)
    execute(URI, ds, rater_fields=fields, bootstrap=0, seed=3)
    stored = load_calibration(ds)["braylan"]
    expected = braylan_agreement(demo, BraylanConfig(seed=3)).to_dict()   # pixel boxes, straight from COCO
    assert {k: v for k, v in stored.items() if k != "distances"} == {
        k: v for k, v in expected.items() if k != "distances"}
    assert list(stored["distances"]) == ["iou", "giou", "l2", "count"]
    for name, d in stored["distances"].items():
        assert d == pytest.approx(expected["distances"][name], abs=1e-5)
    assert stored["n_items"] == len(demo.images) and 0 < stored["distances"]["iou"]["alpha"] < 1


def test_braylan_is_skipped_without_pixel_sizes_or_boxes(fo_isolated, demo):
    from kalos_core.data import MultiRaterDataset
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import braylan_summary, load_calibration
    ds, fields = make_dataset(fo_isolated, demo)                             # no metadata
    execute(URI, ds, rater_fields=fields, bootstrap=0)
    assert "compute_metadata" in load_calibration(ds)["braylan"]["skipped"]
    assert "boxes only" in braylan_summary(MultiRaterDataset([], {}, "polygon"))["skipped"]


def test_an_existing_calibration_is_replaced_only_after_a_described_confirmation(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run, load_calibration

    ds, fields = make_dataset(fo_isolated, demo)
    execute(URI, ds, rater_fields=fields, bootstrap=0, seed=1)
    before = load_calibration(ds)
    props = form(URI, ds, rater_fields=fields)
    assert props["run_key"].default == "kalos_calibration_2"            # an unused key is proposed
    props = form(URI, ds, rater_fields=fields, run_key="kalos_calibration")
    assert "overwrite" in props and "Detections" in props["overwrite"].view.description
    assert props["overwrite"].invalid or props["run_key"].invalid        # refused until confirmed
    with pytest.raises(SetupError, match="kalos_calibration"):
        calibrate_run(ds, rater_fields=fields, bootstrap=0, seed=2)
    assert load_calibration(ds) == before                                 # nothing replaced
    execute(URI, ds, rater_fields=fields, bootstrap=0, seed=2, run_key="kalos_calibration", overwrite=True)
    assert load_calibration(ds)["seed"] == 2


# -- every parameter in the form, the Recompute and the errors -------------------------------------

def test_recompute_reopens_the_form_with_every_stored_parameter(fo_isolated, demo):
    """The Calibration panel's Recompute prefills every parameter the run stored (none falls back to
    its default, as parameters in no form did), and running that form stores the same parameters."""
    from kalos_core.calibration import CalibrationConfig
    from kalos_core.params import params_of

    ds, fields = make_dataset(fo_isolated, demo)
    chosen = dict(distances=["giou", "iou"], seed=5, bootstrap=7, confidence=0.9, stratify=True, grid_points=256,
                  histogram_bins=20, sigma_p=0.1, alpha_preview=False)
    assert {p.name for p in params_of(CalibrationConfig)} == set(chosen)
    assert all(chosen[p.name] != p.default for p in params_of(CalibrationConfig))     # each one off its default
    execute(URI, ds, rater_fields=fields, run_key="cal", **chosen)
    p = Panel(ds, "kalos_calibration").call("on_load")
    assert "open_operator" in p.output["type"]["properties"]["run_buttons"]["type"]["properties"]
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    params = prompt["params"]
    assert prompt["operator_uri"] == URI and params["run_key"] == "cal" and params["rater_fields"] == fields
    assert {k: params[k] for k in chosen} == chosen
    props = form(URI, ds, **params)
    assert set(chosen) <= set(props) and not any(props[k].invalid for k in chosen)
    execute(URI, ds, **params, overwrite=True)
    cfg = ds.get_run_info("cal").config
    assert {k: getattr(cfg, k) for k in chosen} == chosen


@pytest.mark.parametrize("bad, field", [
    (dict(confidence=1.5), "confidence"), (dict(grid_points=3), "grid_points"), (dict(sigma_p=0.0), "sigma_p"),
    (dict(histogram_bins=0), "histogram_bins"), (dict(seed=-2), "seed"),
    (dict(distances=["iou", "mpjpe"]), "distances"),
])
def test_an_error_is_put_on_the_parameter_at_fault(fo_isolated, demo, bad, field):
    """A refused value is an error on its own input (not on bootstrap or distances whatever its cause)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run

    ds, fields = make_dataset(fo_isolated, demo)
    props = form(URI, ds, rater_fields=fields, **bad)
    assert [name for name, prop in props.items() if getattr(prop, "invalid", False)] == [field]
    with pytest.raises(SetupError) as error:
        calibrate_run(ds, rater_fields=fields, **bad)
    assert error.value.param == field
    assert "kalos_calibration" not in ds.list_runs()
