"""Bad input through the operators' forms and the Python entries, on a real dataset: a clear error
(a form error where the App shows one) naming the sample / field / input at fault and the fix, or a
right answer, and nothing written, nothing of the user's overwritten. First rater lists and rater
fields; then predictions fields, tag-for-review, delete-run and views with fewer than two raters."""

import pytest

from tests.fiftyone.helpers import (COMPUTE, PLUGIN, refused, resolved_form as form, same_boxes_dataset as boxes_dataset,
                                   snapshot)


@pytest.mark.parametrize("value", [[["a"], ["b"]], ["a", None], [{"a": 1}]])
def test_a_sample_whose_rater_list_is_not_a_list_of_names_is_refused_by_name(fo_isolated, value):
    """An untyped list field passes the schema check; each sample's list is checked when read."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    fo = fo_isolated
    ds = boxes_dataset(fo, raters=("a", "b"), rater_list=False)
    ds.add_sample_field("rater_list", fo.ListField)
    ds.set_values("rater_list", [value] + [["a", "b"]] * (len(ds) - 1))
    first = ds.first()
    before = snapshot(ds)
    with pytest.raises(SetupError, match="rater_list must hold a list of rater names") as err:
        compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], run_key="kalos", bootstrap=0)
    assert first.id in str(err.value) and first.filepath in str(err.value) and "1 sample(s)" in str(err.value)
    assert "sample['rater_list'] = ['alice', 'bob']" in str(err.value)
    assert snapshot(ds) == before
    refused(COMPUTE, ds, "rater_list must hold a list", rater_fields=["raters_a", "raters_b"], run_key="kalos")


def test_integer_rater_names_in_rater_list_are_read_as_text(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    fo = fo_isolated
    ds = boxes_dataset(fo, raters=("1", "2"), rater_list=False)
    ds.set_values("rater_list", [[1, 2]] * len(ds))
    result = compute_agreement_run(ds, rater_fields=["raters_1", "raters_2"], run_key="kalos", bootstrap=0)
    assert result.mean_alpha == pytest.approx(1.0) and set(result.rater_summary) == {"1", "2"}


@pytest.mark.parametrize("value, held", [("a,b", "StringField"), (3, "IntField"), ({"a": 1}, "DictField"),
                                         ([1.5], "ListField of FloatField")])
def test_a_rater_list_field_of_another_type_is_a_form_error(fo_isolated, value, held):
    ds = boxes_dataset(fo_isolated, raters=("a", "b"), rater_list=False)
    ds.set_values("rater_list", [value] * len(ds))
    for uri in (COMPUTE, f"{PLUGIN}/calibrate", f"{PLUGIN}/label_convergence"):
        props = form(uri, ds, rater_fields=["raters_a", "raters_b"])
        assert "rater_fields" in props and props["rater_fields"].invalid, (uri, list(props))
        assert f"rater_list is a {held}" in props["rater_fields"].error_message
    refused(COMPUTE, ds, "sample['rater_list'] = ['alice', 'bob']", rater_fields=["raters_a", "raters_b"],
            run_key="kalos")


@pytest.mark.parametrize("field, text", [("nope", "field 'nope' does not exist"),
                                         ("cls", "field 'cls' holds Classifications"),
                                         ("coco_id", "field 'coco_id' is a IntField")])
def test_a_rater_field_that_is_not_a_label_field_names_what_it_is(fo_isolated, field, text):
    fo = fo_isolated
    ds = boxes_dataset(fo, raters=("a", "b"))
    ds.set_values("cls", [fo.Classifications(classifications=[fo.Classification(label="x")])] * len(ds))
    props = form(COMPUTE, ds, rater_fields=["raters_a", field])
    assert props["rater_fields"].invalid and text in props["rater_fields"].error_message
    assert "choose Detections, Polylines or Keypoints fields" in props["rater_fields"].error_message
    refused(COMPUTE, ds, text, rater_fields=["raters_a", field], run_key="kalos")


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000,
                                  '{"images": ' + "[" * 5000 + "]" * 5000 + ', "annotations": []}'])
def test_import_of_a_deeply_nested_json_is_a_form_error_naming_file_and_limit(fo_isolated, tmp_path, text):
    """Was a RecursionError out of json.load (a stack trace in the App)."""
    import sys
    path = tmp_path / "deep.json"
    path.write_text(text)
    ds = fo_isolated.Dataset()
    uri = f"{PLUGIN}/import_multirater_coco"
    props = form(uri, ds, labels_path=str(path))
    message = props["labels_path"].error_message
    assert props["labels_path"].invalid and str(path) in message
    assert f"nested more than about {sys.getrecursionlimit()} levels deep" in message
    refused(uri, ds, "levels deep", labels_path=str(path))
    assert len(ds) == 0 and ds.get_field_schema().keys() == {"id", "filepath", "tags", "metadata",
                                                              "created_at", "last_modified_at"}


# -- predictions, tag-for-review, delete-run, views without two raters -----------------------------

NOISE = f"{PLUGIN}/noise_aware_evaluation"
CONVERGENCE = f"{PLUGIN}/label_convergence"
AGREE = f"{PLUGIN}/compute_agreement"
TAG = f"{PLUGIN}/tag_for_review"
RATERS = ["raters_a", "raters_b"]


def with_fields(fo, ds, model=True):
    """Image sizes, a Classifications field ``cls``, a Polylines field ``poly`` and (``model``) a
    Detections field ``model`` with confidences."""
    for s in ds.iter_samples(autosave=True):
        s["metadata"] = fo.ImageMetadata(width=640, height=480)
        if model:
            s["model"] = fo.Detections(detections=[fo.Detection(label="cat", bounding_box=[0.1, 0.1, 0.3, 0.3],
                                                                confidence=0.9)])
        s["cls"] = fo.Classifications(classifications=[fo.Classification(label="x")])
        s["poly"] = fo.Polylines(polylines=[fo.Polyline(label="cat", points=[[(0.1, 0.1), (0.2, 0.1), (0.2, 0.2)]],
                                                        closed=True, filled=True)])
    return ds


@pytest.mark.parametrize("field, what", [("cls", "field 'cls' holds Classifications"),
                                         ("poly", "field 'poly' holds Polylines"),
                                         ("coco_id", "field 'coco_id' is a IntField"),
                                         ("nope", "field 'nope' does not exist")])
def test_a_predictions_field_of_the_wrong_kind_is_a_form_error_listing_those_that_qualify(fo_isolated, field, what):
    """Was "Invalid enum value" (and for a missing field a ValueError out of the noise-aware form)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.noise_aware import noise_aware_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.convergence import convergence_run
    ds = with_fields(fo_isolated, boxes_dataset(fo_isolated, raters=("a", "b", "c")))
    noise = dict(reference_field="raters_a", noise_fields=["raters_b"])
    props = form(NOISE, ds, predictions_field=field, **noise)
    message = props["predictions_field"].error_message
    assert props["predictions_field"].invalid and what in message
    assert message.endswith("choose a Detections field with confidences: raters_c, model")
    refused(NOISE, ds, what, predictions_field=field, run_key="na", **noise)
    props = form(CONVERGENCE, ds, rater_fields=RATERS, predictions_field=field)
    assert props["predictions_field"].invalid and what in props["predictions_field"].error_message
    assert "raters_c, model" in props["predictions_field"].error_message
    refused(CONVERGENCE, ds, what, rater_fields=RATERS, predictions_field=field, run_key="cv")
    before = snapshot(ds)
    with pytest.raises(SetupError, match=what) as err:
        noise_aware_run(ds, predictions_field=field, **noise)
    assert err.value.param == "predictions_field"
    with pytest.raises(SetupError, match=what):
        convergence_run(ds, rater_fields=RATERS, predictions_field=field, bootstrap=0)
    assert snapshot(ds) == before


@pytest.mark.parametrize("field, what", [("cls", "model field 'cls' holds Classifications, not Detections"),
                                         ("poly", "model field 'poly' holds Polylines, the raters Detections"),
                                         ("coco_id", "model field 'coco_id' is a IntField, not Detections"),
                                         ("nope", "model field 'nope' does not exist, not Detections")])
def test_a_model_rater_field_of_the_wrong_kind_lists_the_fields_that_qualify(fo_isolated, field, what):
    ds = with_fields(fo_isolated, boxes_dataset(fo_isolated, raters=("a", "b")))
    props = form(AGREE, ds, rater_fields=RATERS, model_fields=[field])
    message = props["model_fields"].error_message
    assert props["model_fields"].invalid and what in message
    assert message.endswith("choose among the Detections fields that are not raters: model")
    refused(AGREE, ds, what, rater_fields=RATERS, model_fields=[field], run_key="ag")


def test_a_dataset_without_predictions_says_what_is_missing(fo_isolated):
    """Was a bare "Required property" on the noise-aware form, and nothing on the convergence form."""
    fo = fo_isolated
    ds = with_fields(fo, boxes_dataset(fo, raters=("a", "b")), model=False)
    props = form(NOISE, ds)
    assert props["no_predictions"].view.label.startswith("No predictions field: no Detections field of this "
                                                         "dataset besides the raters' has labels with a confidence")
    assert props["predictions_field"].invalid
    assert "Add the model's predictions as a Detections field with a confidence" in \
        props["predictions_field"].error_message
    refused(NOISE, ds, "No predictions field", run_key="na")
    props = form(CONVERGENCE, ds, rater_fields=RATERS)
    assert "No predictions field" in props["no_predictions"].view.label and not props["predictions_field"].invalid
    ds.add_sample_field("model", fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
    ds.set_values("model", [fo.Detections(detections=[fo.Detection(label="cat", bounding_box=[0, 0, .1, .1],
                                                                   confidence=.5)])] * len(ds))
    assert "no_predictions" not in form(NOISE, ds) and "no_predictions" not in form(CONVERGENCE, ds,
                                                                                    rater_fields=RATERS)


# -- tag for review ---------------------------------------------------------------------------------

def agreed_run(fo, raters=("a", "b"), disagree=False):
    """An agreement run 'kalos'; ``disagree``: rater b missed a box on the first sample."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds = boxes_dataset(fo, raters=raters)
    if disagree:
        s = ds.first()
        s.raters_b.detections.pop()
        s.save()
    compute_agreement_run(ds, rater_fields=[f"raters_{r}" for r in raters], run_key="kalos", bootstrap=0)
    return ds


def test_tag_for_review_with_nothing_to_tag_is_refused(fo_isolated):
    """Was: an empty saved view 'kalos_review' and a result of zeros."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import tag_for_review
    ds = agreed_run(fo_isolated)
    props = form(TAG, ds, run_key="kalos", alpha_below=0.5)
    assert props["alpha_below"].invalid and "nothing to tag in run 'kalos': no sample has α below 0.5, no label " \
        "is unmatched, no label is class disagreement" in props["alpha_below"].error_message
    refused(TAG, ds, "nothing to tag", run_key="kalos", tag="review", alpha_below=0.5)
    before = snapshot(ds)
    with pytest.raises(SetupError, match="nothing to tag"):
        tag_for_review(ds, "kalos", alpha_below=0.5)
    assert snapshot(ds) == before and not ds.has_saved_view("kalos_review")


@pytest.mark.parametrize("on", ["sample", "label"])
def test_tag_for_review_never_mixes_silently_with_the_users_tag(fo_isolated, on):
    """Was: the user's tag silently joined (their tagged samples then showed in the run's view)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import tag_for_review
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import delete_agreement_run
    ds = agreed_run(fo_isolated, disagree=True)
    first = ds.last()
    if on == "sample":
        ds.select(first.id).tag_samples("review")
    else:
        ds.select_labels(ids=[first.raters_a.detections[0].id], fields="raters_a").tag_labels("review", "raters_a")
    props = form(TAG, ds, run_key="kalos", tag="review", alpha_below=1.0)
    n = "1 sample(s) and 0 label(s)" if on == "sample" else "0 sample(s) and 1 label(s)"
    assert props["tag"].invalid and f"tag 'review' is already on {n} that KaLOS did not tag" in \
        props["tag"].error_message
    assert props["join_tag"] is not None and props["join_tag"].view.label == "Add to the existing tag 'review'"
    refused(TAG, ds, "already on", run_key="kalos", tag="review", alpha_below=1.0)
    with pytest.raises(SetupError, match="confirm adding to the existing tag"):
        tag_for_review(ds, "kalos", tag="review", alpha_below=1.0)
    assert not props_invalid(form(TAG, ds, run_key="kalos", tag="kalos_review_2", alpha_below=1.0))
    counts = tag_for_review(ds, "kalos", tag="review", alpha_below=1.0, join_tag=True)
    assert counts["samples"] == 1 and counts["unmatched"] == 1
    delete_agreement_run(ds, "kalos")   # the user's tag stays where they put it
    if on == "sample":
        assert ds.match_tags("review").values("id") == [first.id]
    else:
        assert ds.count_label_tags() == {"review": 1} and ds.count_sample_tags() == {}


def props_invalid(props):
    return [k for k, p in props.items() if p is not None and p.invalid]


def test_tag_for_review_empty_tag_unknown_run_and_a_users_view(fo_isolated):
    ds = agreed_run(fo_isolated, disagree=True)
    for tag in ("", "   "):
        props = form(TAG, ds, run_key="kalos", tag=tag)
        assert props["tag"].invalid and "the tag name is empty: type the tag to add" in props["tag"].error_message
    props = form(TAG, ds, run_key="zzz")
    assert props["run_key"].invalid and "no run 'zzz'" in props["run_key"].error_message
    assert "KaLOS agreement runs: kalos" in props["run_key"].error_message
    ds.save_view("kalos_review", ds.limit(1))
    props = form(TAG, ds, run_key="kalos", alpha_below=1.0)
    assert props["view_name"].invalid and "saved view 'kalos_review' exists and was not made by KaLOS" in \
        props["view_name"].error_message
    refused(TAG, ds, "saved view 'kalos_review' exists", run_key="kalos", tag="review", alpha_below=1.0)
    assert len(ds.load_saved_view("kalos_review")) == 1


# -- delete a run -----------------------------------------------------------------------------------

def test_delete_refuses_what_is_not_a_kalos_run_and_removes_only_our_fields(fo_isolated):
    fo = fo_isolated
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError
    ds = agreed_run(fo)
    ds.add_sample_field("notes", fo.StringField)
    ds.set_values("notes", ["mine"] * len(ds))
    ds.register_run("other_plugin", ds.init_run(method="someone_else"))
    ds.evaluate_detections("raters_a", gt_field="raters_b", eval_key="ev")
    for uri in (f"{PLUGIN}/delete_kalos_run", f"{PLUGIN}/delete_agreement_run"):
        for key in ("nope", "other_plugin", "ev"):
            props = form(uri, ds, run_key=key)
            assert props["run_key"].invalid, (uri, key)
            refused(uri, ds, repr(key), run_key=key)
    for key in ("other_plugin", "nope"):
        with pytest.raises(SetupError, match="is not a KaLOS run"):
            run_store.delete_run(ds, key)
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext
    for uri in (f"{PLUGIN}/delete_kalos_run", f"{PLUGIN}/delete_agreement_run"):   # past the form: our words
        ctx = ExecutionContext(request_params={"dataset_name": ds.name, "params": {"run_key": "nope"},
                                               "delegated": True})
        with pytest.raises(SetupError, match="'nope'"):   # was FiftyOne's ValueError from get_run_info
            list(foo.get_operator(uri).execute(ctx))
    assert "other_plugin" in ds.list_runs() and ds.list_evaluations() == ["ev"] and ds.has_sample_field("ev_tp")
    from tests.fiftyone.helpers import try_operator as execute
    schema = set(ds.get_field_schema(flat=True))
    res = execute(f"{PLUGIN}/delete_kalos_run", ds, run_key="kalos")
    assert not res.error
    left = set(ds.get_field_schema(flat=True))
    assert {p for p in schema - left} == {p for p in schema if "kalos_" in p}, schema - left
    assert ds.values("notes") == ["mine"] * len(ds) and ds.has_sample_field("ev_tp")
    assert "other_plugin" in ds.list_runs() and ds.list_evaluations() == ["ev"]


# -- fewer than two raters --------------------------------------------------------------------------

MEASURES = {f"{PLUGIN}/compute_variations": ("rater_fields", dict(rater_fields=RATERS)),
            CONVERGENCE: ("rater_fields", dict(rater_fields=RATERS)),
            f"{PLUGIN}/calibrate": ("rater_fields", dict(rater_fields=RATERS)),
            NOISE: ("noise_fields", dict(predictions_field="model", reference_field="raters_a",
                                         noise_fields=["raters_b"]))}


@pytest.mark.parametrize("uri", list(MEASURES))
@pytest.mark.parametrize("how", ["rater_list", "one field"])
def test_a_view_with_one_rater_per_sample_is_a_form_error(fo_isolated, uri, how):
    """Was: no form error; variations ran and stored a run of nothing, calibrate failed on execute."""
    ds = with_fields(fo_isolated, boxes_dataset(fo_isolated, raters=("a", "b")))
    ds.set_values("raters_b", [None] * len(ds))
    if how == "rater_list":
        ds.set_values("rater_list", [["a"]] * len(ds))
        why = "every sample's rater_list names fewer than two raters, and no sample has two of the fields raters_a, raters_b where it has none"
    else:
        ds.delete_sample_field("rater_list")
        why = "no sample has two of the fields raters_a, raters_b"
    param, params = MEASURES[uri]
    props = form(uri, ds, **params)
    assert props[param].invalid, props_invalid(props)
    assert f"no sample in the view has two raters ({why})" in props[param].error_message
    refused(uri, ds, "at least two raters labelled one sample", run_key="k", **params)


@pytest.mark.parametrize("uri", list(MEASURES))
def test_an_empty_view_is_a_form_error(fo_isolated, uri):
    ds = with_fields(fo_isolated, boxes_dataset(fo_isolated, raters=("a", "b")))
    props = form(uri, ds.limit(0), **MEASURES[uri][1])
    assert props["run_key"].invalid and "the view has no samples" in props["run_key"].error_message
