"""simulate_raters against a real FiftyOne database: fields, truth attributes, reference untouched,
determinism, α = 1 at λ = 0, form errors."""

import uuid

import pytest

from kalos_core.noise.testbed import lvis_like_reference
from tests.fiftyone.helpers import shown_result

URI = "@kalos/agreement/simulate_raters"


def make_reference(fo, kind="box", n=8):
    ref = lvis_like_reference(n, seed=4, kind=kind)
    ds = fo.Dataset(f"kalos-sim-{uuid.uuid4().hex[:8]}")
    samples = []
    for im in ref.images:
        s = fo.Sample(filepath=f"/nonexistent/{im.id}.jpg")
        if kind == "box":
            s["ground_truth"] = fo.Detections(detections=[
                fo.Detection(label=ref.categories[o.category],
                             bounding_box=[o.box[0], o.box[1], o.box[2] - o.box[0], o.box[3] - o.box[1]])
                for o in im.objects])
        else:
            s["ground_truth"] = fo.Polylines(polylines=[
                fo.Polyline(label=ref.categories[o.category], points=[r.tolist() for r in o.shape], closed=True,
                            filled=True) for o in im.objects])
        samples.append(s)
    ds.add_samples(samples)
    return ds


def execute(ds, **params):
    import fiftyone.operators as foo
    res = foo.execute_operator(URI, dataset=ds.name, params=params)
    if res.error:
        raise RuntimeError(res.error)
    return shown_result(res)


def test_creates_rater_fields_with_truth_and_leaves_the_reference(fo_isolated):
    fo = fo_isolated
    ds = make_reference(fo)
    before = ds.values("ground_truth.detections.bounding_box")
    result = execute(ds, reference_field="ground_truth", n_raters=3, magnitude=2.0, seed=1, prefix="syn")
    assert result["fields"] == ["syn_rater_1", "syn_rater_2", "syn_rater_3"]
    assert ds.values("ground_truth.detections.bounding_box") == before
    assert not ds.has_field("rater_list")  # none before: none created (every field present is assigned)
    ref_ids = set(ds.values("ground_truth.detections.id", unwind=True))
    errors = ds.values("syn_rater_1.detections.truth_errors", unwind=True)
    truth = ds.values("syn_rater_1.detections.truth_ref_ids", unwind=True)
    assert len(errors) == len(truth) > 0
    assert all(set(t) <= ref_ids for t in truth)
    assert any("localisation" in e for e in errors)
    for label, truth_label, e in zip(ds.values("syn_rater_1.detections.label", unwind=True),
                                     ds.values("syn_rater_1.detections.truth_label", unwind=True), errors):
        if "false_positive" not in e:
            assert (label != truth_label) == ("class" in e)
    again = make_reference(fo)
    execute(again, reference_field="ground_truth", n_raters=3, magnitude=2.0, seed=1, prefix="syn")
    assert again.values("syn_rater_2.detections.bounding_box") == ds.values("syn_rater_2.detections.bounding_box")


def test_magnitude_zero_gives_perfect_agreement(fo_isolated):
    fo = fo_isolated
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds = make_reference(fo, kind="polygon")
    execute(ds, reference_field="ground_truth", n_raters=3, magnitude=0.0, seed=0)
    fields = ["synthetic_rater_1", "synthetic_rater_2", "synthetic_rater_3"]
    result = compute_agreement_run(ds, rater_fields=fields, run_key="sim", bootstrap=0)
    assert result.mean_alpha == 1.0
    noisy = make_reference(fo, kind="polygon")
    execute(noisy, reference_field="ground_truth", n_raters=3, magnitude=2.0, seed=0)
    assert compute_agreement_run(noisy, rater_fields=fields, run_key="sim", bootstrap=0).mean_alpha < 0.9


def test_python_entry(fo_isolated):
    import fiftyone.operators as foo
    ds = make_reference(fo_isolated)
    summary = foo.get_operator(URI)(ds, "ground_truth", n_raters=2, magnitude=1.0)
    assert summary["n_raters"] == 2 and ds.has_field("synthetic_rater_2")
    assert ds.info["kalos_simulation"]["synthetic"]["fields"]["synthetic_rater_1"] == "rater_1"


def test_delegated_run_equals_the_direct_one(fo_isolated):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    ds = make_reference(fo_isolated)
    op = foo.get_operator(URI)
    op(ds, "ground_truth", n_raters=2, magnitude=0.7, seed=3, prefix="direct")
    queued = op(ds, "ground_truth", delegate=True, n_raters=2, magnitude=0.7, seed=3, prefix="queued")
    assert queued.delegated and not ds.has_field("queued_rater_1")
    DelegatedOperationService().execute_queued_operations(limit=5, log=False)
    ds.reload()
    for k in (1, 2):
        assert ds.values(f"queued_rater_{k}.detections.bounding_box") == \
            ds.values(f"direct_rater_{k}.detections.bounding_box")


@pytest.mark.parametrize("params, message", [
    (dict(reference_field="nope"), "reference"),
    (dict(reference_field="ground_truth", prefix="bad prefix"), "prefix"),
    (dict(reference_field="ground_truth", magnitude=-1.0), "magnitude"),
    (dict(reference_field="ground_truth", n_raters=0), "n_raters"),
    (dict(reference_field="ground_truth", n_raters=101), "n_raters. Reason: must be at most 100"),
    (dict(reference_field="ground_truth", schools="60,40", defiant=True), "at most 100 synthetic raters"),
    (dict(reference_field="ground_truth", profile="/nonexistent/profile.json"), "no profile file"),
])
def test_bad_setups_are_form_errors(fo_isolated, params, message):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError
    ds = make_reference(fo_isolated, n=2)
    with pytest.raises(ExecutionError, match=message):
        foo.execute_operator(URI, dataset=ds.name, params=params)
    assert not ds.has_field("synthetic_rater_1")


def form(ds, **params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext
    ctx = ExecutionContext({"dataset_name": ds.name, "params": params})
    return foo.get_operator(URI).resolve_input(ctx).type.properties


def test_the_form_is_the_declared_parameters(fo_isolated):
    from kalos_core.measure import get_measure
    ds = make_reference(fo_isolated, n=2)
    props = form(ds)
    for p in get_measure("simulate").params:
        assert props[p.name].view.label == p.title
    assert props["n_raters"].default == 5 and props["magnitude"].default == 1.0 and props["schools"].default == ""
    bad = form(ds, reference_field="ground_truth", schools="2,x")
    assert bad["schools"].invalid
    many = form(ds, reference_field="ground_truth", n_raters=101)
    assert many["n_raters"].invalid and "at most 100" in many["n_raters"].error_message


def test_schools_and_a_defiant_rater_from_the_form_and_the_python_entry(fo_isolated):
    import fiftyone.operators as foo
    ds = make_reference(fo_isolated, n=3)
    result = execute(ds, reference_field="ground_truth", schools="2,1", defiant=True, prefix="sch")
    assert result["fields"] == ["sch_rater_1", "sch_rater_2", "sch_rater_3", "sch_defiant"]
    info = ds.info["kalos_simulation"]["sch"]
    assert info["schools"] == [2, 1] and info["defiant"] and info["n_raters"] == 4
    op = foo.get_operator(URI)
    with pytest.raises(ValueError) as e:   # SetupError (of the plugin's copy of operators/)
        op(ds, "ground_truth", seed=-1, prefix="x")
    assert e.value.param == "seed"
    with pytest.raises(ValueError, match="unknown parameter"):
        op(ds, "ground_truth", raters=3, prefix="x")
    assert not ds.has_field("x_rater_1")
