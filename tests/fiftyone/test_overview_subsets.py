"""The overview splits the per-sample α by a sample field or the saved views, side by side, each bar
clickable to exactly the samples it counts. Hand-set α on the 6 samples: 0.2, 0.4, 0.9, NaN, 0.6,
-0.1; field ``time``: day, day, night, night, (none), night; saved view ``first_three``: samples 1-3."""

import math

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset

ALPHA = [0.2, 0.4, 0.9, math.nan, 0.6, -0.1]
TIME = ["day", "day", "night", "night", None, "night"]


@pytest.fixture(scope="module")
def ds(fo_isolated, small_demo):
    ds = agreement_dataset(fo_isolated, small_demo, "rater_fields")
    ds.set_values("kalos_alpha", ALPHA)
    ds.set_values("time", TIME)
    ds.save_view("first_three", ds.select(ds.values("id")[:3]))
    return ds


def bars(p):
    (trace,) = p.data["subsets"]
    return {x: (round(y, 6), n) for x, y, n in zip(trace["x"], trace["y"], trace["customdata"])}


def test_alpha_split_by_a_field_partitions_the_samples_and_a_click_shows_them(ds):
    ids = ds.values("id")
    p = Panel(ds, "kalos_agreement_overview").call("on_load").call("on_change_run", value="kalos")
    choices = p.state["split_choices"]
    assert {"none", "field:time", "field:tags", "views"} <= set(choices)
    assert not any(c == "size" or c.startswith("attr:") for c in choices)   # labels' splits: not per sample
    assert "split_note" in p.rendered() and not p.data.get("subsets")

    p.call("on_change_split", value="field:time")
    # day: 0.2, 0.4; night: 0.9, -0.1 (NaN left out); (none): 0.6
    assert bars(p) == {"day": (0.3, 2), "night": (0.4, 2), "(none)": (0.6, 1)}
    defined = sum(not math.isnan(a) for a in ALPHA)
    assert sum(n for _, n in bars(p).values()) == defined == 5       # a partition sums to the whole
    assert "| night | 0.400 | 2 |" in p.state["subsets_md"]
    view = p.call("on_click_subset", id="night", x="night").view()
    assert view.values("id") == [ids[5], ids[2]]                      # exactly n, lowest α first
    assert "2 samples of **night**" in p.state["selection"]


def test_alpha_split_by_saved_views(ds):
    ids = ds.values("id")
    p = Panel(ds, "kalos_agreement_overview").call("on_load").call("on_change_run", value="kalos")
    p.call("on_change_split", value="views")
    assert bars(p) == {"first_three": (0.5, 3), "(none)": (0.25, 2)}   # (0.2+0.4+0.9)/3; (0.6-0.1)/2
    assert set(p.call("on_click_subset", id="(none)").view().values("id")) == {ids[4], ids[5]}
    p.call("on_change_split", value="none")
    assert not p.data["subsets"] and p.state["subsets_layout"] is None
