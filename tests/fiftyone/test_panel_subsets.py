"""Class difficulty and annotator vitality split by a sample field or the saved views (panels/splits.py),
each bar clickable to exactly the samples it averages. The demo's 6 images (4 raters on each; the class
``star`` on images 1, 3-6, ``circle`` on 2-6); field ``time``: day (1, 2), night (3, 4, 6), none (5);
saved view ``first_three``: images 1-3. Oracle of each bar's mean: the engine's class α and vitality of
the subset's images alone (a sample's per-image values do not depend on the other samples)."""

import json
from dataclasses import replace

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset

TIME = {1: "day", 2: "day", 3: "night", 4: "night", 5: None, 6: "night"}


@pytest.fixture(scope="module")
def ds(fo_isolated, small_demo):
    ds = agreement_dataset(fo_isolated, small_demo, "rater_fields")
    ds.set_values("time", [TIME[i] for i in ds.values("coco_id")])
    ds.save_view("first_three", ds.match({"coco_id": {"$lte": 3}}))
    return ds


def bars(p) -> dict:
    """``{(key, subset): (mean, samples)}`` of the split chart."""
    out = {}
    for t in p.data["subsets"]:
        keys, means = (t["y"], t["x"]) if t.get("orientation") == "h" else (t["x"], t["y"])
        out.update({(k, t["name"]): (m, n) for k, m, n in zip(keys, means, t["customdata"])})
    return out


def engine_on(small_demo, images):
    from kalos_core.agreement.pipeline import compute_agreement

    return compute_agreement(replace(small_demo, images=[im for im in small_demo.images if im.id in images]))


def test_class_alpha_by_time_counts_the_samples_where_the_class_occurs_and_a_click_shows_them(ds, small_demo):
    p = Panel(ds, "kalos_class_difficulty").call("on_load").call("on_change_run", value="kalos")
    p.call("on_change_min_units", value=0).call("on_change_split", value="field:time")
    got = bars(p)
    assert {n for (c, s), (_, n) in got.items() if c == "star"} == {1, 3} and got["star", "(none)"][1] == 1
    assert (got["star", "day"][1], got["circle", "day"][1], got["circle", "night"][1]) == (1, 1, 3)
    for subset, images in (("day", {1, 2}), ("night", {3, 4, 6}), ("(none)", {5})):
        want = engine_on(small_demo, images).class_difficulty
        assert {c: m for (c, s), (m, _) in got.items() if s == subset} == pytest.approx(want)
    ids = dict(zip(ds.values("coco_id"), ds.values("id")))
    view = p.call("on_click_subset", id=json.dumps(["star", "night"])).view()
    assert sorted(view.values("coco_id")) == [3, 4, 6] and "3 samples of **night** where **star**" in p.state["selection"]
    alphas = ds.load_run_results("kalos").class_difficulty_images["star"]
    assert [alphas[i] for i in view.values("id")] == sorted(alphas[ids[k]] for k in (3, 4, 6))   # lowest first
    p.call("on_change_search", value="circle")          # the split follows the shown classes
    assert {c for c, _ in bars(p)} == {"circle"}


def test_vitality_by_saved_views_and_back_to_no_split(ds, small_demo):
    p = Panel(ds, "kalos_annotator_vitality").call("on_load").call("on_change_run", value="kalos")
    assert {"none", "field:time", "views"} <= set(p.state["split_choices"])
    p.call("on_change_split", value="views")
    got = bars(p)
    raters = {"careful", "sloppy", "misses_small", "confuser"}
    assert {r for r, _ in got} == raters and {(s, n) for (_, s), (_, n) in got.items()} == {("first_three", 3),
                                                                                          ("(none)", 3)}
    for subset, images in (("first_three", {1, 2, 3}), ("(none)", {4, 5, 6})):
        want = engine_on(small_demo, images).vitality
        assert {r: m for (r, s), (m, _) in got.items() if s == subset} == pytest.approx(want)
    assert sorted(p.call("on_click_subset", id=json.dumps(["sloppy", "(none)"])).view().values("coco_id")) == [4, 5, 6]
    assert "| sloppy | first_three |" in p.state["subsets_md"]
    p.call("on_change_split", value="none")
    assert not p.data["subsets"] and p.state["subsets_layout"] is None
