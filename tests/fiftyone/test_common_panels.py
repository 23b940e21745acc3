"""Common tests of every panel the plugin registers (FiftyOne's own list of them), driven as the
App drives them (helpers.Panel):

- without a run of its kind, the panel shows its empty state and the button that makes one;
- with a stored run (written by the operator the panel opens), it shows the run, without error;
- Recompute re-opens that operator's form with the stored run's set-up: every stored parameter
  (the engine's declared ones and the plugin's own inputs) is the form's value, and the form
  asks only to confirm the overwrite.
"""

import pytest

from tests.fiftyone.helpers import Panel, common_dataset, common_run_params, registered, run_operator, \
    validation_errors, video_dataset

PANELS = {p.name: p for p in registered("panel")}

@pytest.fixture(scope="module")
def runs_ds(fo_isolated, small_demo):
    """The common dataset (a small video dataset for the kinds that read video) with one run of every
    kind a panel shows, written by the operator the panel opens, in the order of the kinds' names (so
    the agreement run comes before the calibration): ``({kind: run key}, {kind: dataset}, fields)``."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry
    from kalos_core.video.data import synthetic_videos

    ds, fields = common_dataset(fo_isolated, small_demo)
    video = video_dataset(fo_isolated, synthetic_videos(n_videos=2, n_frames=8, n_raters=3, n_tracks=3, seed=3)[0])
    video_fields = ["frames.boxes_rater0", "frames.boxes_rater1", "frames.boxes_rater2"]
    keys, on = {}, {}
    for kind, uri in sorted({p.METHOD: p.ACTION_URI for p in PANELS.values()}.items()):
        name = uri.rsplit("/", 1)[1]
        reads_video = registry.run_of(kind).video
        on[kind] = video if reads_video else ds
        before = set(on[kind].list_runs())
        run_operator(name, on[kind], **common_run_params(name, on[kind], video_fields if reads_video else fields,
                                                          f"panel_{kind}"))
        (keys[kind],) = set(on[kind].list_runs()) - before
    return keys, on, fields


def test_the_plugin_registers_panels_each_showing_a_run_kind_an_operator_writes():
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store

    operators = {op.uri for op in registered("operator")}
    assert "kalos_agreement_overview" in PANELS
    for panel in PANELS.values():
        assert panel.METHOD in run_store.kinds() and panel.ACTION_URI in operators, panel.name


@pytest.fixture(scope="module")
def empty_ds(fo_isolated, small_demo):
    """The common dataset, without runs."""
    return common_dataset(fo_isolated, small_demo)[0]


@pytest.mark.parametrize("name", list(PANELS))
def test_without_a_run_the_panel_shows_its_empty_state(empty_ds, name):
    p = Panel(empty_ds, name).call("on_load")
    assert {"empty_state", "open_operator"} <= p.rendered()
    assert not p.state.get("run_key") and not p.state.get("error")
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == PANELS[name].ACTION_URI


@pytest.mark.parametrize("name", list(PANELS))
def test_a_stored_run_is_shown_without_error(runs_ds, name):
    keys, on, _ = runs_ds
    p = Panel(on[PANELS[name].METHOD], name).call("on_load")
    assert p.state["run_key"] == keys[PANELS[name].METHOD]
    assert not p.state.get("error"), p.state["error"]
    assert "empty_state" not in p.rendered() and len(p.rendered()) > 2, p.rendered()


def _same(p, form_value, stored) -> bool:
    """The form's value of parameter ``p``, read as the operators read it (an empty input: the
    default; an unticked box of an optional flag: its default rule), is the stored value."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measure_runs import value_of

    if form_value in (None, "", []) or (p.kind == "bool" and p.optional and form_value is False):
        form_value = p.default
    else:
        form_value = value_of(p, form_value)   # an optional choice's "default" is None
    if stored is None or form_value is None:
        return stored is None and form_value is None
    return form_value == p.check(stored)


def _not_restored(runs_ds, name) -> list:
    """``(parameter, stored value, form value)`` of every stored parameter that the form Recompute
    opens shows otherwise (what the panel declares it adds, ``RERUN_ADDS``, aside)."""
    from kalos_core.measure import measures

    keys, on, _ = runs_ds
    panel, key, ds = PANELS[name], keys[PANELS[name].METHOD], on[PANELS[name].METHOD]
    (prompt,) = Panel(ds, name).call("on_load").call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == panel.ACTION_URI
    params = prompt["params"]
    assert params["run_key"] == key
    errors, props = validation_errors(panel.ACTION_URI.rsplit("/", 1)[1], ds, params)
    assert set(errors) == {"overwrite"}, errors   # it takes every value and asks only to confirm the overwrite
    form = {k: params.get(k, getattr(props[k], "default", None)) for k in props}
    adds = getattr(panel, "RERUN_ADDS", {})
    cfg = ds.get_run_info(key).config
    (measure,) = [m for m in measures() if m.method == panel.METHOD]
    differ = []
    for p in measure.params:
        if not hasattr(cfg, p.name):
            continue
        stored = getattr(cfg, p.name)
        if p.name in props:
            ok = _same(p, form[p.name], stored) or (p.name == "lsa_thresholds" and not stored
                                                     and form[p.name] == adds.get("lsa_thresholds"))
        elif p.group in props:
            ok = (p.name in (form[p.group] or [])) == bool(stored) or p.name == adds.get("diagnostics")
        else:   # no input (a parameter this side does not offer; a stored key of that name is another thing)
            continue
        if not ok:
            differ.append((p.name, stored, form.get(p.name, form.get(p.group))))
    for k in set(props) - {p.name for p in measure.params} - {"run_key", "overwrite"}:   # the plugin's own inputs
        stored = getattr(cfg, k, None)   # None: the input was left at its default
        if hasattr(cfg, k) and form[k] != (getattr(props[k], "default", None) if stored is None else stored):
            differ.append((k, getattr(cfg, k), form[k]))
    return differ


@pytest.mark.parametrize("name", list(PANELS))
def test_recompute_reopens_the_form_with_the_stored_config(runs_ds, name):
    """Every stored parameter comes back, a stored "default rule" (None, e.g. agreement's distance
    when a calibration would propose another) included."""
    assert not _not_restored(runs_ds, name)
