"""The plugin writes only its own things: saved views a run did not make are never replaced nor
deleted, the review view and tags are recorded on the run and go with it, and the user's own
colour-scheme entries come back exactly when a run's status colours go (real database)."""

import time
import uuid

import pytest

PLUGIN = "@kalos/agreement"
FIELDS = ["raters_r1", "raters_r2", "raters_r3"]


def execute(name, ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(f"{PLUGIN}/{name}", dataset=ds.name, params=params)


def refused(name, ds, **params) -> str:
    """The error message of a refused call (a validation error raises; an error in execute is returned)."""
    try:
        res = execute(name, ds, **params)
    except Exception as e:  # noqa: BLE001 - FiftyOne's ExecutionError
        return str(e)
    return res.error or ""


def ok(name, ds, **params):
    res = execute(name, ds, **params)
    assert res.error is None, res.error
    return res


def form_props(name, ds, **params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "params": params})
    return foo.get_operator(f"{PLUGIN}/{name}").resolve_input(ctx).type.properties


def form_errors(name, ds, **params):
    props = form_props(name, ds, **params)
    return {k: p.error_message for k, p in props.items() if p.invalid}


@pytest.fixture()
def ds(fo_isolated):
    """Sample 1: r1, r2 draw A and r3 B on one object, r1 alone a second box (low α);
    sample 2: all agree (high α). No run yet."""
    fo = fo_isolated
    ds = fo.Dataset(f"kalos-safe-{uuid.uuid4().hex[:8]}")
    d = lambda label, box: fo.Detection(label=label, bounding_box=box)  # noqa: E731
    s1 = fo.Sample(filepath="/nonexistent/1.jpg", metadata=fo.ImageMetadata(width=100, height=100))
    s1["raters_r1"] = fo.Detections(detections=[d("A", [0.10, 0.10, 0.30, 0.30]), d("A", [0.70, 0.70, 0.20, 0.20])])
    s1["raters_r2"] = fo.Detections(detections=[d("A", [0.12, 0.10, 0.30, 0.32])])
    s1["raters_r3"] = fo.Detections(detections=[d("B", [0.10, 0.12, 0.28, 0.30])])
    s2 = fo.Sample(filepath="/nonexistent/2.jpg", metadata=fo.ImageMetadata(width=100, height=100))
    for f in FIELDS:
        s2[f] = fo.Detections(detections=[d("A", [0.2, 0.2, 0.4, 0.4]), d("B", [0.7, 0.1, 0.2, 0.2])])
    ds.add_samples([s1, s2])
    yield ds
    ds.delete()


def agreement(ds, key="kalos"):
    ok("compute_agreement", ds, rater_fields=FIELDS, run_key=key, bootstrap=0)


def label_tags(ds, tag):
    return {f: [[tag in (d.tags or []) for d in row] for row in ds.values(f"{f}.detections")] for f in FIELDS}


# -- 1. tag_for_review ---------------------------------------------------------------------------

def test_tag_for_review_refuses_a_saved_view_it_did_not_make(ds):
    agreement(ds)
    ds.save_view("mine", ds.limit(1))
    ds.save_view("kalos_review", ds.skip(1))  # the user's, under the default name
    for name, shown in ((None, "kalos_review"), ("mine", "mine")):
        errs = form_errors("tag_for_review", ds, run_key="kalos", tag="check", view_name=name)
        assert "view_name" in errs and repr(shown) in errs["view_name"]
        assert repr(shown) in refused("tag_for_review", ds, run_key="kalos", tag="check", alpha_below=0.5,
                                      view_name=name)
    # nothing was tagged, both views are the user's as they were
    assert ds.count_sample_tags() == {} and not any(t for v in label_tags(ds, "check").values() for r in v for t in r)
    assert ds.load_saved_view("mine").values("id") == ds.values("id")[:1]
    assert ds.load_saved_view("kalos_review").values("id") == ds.values("id")[1:]


def test_tag_for_review_is_recorded_and_deleting_the_run_undoes_it(ds):
    agreement(ds)
    ds.save_view("mine", ds.limit(1))
    # the user's own "check" tag, before KaLOS: on sample 1 and on r1's first box of sample 1
    first = ds.first()
    first.tags.append("check")
    first["raters_r1"].detections[0].tags = ["check"]
    first.save()
    level = sum(ds.values("kalos_alpha")) / 2
    # joining the user's tag is refused unless confirmed (test_operator_bad_input); confirmed here
    ok("tag_for_review", ds, run_key="kalos", tag="check", alpha_below=level, view_name="to_look_at", join_tag=True)
    assert ds.has_saved_view("to_look_at")
    cfg = ds.get_run_info("kalos").config
    assert "to_look_at" in cfg.views
    [rec] = ds.load_run_results("kalos").review_tags
    # sample 1 had the tag already; of its labels r1's first box had it: r1's second box, r2's and r3's are new
    assert rec["tag"] == "check" and rec["samples"] == []
    assert {f: len(ids) for f, ids in rec["labels"].items()} == {"raters_r1": 1, "raters_r2": 1, "raters_r3": 1}
    assert label_tags(ds, "check")["raters_r1"][0] == [True, True]
    # a second call may replace the view it made itself
    ok("tag_for_review", ds, run_key="kalos", tag="later", unmatched=True, view_name="to_look_at")
    assert len(ds.load_run_results("kalos").review_tags) == 2
    notice = form_props("delete_agreement_run", ds, run_key="kalos")["fields"].view.label.replace("\\_", "_")   # markdown-escaped
    assert "saved view to_look_at" in notice and "tag check" in notice and "tag later" in notice
    assert "saved view mine" not in notice
    ok("delete_agreement_run", ds, run_key="kalos")
    assert not ds.has_saved_view("to_look_at") and ds.has_saved_view("mine")
    # the tags the run added are gone; the user's own "check" tags stay
    assert ds.count_sample_tags() == {"check": 1} and "check" in ds.first().tags
    tags = label_tags(ds, "check")
    assert tags["raters_r1"][0] == [True, False] and tags["raters_r2"][0] == [False] and tags["raters_r3"][0] == [False]
    assert not any(t for v in label_tags(ds, "later").values() for r in v for t in r)


def test_select_saved_view_reloads_waits_then_selects_by_name(fo_isolated, monkeypatch):
    from fiftyone.operators.executor import ExecutionContext, Executor

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import saved_views

    ds = fo_isolated.Dataset()
    monkeypatch.setattr(saved_views, "APP_RELOAD_S", 0.3)
    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "params": {}}, executor=Executor())
    t0 = time.perf_counter()
    ops = [m.body for m in saved_views.select_saved_view(ctx, "some_view")]
    assert time.perf_counter() - t0 >= 0.3
    assert [o.operator_uri for o in ops] == ["reload_dataset", "set_view"]
    assert ops[1].params == {"name": "some_view"}


# -- 3. only recorded views are owned ------------------------------------------------------------

def test_deleting_a_run_keeps_a_users_view_with_a_status_view_name(ds):
    agreement(ds)
    ds.save_view("kalos_status_agreed", ds.limit(1))          # the user's, named like a status view
    ok("browse_disagreements", ds, run_key="kalos", statuses=["unmatched"])
    assert ds.get_run_info("kalos").config.views == ["kalos_status_unmatched"]
    ok("delete_agreement_run", ds, run_key="kalos")
    assert ds.has_saved_view("kalos_status_agreed") and not ds.has_saved_view("kalos_status_unmatched")


def test_browse_disagreements_refuses_a_users_view(ds):
    agreement(ds)
    ds.save_view("kalos_disagreements", ds.limit(1))
    errs = form_errors("browse_disagreements", ds, run_key="kalos")
    assert "statuses" in errs and "'kalos_disagreements'" in errs["statuses"]
    assert "'kalos_disagreements'" in refused("browse_disagreements", ds, run_key="kalos")
    assert ds.load_saved_view("kalos_disagreements").values("id") == ds.values("id")[:1]
    assert ds.get_run_info("kalos").config.views == []


# -- 2. status colours -----------------------------------------------------------------------------

def test_status_colours_put_the_users_entries_back_exactly(ds, fo_isolated):
    fo = fo_isolated
    mine = {"path": "raters_r1", "fieldColor": "#123456", "colorByAttribute": "label",
            "valueColors": [{"value": "A", "color": "#00ff00"}]}
    other = {"path": "other", "fieldColor": "#abcdef"}
    ds.app_config.color_scheme = fo.ColorScheme(color_by="field", fields=[dict(mine), dict(other)])
    ds.save()
    agreement(ds, "kalos")
    agreement(ds, "second")
    entries = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert entries["raters_r1"]["colorByAttribute"] == "second_status"
    assert entries["raters_r1"]["fieldColor"] == "#123456"     # the sidebar colour is kept meanwhile
    assert ds.app_config.color_scheme.color_by == "value"
    ok("delete_agreement_run", ds, run_key="second")         # the fields go back to the first run
    entries = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert entries["raters_r1"]["colorByAttribute"] == "kalos_status"
    ok("delete_agreement_run", ds, run_key="kalos")
    ds.reload()
    scheme = ds.app_config.color_scheme
    assert {e["path"]: e for e in scheme.fields} == {"raters_r1": mine, "other": other}
    assert scheme.color_by == "field"
    assert not any(k.startswith("kalos_color") for k in ds.info)
