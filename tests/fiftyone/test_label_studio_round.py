"""A second round in Label Studio, the parts that need no server: the refusals before anything is sent or
written, the rule that keeps a round-1 rater from reading as "drew nothing", and the round comparison
(hand-set α). The round trip itself: tests/labelstudio/test_label_studio_round.py (a real server)."""

import math
import uuid

import pytest


@pytest.fixture
def lsr(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round

    return label_studio_round


@pytest.fixture
def ds(fo_isolated):
    fo = fo_isolated
    ds = fo.Dataset(f"kalos-lsr-{uuid.uuid4().hex[:8]}")
    ds.add_samples([fo.Sample(filepath=f"/nowhere/{i}.png", rater_list=["r1", "r2"]) for i in range(3)])
    ds.save_view("kalos_review", ds.limit(2))
    yield ds
    ds.delete()


def test_sending_refuses_before_contacting_anyone(lsr, ds, fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    url, token = "http://127.0.0.1:9", "t"   # nothing listens: a refusal must come first
    with pytest.raises(SetupError, match="no saved view 'queue'.*tag for review") as e:
        lsr.send_review_to_label_studio(ds, "queue", "round2", url, token, ["cat"])
    assert e.value.param == "view_name"
    with pytest.raises(SetupError, match="give the classes"):   # no rater fields to take them from
        lsr.send_review_to_label_studio(ds, "kalos_review", "round2", url, token)
    with pytest.raises(SetupError, match="raters_per_task must be a whole number >= 1, got 0"):
        lsr.send_review_to_label_studio(ds, "kalos_review", "round2", url, token, ["cat"], raters_per_task=0)
    ds.add_sample_field("round2" + lsr.UPLOAD_SUFFIX, fo_isolated.StringField)
    with pytest.raises(SetupError, match="field 'round2_ls_upload' exists") as e:
        lsr.send_review_to_label_studio(ds, "kalos_review", "round2", url, token, ["cat"])
    assert e.value.param == "label_field"
    ds.delete_sample_field("round2" + lsr.UPLOAD_SUFFIX)
    with pytest.raises(SetupError, match=r"^2 of the 2 image files to send do not exist \(/nowhere/0.png, "
                                         r"/nowhere/1.png\): Label Studio gets the images themselves") as e:
        lsr.send_review_to_label_studio(ds, "kalos_review", "round2", url, token, ["cat"])
    assert e.value.param == "view_name" and ds.list_annotation_runs() == []


def test_a_server_that_does_not_answer_is_said_in_words():
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.label_studio_api import check_server

    with pytest.raises(SetupError, match=r"^no Label Studio answers at http://127.0.0.1:9 \(ConnectionError\): "
                                         "start it") as e:
        check_server("http://127.0.0.1:9", "t")
    assert e.value.param == "url"


def test_loading_refuses_a_bad_prefix_and_an_unknown_round(lsr, ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    with pytest.raises(SetupError, match="prefix must start with a letter"):
        lsr.load_label_studio_round(ds, "round2", prefix="2nd round")
    with pytest.raises(SetupError, match="no annotation run 'round2'.*runs: none"):
        lsr.load_label_studio_round(ds, "round2")


def test_a_round1_rater_named_again_must_have_annotated_their_samples(lsr):
    lists = {"s1": ["r1", "r2"], "s2": ["r1", "r2"], "s3": None}
    both = {"r1": {"s1": 0, "s2": 0}, "r2": {"s1": 0, "s2": 0}}
    assert lsr._assigned_without_labels(lists, both) is None
    assert lsr._assigned_without_labels(lists, {"alice@x": {"s1": 0}, "r2": {"s1": 0, "s2": 0}}) is None
    problem = lsr._assigned_without_labels(lists, {"r1": {"s1": 0}, "r2": {"s1": 0, "s2": 0}})
    assert problem.startswith("sample s2: 'r1' is in its rater_list but has no round-2 annotation")


def test_compare_rounds_pairs_the_images_both_runs_scored(lsr, ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError

    ds.set_values("kalos_alpha", [0.5, -0.5, 1.0])
    with pytest.raises(SetupError, match="no per-image α of run 'round2' \\(field round2_alpha\\)"):
        lsr.compare_rounds(ds, "kalos", "round2")
    ds.set_values("round2_alpha", [0.75, -0.5, None])   # the third sample was not in round 2
    out = lsr.compare_rounds(ds, "kalos", "round2")
    assert out["samples"] == 2 and out["changed"] == 1 and (out["improved"], out["worsened"]) == (1, 0)
    assert (out["scored_first"], out["scored_second"], out["same_samples"]) == (3, 2, False)
    assert out["mean_first"] == 0.0 and out["mean_second"] == 0.125
    ds.set_values("round2_alpha", [math.nan, -0.5, None])   # an undefined α is left out too
    assert lsr.compare_rounds(ds, "kalos", "round2")["samples"] == 1


def test_the_forms_say_how_to_install_a_missing_sdk_before_anything_is_filled(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.label_studio_api import SDK_INSTALL, sdk_problem

    from tests.fiftyone.helpers import resolved_form

    if sdk_problem() is None:
        pytest.skip("label_studio_sdk imports in this environment")
    assert SDK_INSTALL.startswith("pip install --no-deps label-studio-sdk==2.1.2 ")   # numpy, OpenCV untouched
    for name in ("send_to_label_studio", "load_label_studio_round"):
        form = resolved_form(name, ds)
        assert list(form) == ["no_sdk"], (name, list(form))   # nothing to fill in before it is installed
        said = form["no_sdk"].view.description.replace("\\", "")   # the form escapes markdown
        assert SDK_INSTALL in said and "missing: label_studio_sdk" in said


def test_a_loaded_rounds_agreement_form_proposes_only_that_rounds_fields(ds, fo_isolated):
    """What loading a round writes (its fields, their raters in kalos_import, kalos_rounds, the saved
    view): compute_agreement's form on that view proposes the round's fields; elsewhere round 1's."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    fo = fo_isolated
    fields = {"raters_r1": "r1", "raters_r2": "r2", "round2_r1": "r1", "round2_r2": "r2"}
    for field in fields:
        ds.set_values(field, [fo.Detections(detections=[fo.Detection(label="cat", bounding_box=[.1, .1, .2, .2],
                                                                     rater_id=fields[field])])] * len(ds))
    ds.info["kalos_import"] = {"rater_fields": fields}
    ds.info["kalos_rounds"] = {"round2": {"fields": ["round2_r1", "round2_r2"], "left_out": {},
                                          "view": "round2_samples"}}
    ds.save()
    ds.save_view("round2_samples", ds.limit(2))

    def proposed(view_name):
        ctx = ExecutionContext({"dataset_name": ds.name, "view_name": view_name, "params": {}})
        form = foo.get_operator("@kalos/agreement/compute_agreement").resolve_input(ctx).type.properties
        return form["rater_fields"].default

    assert proposed("round2_samples") == ["round2_r1", "round2_r2"]
    assert proposed("kalos_review") == proposed(None) == ["raters_r1", "raters_r2"]
