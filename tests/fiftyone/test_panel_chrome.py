"""What every KaLOS panel shares (panels/chrome.py, RunPanel): run selector labels from real
stored runs, the run and scope remembered per dataset, the clicked mark highlighted and
Clear selection giving back the user's view."""

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset


@pytest.fixture(scope="module")
def two_runs(fo_isolated, demo):  # noqa: F811
    """The demo with runs "kalos" (4 raters, threshold 0.5, LSA) and, newer, "pair" (two raters, 0.7)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    fields = ds.get_run_info("kalos").config.rater_fields
    compute_agreement_run(ds, rater_fields=fields[:2], run_key="pair", threshold=0.7, bootstrap=0)
    return ds


AppPanel = Panel   # a panel event that also carries the App's current view: Panel.call(view=...)


def data_patches(p) -> dict:
    """The chart patches of the last event (its data patch less the state it sends as data)."""
    out = {}
    for params in p.ops("patch_panel_data"):
        out.update({k: v for k, v in params["data"].items() if k.endswith(".selectedpoints")})
    return out


def header(p) -> set:
    """The header row's items and the selection bar's (shown while a click's view is)."""
    props = p.output["type"]["properties"]
    return {k for part in ("header", "selection_bar") if part in props for k in props[part]["type"]["properties"]}


# -- run selector labels -----------------------------------------------------------------------

def test_run_labels_name_label_type_raters_threshold_and_date(two_runs):
    from fiftyone.plugins.orgs.kalos.agreement.panels.runs import run_label

    stamp = two_runs.get_run_info("pair").timestamp.strftime("%Y-%m-%d")
    assert run_label(two_runs, "pair") == f"pair · detections · careful, confuser · threshold 0.7 · {stamp}"
    stamp = two_runs.get_run_info("kalos").timestamp.strftime("%Y-%m-%d")
    assert run_label(two_runs, "kalos") == f"kalos · detections · 4 raters · threshold 0.5 · {stamp}"
    assert run_label(two_runs, "gone") == "gone"


def test_run_label_of_the_one_field_layout_names_the_rater_attribute(fo_isolated, demo):  # noqa: F811
    from fiftyone.plugins.orgs.kalos.agreement.panels.runs import run_label

    ds = agreement_dataset(fo_isolated, demo, "rater_attribute")
    assert run_label(ds, "kalos").split(" · ")[:4] == ["kalos", "detections", "raters by rater_id", "threshold 0.5"]


def test_the_selector_shows_labels_and_keeps_keys_as_values(two_runs):
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    sel = p.output["type"]["properties"]["header"]["type"]["properties"]["run_key"]
    choices = {c["value"]: c["label"] for c in sel["view"]["choices"]}
    assert list(choices) == ["pair", "kalos"]  # newest first
    assert choices["pair"].startswith("pair · detections · careful, confuser · threshold 0.7 · ")
    assert p.state["header"]["run_key"] == p.state["run_key"] == "pair"
    assert "title" not in p.rendered() and "Docs ↗" in str(p.output["type"]["properties"]["intro"])


# -- remembered state --------------------------------------------------------------------------

def test_chosen_run_and_scope_survive_reopening_and_a_deleted_run_falls_back(fo_isolated, demo):  # noqa: F811
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    fields = ds.get_run_info("kalos").config.rater_fields
    compute_agreement_run(ds, rater_fields=fields, run_key="newer", bootstrap=0)
    assert Panel(ds, "kalos_agreement_overview").call("on_load").state["run_key"] == "newer"
    Panel(ds, "kalos_agreement_overview").call("on_load").call("on_change_run", value="kalos")
    again = Panel(ds, "kalos_agreement_overview").call("on_load")  # a fresh panel: empty state
    assert again.state["run_key"] == again.state["header"]["run_key"] == "kalos"
    assert Panel(ds, "kalos_annotator_vitality").call("on_load").state["run_key"] == "newer"  # per panel

    v = Panel(ds, "kalos_annotator_vitality").call("on_load")
    v.call("on_change_scope", value="global")
    assert Panel(ds, "kalos_annotator_vitality").call("on_load").state["scope"] == "global"

    ds.delete_run("kalos")
    assert Panel(ds, "kalos_agreement_overview").call("on_load").state["run_key"] == "newer"


def test_remembered_state_is_peragreement_dataset(fo_isolated, two_runs):
    from fiftyone.plugins.orgs.kalos.agreement.panels.chrome import remember, remembered

    class Ctx:
        def __init__(self, ds):
            import fiftyone.operators as foo
            from fiftyone.operators.executor import Executor

            self._ctx = foo.ExecutionContext(request_params={"dataset_name": ds.name}, executor=Executor())

        def store(self, name):
            return self._ctx.store(name)

        @property
        def dataset(self):
            return self._ctx.dataset

    other = fo_isolated.Dataset()
    remember(Ctx(two_runs), "some_panel", run_key="pair")
    remember(Ctx(two_runs), "some_panel", scope="global")
    assert remembered(Ctx(two_runs), "some_panel") == {"run_key": "pair", "scope": "global"}
    assert Ctx(two_runs).store("kalos_panels").get("some_panel") == {"run_key": "pair", "scope": "global"}
    assert remembered(Ctx(other), "some_panel") == {}
    assert remembered(Ctx(two_runs), "other_panel") == {}


def test_a_panel_load_reads_what_it_remembers_without_building_the_store_service(two_runs, monkeypatch):
    """Building FiftyOne's execution store service checks (or creates) its indexes: 0.3-1.1 s of
    the first open (docs/panels.md). A load only reads; a choice still writes through it."""
    from fiftyone.operators.store import service

    built = []
    real_init = service.ExecutionStoreService.__init__
    monkeypatch.setattr(service.ExecutionStoreService, "__init__",
                        lambda self, *a, **kw: built.append(1) or real_init(self, *a, **kw))
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    assert p.state["run_key"] and not built
    p.call("on_change_run", value="kalos")
    assert built   # remembered through ctx.store
    assert Panel(two_runs, "kalos_agreement_overview").call("on_load").state["run_key"] == "kalos"


# -- highlight and clear selection -------------------------------------------------------------

def test_a_bar_click_selects_that_bar_and_clear_selection_unselects_it(two_runs):
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load").call("on_change_run", value="kalos")
    counts = p.state["counts"]
    k, j = [i for i, c in enumerate(counts) if c][:2]
    assert "clear_selection" not in header(p)
    p.call("on_click_bin", idx=k, trace_idx=0, path="histogram", x=0.0)
    assert data_patches(p) == {"histogram.0.selectedpoints": [k]}
    assert p.view().count() == counts[k] and "clear_selection" in header(p)
    p.call("on_click_bin", idx=j, trace_idx=0, path="histogram", x=0.0)  # the previous bar is unselected
    assert data_patches(p) == {"histogram.0.selectedpoints": [j]}
    p.state["highlight"] = None   # a stale copy in the App's state (its forms write what they show)
    p.call("clear_selection")
    assert data_patches(p) == {"histogram.0.selectedpoints": None}
    assert p.ops("clear_view") == [{}] or len(p.ops("clear_view")) == 1
    assert "clear_selection" not in header(p) and p.state["highlight"] is None and not p.state["selection"]


def test_clear_selection_gives_back_the_users_view(two_runs):
    from fiftyone import ViewField as F

    mine = two_runs.match(F("kalos_alpha") > 0.5)
    p = AppPanel(two_runs, "kalos_agreement_overview").call("on_load").call("on_change_run", value="kalos")
    k = next(i for i, c in enumerate(p.state["counts"]) if c)
    p.call("on_click_bin", view=mine, idx=k, trace_idx=0, path="histogram", x=0.0)
    p.call("on_click_bin", view=p.view(), idx=k, trace_idx=0, path="histogram", x=0.0)  # a second click
    p.call("clear_selection")
    assert not p.ops("clear_view")
    assert p.view().values("id") == mine.values("id")


def test_a_heatmap_click_draws_a_rectangle_around_the_cell(two_runs):
    p = Panel(two_runs, "kalos_collaboration").call("on_load").call("on_change_run", value="kalos")
    (heat,) = p.data["heatmap"][:1]
    x, y = heat["x"][2], heat["y"][0]
    p.call("on_click_cell", x=x, y=y, z=0.5, idx=[0, 2], trace_idx=0, path="heatmap")
    assert p.ops("set_view") and not data_patches(p)
    shapes = p.output["type"]["properties"]["heatmap"]["view"]["layout"]["shapes"]
    rect = [s for s in shapes if s.get("name") == "kalos_highlight"]
    assert rect and (rect[0]["x0"], rect[0]["x1"], rect[0]["y0"], rect[0]["y1"]) == (1.5, 2.5, -0.5, 0.5)
    p.call("clear_selection")
    shapes = p.output["type"]["properties"]["heatmap"]["view"]["layout"].get("shapes") or []
    assert not [s for s in shapes if s.get("name") == "kalos_highlight"]


# -- pure helpers ------------------------------------------------------------------------------

def test_click_events_become_highlights():
    from fiftyone.plugins.orgs.kalos.agreement.panels.chrome import clicked_highlight

    assert clicked_highlight({"path": "bars", "idx": 3, "trace_idx": 1}) == {"path": "bars", "trace": 1, "idx": 3}
    assert clicked_highlight({"path": "h", "idx": [1, 2], "x": "a", "y": "b", "z": 0.3}) == \
        {"path": "h", "x": "a", "y": "b", "row": 1, "col": 2}
    assert clicked_highlight({"idx": 3}) is None and clicked_highlight({"path": "p"}) is None


def test_with_cell_replaces_the_previous_rectangle_and_keeps_other_shapes():
    from fiftyone.plugins.orgs.kalos.agreement.panels.chrome import cell, with_cell

    line = {"type": "line", "x0": 0}
    one = with_cell({"shapes": [line]}, cell("h", "a", "b", 0, 0))
    two = with_cell(one, cell("h", "a", "c", 3, 1))
    assert two["shapes"][0] == line and len(two["shapes"]) == 2 and two["shapes"][1]["x0"] == 0.5
    assert with_cell({"height": 300}, None) == {"height": 300}


def test_help_url_and_intro_line():
    from fiftyone.plugins.orgs.kalos.agreement.panels.chrome import REPO, first_sentence, help_url

    import os

    assert help_url("docs/panels.md", os.path.dirname(REPO)) == f"/plugins/{os.path.basename(REPO)}/docs/panels.md"
    assert help_url("docs/panels.md", REPO) == "/plugins/docs/panels.md"
    assert help_url("https://example.org/x") == "https://example.org/x"
    assert first_sentence("Mean α at other thresholds; the line is τ*. More.") == "Mean α at other thresholds."
    assert first_sentence("One line") == "One line"


def test_charts_are_at_most_340_px(two_runs):
    p = Panel(two_runs, "kalos_collaboration").call("on_load")
    heights = [v["view"]["height"] for v in p.output["type"]["properties"].values()
               if v.get("view", {}).get("name") == "PlotlyView"]
    assert heights and max(heights) <= 340


def test_a_click_on_stacked_bars_dims_the_other_traces_too():
    from fiftyone.plugins.orgs.kalos.agreement.panels.chrome import point, selected_points_patch, trace_counts

    class Sent:  # what ctx.panel.data keeps locally of what a handler set
        _data = {"thresholds": [{"type": "bar"}, {"type": "bar"}, {"type": "bar"}], "other": {"iou": [{"x": [1]}]},
                 "not_a_chart": [1, 2]}

    assert trace_counts(Sent()) == {"thresholds": 3, "other.iou": 1}
    hl = point("thresholds", 1, 4)
    assert selected_points_patch(hl, n_traces=3) == {"thresholds.0.selectedpoints": [], "thresholds.2.selectedpoints": [],
                                                     "thresholds.1.selectedpoints": [4]}
    assert selected_points_patch(hl, on=False, n_traces=3) == {f"thresholds.{t}.selectedpoints": None for t in range(3)}
    assert selected_points_patch(hl) == {"thresholds.1.selectedpoints": [4]}


def test_panels_record_their_charts_trace_counts(two_runs):
    p = Panel(two_runs, "kalos_collaboration").call("on_load")
    assert p.state["trace_counts"]["heatmap"] == 1 and p.state["trace_counts"]["mds"] == len(p.data["mds"])


# -- one patch per event ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["kalos_agreement_overview", "kalos_collaboration", "kalos_annotator_vitality"])
def test_a_load_sends_one_data_patch_and_no_state_patch_before_its_output(two_runs, name):
    """Every change of a panel's state is saved by the App into its spaces, and each save reloads
    the dataset page and the grid (docs/panels.md): a load sends its state as data."""
    p = Panel(two_runs, name).call("on_load")
    uris = [r["operator_uri"] for r in p.requests]
    assert uris.count("patch_panel_state") == 0 and uris.count("patch_panel_data") == 1, uris
    assert uris.index("patch_panel_data") < uris.index("show_panel_output"), uris
    before = p.state["run_key"]
    assert before in ("kalos", "pair") and p.state["header"]["run_key"] == before
    other = "kalos" if before == "pair" else "pair"
    p.call("on_change_run", value=other)   # run_key is set twice in this event: the last value stays
    assert (p.state["run_key"], p.state["header"]["run_key"]) == (other, other)
    assert not p.app_keys, p.app_keys   # nothing written into the App's panel state


def test_a_search_draws_only_the_classes_it_leaves_after_the_form_copied_the_chart(two_runs):
    """Typing in a panel's input makes the App's form write everything it shows (the 5-bar chart
    too) into the panel's state, and the App draws the lodash merge of state and data, lists index
    by index: the 1-bar chart of the search drew 4 bars in the browser. The event's one state
    patch empties the App's copies (tests/e2e/test_class_difficulty.py)."""
    p = Panel(two_runs, "kalos_class_difficulty").call("on_load")
    names = p.state["classes"][0]["y"]
    target = next(c for c in names if sum(c[:4] in other for other in names) == 1)
    assert len(names) == 5 and not p.app_keys
    p.state["search"] = target[:4]   # the user types: the form's values land in the App's state
    p.call("on_change_search", value=target[:4])
    assert len(p.state["classes"]) == 1 and p.state["classes"][0]["y"] == [target]   # what the App draws
    assert p.state["search"] == target[:4] and p.state["class_names"] == [target]
    (params,) = p.ops("patch_panel_state")
    patch = params["state"]
    assert patch["classes"] is None and patch["search"] is None and "before" not in patch
    assert not p.app_keys   # nothing left in the App's state: the next event sends no state patch
    p.call("on_change_top_n", value=2)
    assert not p.ops("patch_panel_state") and len(p.state["classes"][0]["y"]) == 1


def test_a_cleared_search_stays_cleared_when_the_form_sends_its_stale_copy_with_a_top_n_change(two_runs):
    """The full browser run on main: the search cleared, then Top N = 2 drew 1 bar and "1 match …":
    the App's form wrote its stale copy of the search into the panel's state with the Top N change,
    and the handler read it. The server's search wins over the App's copy."""
    p = Panel(two_runs, "kalos_class_difficulty").call("on_load")
    names = p.state["classes"][0]["y"]
    target = next(c for c in names if sum(c[:4] in other for other in names) == 1)
    p.state["search"] = target[:4]
    p.call("on_change_search", value=target[:4])
    p.state["search"] = ""
    p.call("on_change_search", value="")
    assert len(p.state["classes"][0]["y"]) == 5
    p.state.update(search=target[:4], top_n=2)   # the form's stale search comes with the Top N change
    p.call("on_change_top_n", value=2)
    assert len(p.state["classes"][0]["y"]) == 2, p.state["summary"]
    assert "match" not in p.state["summary"] and "showing 2 of 5" in p.state["summary"]


def test_two_events_of_one_panel_sent_at_once_run_one_after_the_other(two_runs, monkeypatch):
    """The App sends Top N's event before the cleared search's answer came, and FiftyOne runs the
    two in threads at once. Here the clear's handler waits (up to 2 s) until the Top N event has
    read the kept state: run together, Top N read the search not yet cleared (1 bar) and its write
    brought the search back; one after the other, Top N draws 2 bars and the search stays cleared."""
    import json
    import threading
    from types import SimpleNamespace

    import fiftyone.operators as foo
    from fiftyone.plugins.orgs.kalos.agreement.panels import kept
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import ClassDifficultyPanel

    p = Panel(two_runs, "kalos_class_difficulty").call("on_load")
    names = p.state["classes"][0]["y"]
    target = next(c for c in names if sum(c[:4] in other for other in names) == 1)
    p.call("on_change_search", value=target[:4])
    drawing, read, restore, draw = threading.Event(), threading.Event(), kept.restore, ClassDifficultyPanel.draw

    def restore_then_tell(ctx, panel):
        out = restore(ctx, panel)
        if ctx.params.get("__method__") == "on_change_top_n":
            read.set()
        return out

    def draw_late(self, ctx):
        if ctx.params.get("__method__") == "on_change_search":
            drawing.set()
            read.wait(2)
        draw(self, ctx)

    monkeypatch.setattr(kept, "restore", restore_then_tell)
    monkeypatch.setattr(ClassDifficultyPanel, "draw", draw_late)
    answers = {}

    def send(method, value):
        res = foo.execute_operator(p.uri, dataset=two_runs.name, params={
            "panel_id": p.panel_id, "__method__": method, "panel_state": json.loads(json.dumps(p.app)), "value": value})
        answers[method] = res.executor.to_json()["requests"]

    clear = threading.Thread(target=send, args=("on_change_search", ""))
    clear.start()
    assert drawing.wait(60)   # the clear is in its handler when Top N comes
    send("on_change_top_n", 2)
    clear.join()
    (data,) = [r["params"]["data"] for r in answers["on_change_top_n"] if r["operator_uri"] == "patch_panel_data"]
    assert len(data["classes"][0]["y"]) == 2 and "match" not in data["summary"], data["summary"]
    kept_state = kept.load(SimpleNamespace(params={"panel_id": p.panel_id}, dataset=two_runs), p.uri.rsplit("/", 1)[1])["state"]
    assert (kept_state["search"], kept_state["top_n"]) == ("", 2)   # the clear is not undone


def test_the_state_is_kept_in_the_database_and_loaded_again_where_none_is(two_runs):
    """A click reads what the load computed (the bins, the run) from the state kept in the
    database, which every App server process reads (several workers, a restarted server); where
    none is kept (closed, expired), the click loads the panel first and does the same."""
    import fiftyone.core.odm as fodm
    from fiftyone.factory.repos.execution_store import MongoExecutionStoreRepo
    from fiftyone.plugins.orgs.kalos.agreement.panels import kept

    coll = fodm.get_db_conn()[MongoExecutionStoreRepo.COLLECTION_NAME]
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    n, key = p.state["counts"][-1], p.state["run_key"]
    doc = coll.find_one({"store_name": kept.STORE, "key": f"kalos_agreement_overview:{p.panel_id}"})
    assert doc and doc["dataset_id"] == two_runs._doc.id and doc["expires_at"] > doc["updated_at"]
    p.call("on_click_bin", idx=len(p.state["counts"]) - 1)
    assert len(p.view()) == n and p.state["selection"].startswith(f"Showing {n} sample")
    assert p.app_keys == {"before"}   # the user's own grid, kept by the App (outlives the kept state)
    assert not p.ops("patch_panel_data")[0]["data"].keys() & {"counts", "histogram", "runs"}   # no second load

    q = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    coll.delete_many({"store_name": kept.STORE, "key": f"kalos_agreement_overview:{q.panel_id}"})   # none kept
    q.call("on_click_bin", idx=len(q.state["counts"]) - 1)
    assert len(q.view()) == n and q.state["run_key"] == key
    assert {"counts", "histogram", "runs"} <= q.ops("patch_panel_data")[0]["data"].keys()   # the load's, sent again
    q.call("on_unload")   # the panel closed: its kept state goes
    assert coll.count_documents({"store_name": kept.STORE, "key": f"kalos_agreement_overview:{q.panel_id}"}) == 0


def test_the_overview_does_not_reload_when_the_compare_dropdown_reports_what_it_shows(two_runs):
    p = Panel(two_runs, "kalos_agreement_overview").call("on_load")
    assert p.state["compare_key"] == "none"   # what the dropdown shows, so the App sends no change
    p.call("on_change_compare", value="none")
    assert not p.ops("patch_panel_data")   # no second load of the run
    p.call("on_change_compare", value="kalos" if p.state["run_key"] == "pair" else "pair")
    assert len(p.data["histogram"]) == 2
