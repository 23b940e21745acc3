"""One rule for every click (fiftyone_layer/views.py): the user's sort is kept, only the run's fields
are shown, a click about disagreement leaves agreeing samples out."""

import json

import numpy as np
import pytest

from tests.fiftyone.helpers import DISAGREEING, PLUGIN, Panel


@pytest.fixture(scope="module")
def ds(fields_ds):  # noqa: F811
    """The demo run plus an unrelated sample field ``extra`` (seeded random values)."""
    rng = np.random.default_rng(7)
    fields_ds.set_values("extra", [float(v) for v in rng.random(len(fields_ds))])
    return fields_ds


def _builders(ds):
    """Every agreement-run view builder, as ``name -> (callable(current) -> view)``."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import RunLayout, alpha_range_view, class_view, pair_disagreement_view, rater_disagreement_view

    lay = RunLayout.from_run(ds, "kalos")
    raters = sorted(lay.raters.values())
    label = ds.distinct(f"{lay.fields[0]}.detections.label")[0]
    return lay, {
        "alpha": lambda cur: alpha_range_view(ds, lay, -1.0, 1.0, include_hi=True, current=cur),
        "rater": lambda cur: rater_disagreement_view(ds, lay, raters[0], current=cur),
        "pair": lambda cur: pair_disagreement_view(ds, lay, raters[0], raters[-1], current=cur),
        "class": lambda cur: class_view(ds, lay, label, current=cur),
    }


def test_every_click_view_shows_only_the_runs_fields(ds):
    lay, builders = _builders(ds)
    assert "extra" in ds.get_field_schema()
    for name, build in builders.items():
        schema = set(build(None).get_field_schema())
        assert "extra" not in schema and "coco_id" not in schema, name
        assert {"kalos_alpha", "rater_list"} <= schema, name
        if name == "pair":   # the pair's two fields, no other rater's
            assert len(schema & set(lay.fields)) == 2
        else:
            assert set(lay.fields) <= schema, name


def test_the_users_sort_is_kept_else_alpha_ascending(ds):
    _, builders = _builders(ds)
    extra = dict(zip(ds.values("id"), ds.values("extra")))
    alpha = dict(zip(ds.values("id"), ds.values("kalos_alpha")))
    sorted_by_extra = ds.match({"extra": {"$gte": 0}}).sort_by("extra", reverse=True).limit(3)
    for name, build in builders.items():
        plain = build(None).values("id")
        assert len(plain) >= 2, name  # an order that could be wrong
        assert [alpha[i] for i in plain] == sorted(alpha[i] for i in plain), name
        kept = build(sorted_by_extra).values("id")
        # the same samples (only the sort stage carries over: not the match, not the limit) ...
        assert sorted(kept) == sorted(plain), name
        # ... in the user's order
        assert [extra[i] for i in kept] == sorted((extra[i] for i in kept), reverse=True), name
        assert kept != plain or len(set(kept)) < 2, name


def test_the_last_sort_stage_wins_and_a_view_without_sort_changes_nothing(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import user_sort

    assert user_sort(None) == [] and user_sort(ds.view()) == [] and user_sort(ds.match({})) == []
    (stage,) = user_sort(ds.sort_by("kalos_alpha").match({}).sort_by("extra", reverse=True))
    assert stage._field_or_expr == "extra" and stage._reverse is True


def test_a_class_click_leaves_out_samples_where_that_class_agrees(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import RunLayout, class_view

    lay = RunLayout.from_run(ds, "kalos")
    ids = ds.values("id")
    fewer = 0
    for label in ds.distinct(f"{lay.fields[0]}.detections.label"):
        used, disagree = set(), set()
        for f in lay.fields:
            for sid, ls, ss in zip(ids, ds.values(f"{f}.detections.label"), ds.values(f"{f}.detections.kalos_status")):
                for lab, s in zip(ls or [], ss or []):
                    if lab == label:
                        used.add(sid)
                        if s in DISAGREEING:
                            disagree.add(sid)
        view = class_view(ds, lay, label)
        assert set(view.values("id")) == disagree, label
        shown = {s for f in lay.fields for s in view.values(f"{f}.detections.kalos_status", unwind=True)}
        assert shown <= DISAGREEING, label
        fewer += len(disagree) < len(used)
    assert fewer  # some class agrees everywhere on some sample: the rule changed the count


def test_the_class_panel_click_keeps_the_apps_sort(ds):
    import fiftyone.core.view as fov
    import fiftyone.operators as foo

    p = Panel(ds, "kalos_class_difficulty").call("on_load")
    label = p.data["classes"][0]["y"][0]
    current = ds.sort_by("extra", reverse=True)
    res = foo.execute_operator(f"{PLUGIN}/kalos_class_difficulty", dataset=ds.name, view=current, params={
        "panel_id": "test-panel", "__method__": "on_click_class", "panel_state": json.loads(json.dumps(p.state)),
        "y": label})
    assert res.error is None, res.error
    (params,) = [r["params"] for r in res.executor.to_json()["requests"] if r["operator_uri"] == "set_view"]
    view = fov.DatasetView._build(ds, params["view"])
    extra = dict(zip(ds.values("id"), ds.values("extra")))
    got = [extra[i] for i in view.values("id")]
    assert len(got) >= 2 and got == sorted(got, reverse=True)
    assert "extra" not in view.get_field_schema()
