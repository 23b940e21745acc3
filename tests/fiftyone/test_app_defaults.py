"""What the App offers by default (the FiftyOne side; tests/e2e/test_app_defaults.py reads what the App shows):
``make app`` leaves FiftyOne's execution mode alone, the threshold follows the chosen distance,
status colours stay on the run's fields, noise-aware evaluation says why it cannot run, and
help texts keep their field names."""

import functools
import re

import pytest

from tests.fiftyone.helpers import (PLUGIN, demo_data, rater_dataset, resolved_form as form, run_operator as execute,
                                   same_boxes_dataset as boxes_dataset)

make_dataset = functools.partial(rater_dataset, annotation_ids=False)   # calibration's datasets: no label ids


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_data(tmp_path_factory, n_images=16, seed=2)

AGREE = f"{PLUGIN}/compute_agreement"
CALIBRATE = f"{PLUGIN}/calibrate"
NOISE = f"{PLUGIN}/noise_aware_evaluation"


# -- 1. make app: FiftyOne's own settings, a worker only on request ------------------------------------

def test_make_app_sets_the_legacy_orchestrator_switch_only_with_a_worker(fo_isolated):
    import fiftyone.operators as foo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.demo import app_environment

    assert "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS" not in app_environment(worker=False)
    assert app_environment(worker=True)["FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS"] == "true"

    # why it matters: FiftyOne's own field operators prefer delegation, so with the switch on the App
    # picks "Schedule" for them; without it (FiftyOne's default) "Schedule" is not available and
    # "Execute" is the choice, for them and for KaLOS's operators
    assert fo_isolated.config.allow_legacy_orchestrators is False
    for uri in ("@voxel51/operators/clone_sample_field", AGREE):
        options = foo.get_operator(uri).resolve_execution_options(None)
        assert options.allow_immediate_execution and options.allow_delegated_execution
        assert options.orchestrator_registration_enabled and not options.available_orchestrators
    assert foo.get_operator("@voxel51/operators/clone_sample_field").config.default_choice_to_delegated
    assert not foo.get_operator(AGREE).config.default_choice_to_delegated


# -- 2. the threshold follows the distance -------------------------------------------------------------

def test_switching_the_distance_switches_the_threshold_to_its_calibrated_or_standard_value(fo_isolated, demo):  # noqa: F811
    ds, fields = make_dataset(fo_isolated, demo)
    execute(CALIBRATE, ds, rater_fields=fields, bootstrap=0, seed=1, distances=["centroid", "giou", "iou"])
    found = ds.get_run_info("kalos_calibration").config.thresholds
    assert set(found) == {"centroid", "giou", "iou"} and len({round(t, 3) for t in found.values()}) == 3
    for distance in ("centroid", "giou", "iou"):
        f = form(AGREE, ds, rater_fields=fields, distance=distance)
        assert f["threshold"].default == round(found[distance], 3), distance    # as shown, which is as used
        assert f"calibration run 'kalos_calibration' found for {distance}" in _unescape(f["threshold"].view.description)
    f = form(AGREE, ds, rater_fields=fields, distance="centroid_box")      # not calibrated: its standard value
    assert f["threshold"].default == 0.5 and "standard value for centroid_box" in _unescape(f["threshold"].view.description)
    # a run at GIoU's calibrated threshold records the calibration it came from
    for key, t in (("g", found["giou"]), ("shown", round(found["giou"], 3))):   # stored or shown precision
        execute(AGREE, ds, rater_fields=fields, run_key=key, distance="giou", threshold=t, bootstrap=0)
        assert ds.get_run_info(key).config.calibration_key == "kalos_calibration"


def test_a_calibration_stored_without_per_distance_thresholds_is_read_from_its_results(fo_isolated, demo):  # noqa: F811
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import load_calibration, threshold_for

    ds, fields = make_dataset(fo_isolated, demo)
    execute(CALIBRATE, ds, rater_fields=fields, bootstrap=0, distances=["centroid", "giou"])
    info = ds.get_run_info("kalos_calibration")
    del info.config.thresholds      # as stored before the config kept them
    ds.update_run_config("kalos_calibration", info.config)
    ref, t = threshold_for(ds, "giou", "Detections")
    assert ref.key == "kalos_calibration"
    assert t == load_calibration(ds, "kalos_calibration")["distances"]["giou"]["similarity_threshold"]
    assert threshold_for(ds, "iou", "Detections") == (None, None)


# -- 3. status colours only on the run's fields ----------------------------------------------------------

def test_other_fields_keep_one_colour_and_the_users_later_changes_survive_the_delete(fo_isolated):
    fo = fo_isolated
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import status_colors
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run, delete_agreement_run

    ds = boxes_dataset(fo, raters=("a", "b", "c"))
    raters = ["raters_a", "raters_b"]
    compute_agreement_run(ds, rater_fields=raters, run_key="k", bootstrap=0)
    by_path = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert by_path["raters_c"]["colorByAttribute"] == "kalos_one_colour"
    # a field added after the run (a consensus, a model) is settled too
    ds.set_values("later", [fo.Detections(detections=[fo.Detection(label="x")])] * len(ds))
    status_colors.settle(ds)
    by_path = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert by_path["later"]["colorByAttribute"] == "kalos_one_colour"
    assert by_path["later"]["fieldColor"] != by_path["raters_c"]["fieldColor"]
    # the user recolours raters_c in the App meanwhile: their entry is theirs, the delete keeps it
    scheme = ds.app_config.color_scheme
    mine = {"path": "raters_c", "fieldColor": "#101010"}
    scheme.fields = [mine if e["path"] == "raters_c" else e for e in scheme.fields]
    ds.app_config.color_scheme = scheme
    ds.save()
    delete_agreement_run(ds, "k")
    scheme = ds.app_config.color_scheme
    assert scheme.fields == [mine] and scheme.color_by is None          # as it was: the App's default
    assert "kalos_color_fields_before" not in ds.info and "kalos_color_by_before" not in ds.info


def test_a_scheme_that_already_coloured_by_value_is_left_so(fo_isolated):
    fo = fo_isolated
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run, delete_agreement_run

    ds = boxes_dataset(fo, raters=("a", "b", "c"))
    ds.app_config.color_scheme = fo.ColorScheme(color_by="value")
    ds.save()
    compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], run_key="k", bootstrap=0)
    assert {e["path"] for e in ds.app_config.color_scheme.fields} == {"raters_a", "raters_b", "k_alpha"}
    delete_agreement_run(ds, "k")
    assert ds.app_config.color_scheme.fields == [] and ds.app_config.color_scheme.color_by == "value"


# -- 4. noise-aware evaluation without predictions ------------------------------------------------------

def test_noise_aware_without_predictions_says_what_is_missing_and_offers_nothing(fo_isolated):
    fo = fo_isolated
    ds = boxes_dataset(fo, raters=("a", "b"))
    props = form(NOISE, ds)
    assert set(props) == {"no_predictions", "predictions_field"}    # no rater field offered as predictions
    assert type(props["no_predictions"].view).__name__ == "Error"
    assert "Add the model's predictions as a Detections field with a confidence" in props["no_predictions"].view.label
    assert type(props["predictions_field"].view).__name__ == "HiddenView" and props["predictions_field"].invalid
    ds.set_values("model", [fo.Detections(detections=[fo.Detection(label="cat", bounding_box=[0, 0, .1, .1],
                                                                   confidence=.5)])] * len(ds))
    props = form(NOISE, ds)
    assert [c.value for c in props["predictions_field"].view.choices] == ["model"]   # only fields with confidences
    assert "fields that have them: model" in _unescape(props["predictions_field"].view.description)


# -- help texts keep their field names -----------------------------------------------------------------

def _unescape(text: str) -> str:
    """What CommonMark shows for backslash escapes of punctuation."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


@pytest.mark.parametrize("text", ["<run_key>_status_<statuses>", "a*b [c] `d` \\e", "plain text"])
def test_md_text_shows_the_text_as_written(text):
    from fiftyone.plugins.orgs.kalos.agreement.operators.common import md_text

    escaped = md_text(text)
    assert _unescape(escaped) == text
    assert not re.search(r"(?<!\\)[_*<>\[\]`]", escaped)


def test_every_form_help_text_is_escaped(fo_isolated):
    ds = boxes_dataset(fo_isolated, raters=("a", "b"))
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    compute_agreement_run(ds, rater_fields=["raters_a", "raters_b"], run_key="kalos", bootstrap=0)
    statuses = form(f"{PLUGIN}/browse_disagreements", ds)["statuses"]
    assert statuses.view.description.endswith(r"\<run\_key\>\_disagreements (the default statuses) or "
                                              r"\<run\_key\>\_status\_\<statuses\>")
    key = form(AGREE, ds, rater_fields=["raters_a", "raters_b"])["run_key"]
    assert _unescape(key.view.description) == "results go to <run_key>_alpha, <run_key>_unit, <run_key>_status"
    assert key.view.to_json()["description"] == key.view.description     # what the App receives


def test_make_app_replaces_a_plugins_link_left_by_another_checkout(fo_isolated, tmp_path):
    """Was: a link left by a checkout since removed stopped `make app` with FileExistsError."""
    from pathlib import Path

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import demo

    link = Path(demo.plugins_dir()) / "kalos-agreement"
    link.unlink()
    link.symlink_to(tmp_path / "gone", target_is_directory=True)
    assert Path(demo.plugins_dir()) == link.parent and link.resolve() == demo.REPO.resolve()
