"""Common tests of every operator the plugin registers (FiftyOne's own list of them, not one kept
here), like tests/core/test_common_measures.py for the engine's measures: a newly registered
operator is checked without editing this file.

- every form renders, on a dataset without runs and on one with runs;
- every number, choice and number-list input refuses a bad value (built from the input's type
  and the engine's declared bounds) with an error on that input;
- every kind of run (run_store.kinds()) has an operator that writes it, which refuses to replace
  a run without asking and whose run, deleted, leaves the dataset exactly as it was: documents,
  schema, runs, saved views, info and App config (the user's field, label attribute and saved
  view included).
"""

import pytest
from fiftyone.operators.executor import ExecutionError

from tests.fiftyone.helpers import (bad_values, common_dataset, common_run_params, form_params, registered, run_operator,
                                    run_state, run_writers, try_operator, validation_errors, video_dataset)

OPERATORS = [op.name for op in registered("operator")]
WRITERS = run_writers()


@pytest.fixture(scope="module")
def form_ds(fo_isolated, small_demo):
    """The common dataset with an agreement run ``kalos`` and its consensus (forms that need them)."""
    ds, fields = common_dataset(fo_isolated, small_demo)
    run_operator("compute_agreement", ds, rater_fields=fields, run_key="kalos", bootstrap=0)
    run_operator("build_consensus", ds, agreement_key="kalos")
    return ds, fields


@pytest.fixture(scope="module")
def run_ds(fo_isolated, small_demo):
    """The common dataset with an agreement run ``kalos`` (build_consensus reads one)."""
    ds, fields = common_dataset(fo_isolated, small_demo, seed=1)
    run_operator("compute_agreement", ds, rater_fields=fields, run_key="kalos", bootstrap=0)
    return ds, fields


@pytest.fixture(scope="module")
def video_ds(fo_isolated):
    """A small video dataset (frame fields ``boxes_<rater>``): the data of the measures that read video."""
    from kalos_core.video.data import synthetic_videos

    videos, _ = synthetic_videos(n_videos=2, n_frames=6, n_raters=2, n_tracks=3, seed=3)
    return video_dataset(fo_isolated, videos), ["frames.boxes_rater0", "frames.boxes_rater1"]


def _reads_video(kind: str) -> bool:
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry

    return registry.run_of(kind).video


def test_the_plugin_registers_operators_and_every_run_kind_has_a_writer():
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store

    assert "compute_agreement" in OPERATORS and len(OPERATORS) == len(set(OPERATORS))
    assert set(WRITERS) == set(run_store.kinds()), "a run kind without an operator that writes it"
    assert set(WRITERS.values()) <= set(OPERATORS)


@pytest.mark.parametrize("name", OPERATORS)
def test_every_form_renders_without_runs_and_with_them(fo_isolated, form_ds, name):
    empty = fo_isolated.Dataset()
    ds, fields = form_ds
    for target, params in ((empty, {}), (ds, {}), (ds, form_params(name, fields))):
        errors, props = validation_errors(name, target, params)
        assert props, f"{name}: an empty form"
        assert all(isinstance(reason, str) and reason for reason in errors.values()), errors


def _accepted(name, ds, params) -> list:
    """``(input, bad value, what happened)`` for every bad value an input of ``name``'s form takes
    (the other inputs at ``params``, else at the defaults the form shows, as the App sends them)."""
    _, props = validation_errors(name, ds, params)
    params = {**{k: p.default for k, p in props.items() if getattr(p, "default", None) is not None}, **params}
    errors, props = validation_errors(name, ds, params)
    out = []
    for key, prop in props.items():
        if key in errors:   # already refused with the form's own values: nothing to learn here
            continue
        for bad in bad_values(key, prop):
            try:
                got, _ = validation_errors(name, ds, {**params, key: bad})
            except Exception as e:   # a form that does not render is no form error
                out.append((key, bad, f"{type(e).__name__}: {e}"))
                continue
            if key not in got:
                out.append((key, bad, "accepted"))
    return out


@pytest.mark.parametrize("name", OPERATORS)
def test_every_number_and_choice_input_refuses_a_bad_value_naming_it(form_ds, name):
    ds, fields = form_ds
    accepted = _accepted(name, ds, form_params(name, fields))
    assert not accepted, accepted


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_run_is_replaced_only_when_asked_and_deleting_it_leaves_the_dataset_as_it_was(request, kind):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store

    ds, fields = request.getfixturevalue("video_ds" if _reads_video(kind) else "run_ds")
    name = WRITERS[kind]
    params = common_run_params(name, ds, fields, f"common_{kind}")
    errors, _ = validation_errors(name, ds, params)
    assert not errors, f"{name}'s form is not ready to run: {errors}"
    before, runs = run_state(ds), set(ds.list_runs())
    run_operator(name, ds, **params)
    (key,) = set(ds.list_runs()) - runs
    assert ds.get_run_info(key).config.method == kind
    written = run_state(ds)
    assert written != before

    # the same set-up again: the form asks to confirm, the run is refused, nothing is written
    errors, _ = validation_errors(name, ds, params)
    assert "overwrite" in errors or any("overwrit" in reason for reason in errors.values()), errors
    with pytest.raises(ExecutionError, match="overwrit"):
        try_operator(name, ds, **params)
    assert run_state(ds) == written

    run_store.delete_run(ds, key)
    assert run_state(ds) == before
