"""Issue 22, the FiftyOne side: bad input through the operators and the Python API is a clear
error naming the sample / field at fault and the fix, and writes nothing."""

import pytest

from tests.fiftyone.test_operator_safety import COMPUTE, PLUGIN, boxes_dataset, form, refused, snapshot


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
