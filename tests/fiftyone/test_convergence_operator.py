"""Operators label_convergence, noise_aware_evaluation and delete_kalos_run on a real database:
the stored run is what the engine computes on the same labels, per-label fields, form errors,
overwrite, delete; and the run store they go through."""

import pytest

from kalos_core import load_coco
from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import form_errors as errors, model_dataset, resolved_form as form, run_operator as execute, shown_result

PLUGIN = "@kalos/agreement"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return load_coco(build_demo(tmp_path_factory.mktemp("demo"), n_images=16, seed=2, with_images=False), "bbox")


@pytest.fixture(scope="module")
def model_ds(fo_isolated, demo):
    return model_dataset(fo_isolated, demo)


# -- label convergence -------------------------------------------------------------------------

def test_convergence_operator_stores_what_the_engine_computes(model_ds):
    from kalos_core.convergence import ConvergenceConfig, compute_convergence
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import read_dataset, resolve_source
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import load_convergence, matched_by_label
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.predictions import read_predictions

    ds, fields = model_ds
    execute("label_convergence", ds, rater_fields=fields, run_key="conv", bootstrap=60, seed=1,
            predictions_field="model")
    stored = load_convergence(ds, "conv")
    data = read_dataset(ds, resolve_source(ds, fields))
    preds, _ = read_predictions(ds, "model", data)
    want = compute_convergence(data, ConvergenceConfig(bootstrap=60, seed=1), preds)
    d = want.to_dict()
    assert stored["full_set"] == d["full_set"]
    assert stored["bootstrap"]["ci_normal"] == d["bootstrap"]["ci_normal"]
    assert stored["bootstrap"]["per_threshold"]["0.75"]["values"] == d["bootstrap"]["per_threshold"]["0.75"]["values"]
    # the model is rater 0's boxes: 100 against that rater
    assert stored["model"]["per_rater"][data.raters[0]]["map"] == pytest.approx(100.0)
    # per-label flags: matched in every pair the label belongs to, at each threshold
    flags = matched_by_label(want)
    ids = ds.values(f"{fields[1]}.detections.id")
    got = ds.values(f"{fields[1]}.detections.conv_matched")
    pairs = [(lid, g) for row_i, row_g in zip(ids, got) for lid, g in zip(row_i or [], row_g or [])]
    assert pairs and all(g == flags[lid] for lid, g in pairs)
    assert any(not all(g) for _, g in pairs)          # some label is unmatched somewhere
    cfg = ds.get_run_info("conv").config
    assert set(cfg.fields) == {f"{f}.detections.conv_matched" for f in fields}


def test_identical_raters_converge_at_100_and_every_label_matches(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run

    ds, fields = model_dataset(fo_isolated, demo)
    ds.clone_sample_field(fields[0], "copy_a")
    ds.set_values("copy_a", [None if r is None else fo_isolated.Detections(detections=[
        fo_isolated.Detection(label=d.label, bounding_box=d.bounding_box) for d in r.detections])
        for r in ds.values("copy_a")])
    ds.set_values("rater_list", [None] * len(ds))   # the copy is no listed rater: every present field is
    res = convergence_run(ds, rater_fields=[fields[0], "copy_a"], run_key="same", bootstrap=20)
    assert res.full_set.map == pytest.approx(1.0)
    flags = [f for row in ds.values("copy_a.detections.same_matched") for f in row or []]
    assert flags and all(all(f) for f in flags)


def test_rerun_needs_the_overwrite_confirmation(model_ds):
    from fiftyone.operators.executor import ExecutionError

    ds, fields = model_ds
    execute("label_convergence", ds, rater_fields=fields[:2], run_key="conv_rerun", bootstrap=10)
    props = form("label_convergence", ds, layout="rater_fields", rater_fields=fields[:2], run_key="conv_rerun")
    assert "overwrite" in props and "convergence run" in props["overwrite"].view.description
    assert "confirm overwriting" in errors(props)["overwrite"]
    with pytest.raises((ExecutionError, RuntimeError), match="confirm overwriting"):
        execute("label_convergence", ds, rater_fields=fields[:2], run_key="conv_rerun", bootstrap=10)
    execute("label_convergence", ds, rater_fields=fields[:2], run_key="conv_rerun", bootstrap=10, overwrite=True)


@pytest.mark.parametrize("params,param,message", [
    (dict(run_key="kalos_cal"), "run_key", "another kind of run"),
    (dict(run_key="bad key"), "run_key", "run key must start"),
    (dict(task="segm"), "task", None),
    (dict(fraction=0.0), "fraction", None),
    (dict(bootstrap=10_001), "bootstrap", "must be at most 10000"),   # the declared bound, as in the CLI
])
def test_convergence_bad_setups_are_form_errors(model_ds, params, param, message):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run

    ds, fields = model_ds
    if "kalos_cal" not in ds.list_runs():
        calibrate_run(ds, rater_fields=fields, run_key="kalos_cal", bootstrap=0)
    props = form("label_convergence", ds, layout="rater_fields", rater_fields=fields, **params)
    if param == "task":       # Detections offer segm (instance masks); without masks the check passes the form
        assert "segm" in [c.value for c in props["task"].view.choices]
        return
    if param == "fraction":   # the declared bounds, (0, 1]: the parameter's own message
        assert errors(props)["fraction"] == "fraction must lie in (0, 1], got 0.0"
        return
    assert message in errors(props)[param]


def test_predictions_without_confidence_are_refused_before_writing(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    ds, fields = model_dataset(fo_isolated, demo)
    ds.set_values("model.detections.confidence", [[None] * len(r or []) for r in ds.values("model.detections")])
    with pytest.raises(SetupError, match="no confidence"):
        convergence_run(ds, rater_fields=fields, run_key="noconf", predictions_field="model", bootstrap=5)
    assert "noconf" not in ds.list_runs() and ds.count(f"{fields[0]}.detections.noconf_matched") == 0


@pytest.mark.parametrize("confidence", [1.5, -0.2, float("nan")])
def test_predictions_with_a_confidence_outside_0_1_are_refused_naming_a_label(fo_isolated, demo, confidence):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    ds, fields = model_dataset(fo_isolated, demo)
    ds.set_values("model.detections.confidence", [[confidence] * len(r or []) for r in ds.values("model.detections")])
    first = next(d.id for r in ds.values("model.detections") for d in r or [])
    with pytest.raises(SetupError, match=f"no confidence in \\[0, 1\\] \\(e.g. label {first}") as e:
        convergence_run(ds, rater_fields=fields, run_key="badconf", predictions_field="model", bootstrap=5)
    assert e.value.param == "predictions_field"
    assert "badconf" not in ds.list_runs() and ds.count(f"{fields[0]}.detections.badconf_matched") == 0


def test_delete_removes_the_run_and_exactly_its_fields(model_ds):
    ds, fields = model_ds
    execute("label_convergence", ds, rater_fields=fields[:2], run_key="conv_del", bootstrap=5)
    assert ds.count(f"{fields[0]}.detections.conv_del_matched") > 0
    props = form("delete_kalos_run", ds, run_key="conv_del")
    assert "conv_del_matched" in props["fields"].view.label.replace("\\_", "_")   # markdown-escaped
    res = execute("delete_kalos_run", ds, run_key="conv_del")
    assert set(shown_result(res)["removed"]) == {f"{f}.detections.conv_del_matched" for f in fields[:2]}
    assert "conv_del" not in ds.list_runs()
    assert ds.get_field(f"{fields[0]}.detections.conv_del_matched") is None
    assert ds.count(f"{fields[0]}.detections.conv_del_matched") == 0
    assert errors(form("delete_kalos_run", ds, run_key="conv_del"))["run_key"].startswith("no KaLOS run")


# -- noise-aware evaluation --------------------------------------------------------------------

def test_noise_aware_operator_stores_what_the_engine_computes(model_ds):
    from kalos_core.noise_aware import noise_aware_evaluation
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import read_dataset, resolve_source
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import load_noise_aware
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.predictions import read_predictions

    ds, fields = model_ds
    execute("noise_aware_evaluation", ds, predictions_field="model", reference_field=fields[1],
            noise_fields=[fields[2]], run_key="na")
    stored = load_noise_aware(ds, "na")
    source = resolve_source(ds, [fields[1], fields[2]])
    data = read_dataset(ds, source)
    preds, _ = read_predictions(ds, "model", data)
    want = noise_aware_evaluation(data, preds, source.raters[fields[1]], per_detection=True,
                                  noise_raters=[source.raters[fields[2]]])
    d = want.to_dict()
    assert stored["ap"] == d["ap"] and stored["by_size"] == d["by_size"] and stored["noise"] == d["noise"]
    for block in [stored["ap"], *stored["by_size"].values()]:
        for v in block.values():
            if v["ap"] is not None:
                assert v["lower"] - 1e-9 <= v["ap"] <= v["upper"] + 1e-9
    # per-prediction fields: the engine's status and IoU bounds, by label id
    ids = [i for row in ds.values("model.detections.id") for i in row or []]
    at50 = [s for row in ds.values("model.detections.na_at50") for s in row or []]
    lo = [v for row in ds.values("model.detections.na_iou_lower") for v in row or []]
    hi = [v for row in ds.values("model.detections.na_iou_upper") for v in row or []]
    iou = [v for row in ds.values("model.detections.na_iou") for v in row or []]
    assert at50 == [want.detections[i]["status"][0] for i in ids]
    assert all(a <= b <= c for a, b, c in zip(lo, iou, hi))
    n_uncertain = sum(d["uncertain"] for d in want.detections.values())
    assert stored["n_uncertain"] == n_uncertain == ds.count_values("model.detections.na_uncertain").get(True, 0)


def test_noise_aware_form_errors(model_ds):
    ds, fields = model_ds
    props = form("noise_aware_evaluation", ds, predictions_field="model", reference_field=fields[1],
                 noise_fields=[], run_key="na2")
    assert "reference_field" in props and "noise_fields" in props
    props = form("noise_aware_evaluation", ds, predictions_field="model", reference_field=fields[1],
                 noise_fields=[fields[1]], run_key="na2")
    assert "at least one other rater field" in errors(props)["noise_fields"]


def test_noise_aware_needs_image_sizes(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import noise_aware_run

    ds, fields = model_dataset(fo_isolated, demo)
    ds.set_values("metadata", [None] * len(ds))
    with pytest.raises(SetupError, match="metadata"):
        noise_aware_run(ds, predictions_field="model", reference_field=fields[0], noise_fields=[fields[1]])
    assert not ds.list_runs()


# -- the run store -----------------------------------------------------------------------------

def test_the_store_lists_every_kind_oldest_first_and_describes_them(model_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds, fields = model_ds
    compute_agreement_run(ds, rater_fields=fields[:2], run_key="agree_store", bootstrap=0)
    execute("label_convergence", ds, rater_fields=fields[:2], run_key="conv_store", bootstrap=5)
    assert run_store.runs_of(ds, "kalos_agreement")[-1] == "agree_store"
    conv = run_store.runs_of(ds, "kalos_convergence")
    assert conv[-1] == "conv_store"
    assert run_store.describe_run(ds, "conv_store").startswith("label convergence run on Detections labels")
    assert run_store.describe_run(ds, "nope") is None
    with pytest.raises(ValueError, match="not a KaLOS label convergence run"):
        run_store.load_results(ds, "agree_store", "kalos_convergence")
    assert run_store.unused_key(ds, "conv_store", "kalos_convergence") == "conv_store_2"
    assert run_store.unused_key(ds, "agree_store", "kalos_agreement") == "agree_store_2"


def test_panels_read_runs_through_the_same_store():
    import fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.run_store as store
    import fiftyone.plugins.orgs.kalos.agreement.panels.common as common
    import fiftyone.plugins.orgs.kalos.agreement.panels.runs as runs

    assert runs.store is store
    assert common.runs_of is store.runs_of and common.load_results is store.load_results
