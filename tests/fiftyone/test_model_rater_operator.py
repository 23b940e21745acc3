"""A model field as one more rater of compute_agreement: flagged as a model in the run's
config and results, its labels written back, its pairwise α that of the rater it copies."""


import pytest

from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError
from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
from fiftyone.plugins.orgs.kalos.agreement.panels.common import load_results
from tests.fiftyone.helpers import MODEL_RATER_FIELDS as FIELDS, model_rater_dataset as boxes_dataset

URI = "@kalos/agreement/compute_agreement"


def test_a_model_field_equal_to_a_rater_gets_that_raters_pairwise_alpha(fo_isolated):
    ds = boxes_dataset(fo_isolated)
    res = compute_agreement_run(ds, rater_fields=FIELDS, model_fields=["model"], score_threshold=0.5,
                                run_key="with_model", bootstrap=0)
    assert res.models == ["model"]
    for other in ("a", "c"):
        assert res.collaboration["model"][other] == pytest.approx(res.collaboration["b"][other])
    assert res.collaboration["model"]["b"] == 1.0
    cfg = ds.get_run_info("with_model").config
    assert cfg.models == ["model"] and cfg.model_fields == ["model"] and cfg.score_threshold == 0.5
    assert cfg.rater_fields == FIELDS   # a rerun of the raters does not take the model for a human
    stored = load_results(ds, "with_model")
    assert stored["models"] == ["model"]
    cmp = stored["model_comparison"]["per_image"]["model"]
    assert cmp["alpha_with_humans"]["a"] == pytest.approx(res.collaboration["b"]["a"])
    assert cmp["verdict"].startswith("model (model) disagrees with the humans")
    assert stored["collaboration_n"]["model"]["a"] == 12
    # the kept model labels carry the run's unit and status; the low-confidence ones do not
    status = lambda d: d.get_field("with_model_status") if d.has_field("with_model_status") else None
    statuses = [(d.confidence, status(d)) for row in ds.values("model.detections") for d in row]
    assert all(st is not None for c, st in statuses if c >= 0.5)
    assert all(st is None for c, st in statuses if c < 0.5) and any(c < 0.5 for c, _ in statuses)
    assert "model.detections.with_model_status" in ds.get_run_info("with_model").config.fields
    # a panel's Recompute keeps the model rater and its score threshold
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measure_runs import rerun_values

    params = rerun_values(registry.get_run("agreement"), ds.get_run_info("with_model").config)
    assert params["model_fields"] == ["model"] and params["score_threshold"] == 0.5
    assert params["rater_fields"] == FIELDS


def test_the_operator_takes_model_fields_and_refuses_bad_ones(fo_isolated):
    import fiftyone.operators as foo

    ds = boxes_dataset(fo_isolated, seed=1)
    out = foo.execute_operator(URI, dataset=ds.name, params={
        "rater_fields": FIELDS, "model_fields": ["model"], "score_threshold": 0.5, "run_key": "op", "diagnostics":
            ["vitality", "collaboration"]})
    assert out.error is None
    assert load_results(ds, "op")["models"] == ["model"]
    with pytest.raises(SetupError, match="rater field"):
        compute_agreement_run(ds, rater_fields=FIELDS, model_fields=["raters_a"], run_key="bad")
    ds.add_sample_field("other", fo_isolated.EmbeddedDocumentField, embedded_doc_type=fo_isolated.Polylines)
    with pytest.raises(SetupError, match="Polylines"):
        compute_agreement_run(ds, rater_fields=FIELDS, model_fields=["other"], run_key="bad")
    with pytest.raises(SetupError, match="score_threshold"):
        compute_agreement_run(ds, rater_fields=FIELDS, model_fields=["model"], score_threshold=2, run_key="bad")
    assert "bad" not in ds.list_runs()


def _form(ds, **params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext({"dataset_name": ds.name, "view": ds.view()._serialize(), "params": params})
    return foo.get_operator(URI).resolve_input(ctx).type.properties


def test_the_form_offers_fields_of_the_raters_type_as_models(fo_isolated):
    ds = boxes_dataset(fo_isolated, n=3, seed=3)
    ds.add_sample_field("lines", fo_isolated.EmbeddedDocumentField, embedded_doc_type=fo_isolated.Polylines)
    props = _form(ds, layout="rater_fields", rater_fields=FIELDS, run_key="k")
    choices = [c.value for c in props["model_fields"].view.choices]
    assert choices == ["model"] and "score_threshold" not in props   # no Polylines, no rater field
    # with two raters chosen, the third rater's field may serve as a model; the threshold is checked
    props = _form(ds, layout="rater_fields", rater_fields=FIELDS[:2], run_key="k", model_fields=["raters_c"],
                  score_threshold=1.5)
    assert props["model_fields"].invalid and "score_threshold" in props["model_fields"].error_message
    props = _form(ds, layout="rater_fields", rater_fields=FIELDS, run_key="k", model_fields=["model"])
    assert not props["model_fields"].invalid and props["score_threshold"].default == 0.5
