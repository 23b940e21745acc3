"""Class difficulty with many classes: the selection (sort, top-N, search, minimum units), the
unit counts read from the dataset, and the panel on the LVIS subset (274 classes)."""

import collections

import pytest

from tests.fiftyone.helpers import DISAGREEING, Panel

ALPHAS = {"cat": 0.2, "dog": -0.5, "hot_dog": 0.9, "Dogfish": 0.2, "emu": None, "bee": 0.6}
UNITS = {"cat": 12, "dog": 1, "hot_dog": 7, "Dogfish": 30, "bee": 5}


# -- the pure selection ------------------------------------------------------------------------

def test_select_classes_sorts_filters_and_cuts_with_known_answers():
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import ClassFilter, select_classes

    every = ClassFilter(min_units=0, top_n=0)
    hardest = select_classes(ALPHAS, UNITS, every)
    assert [c for c, _, _ in hardest.items] == ["dog", "Dogfish", "cat", "bee", "hot_dog"]  # ties by name
    assert hardest.n_classes == 5 and hardest.n_rare == 0 and hardest.n_matching == 5  # emu has no α
    easiest = select_classes(ALPHAS, UNITS, ClassFilter("easiest", 0, "", 0))
    assert [c for c, _, _ in easiest.items] == ["hot_dog", "bee", "Dogfish", "cat", "dog"]
    by_units = select_classes(ALPHAS, UNITS, ClassFilter("units", 0, "", 0))
    assert [(c, n) for c, _, n in by_units.items] == [("Dogfish", 30), ("cat", 12), ("hot_dog", 7), ("bee", 5),
                                                        ("dog", 1)]
    by_name = select_classes(ALPHAS, UNITS, ClassFilter("name", 0, "", 0))
    assert [c for c, _, _ in by_name.items] == ["bee", "cat", "dog", "Dogfish", "hot_dog"]  # case-insensitive

    # the default minimum (5 units) hides the one-unit "dog", which would otherwise be hardest
    default = select_classes(ALPHAS, UNITS)
    assert [c for c, _, _ in default.items] == ["Dogfish", "cat", "bee", "hot_dog"] and default.n_rare == 1
    # search is a case-insensitive substring; the hidden count is among the matches
    dogs = select_classes(ALPHAS, UNITS, ClassFilter(search="DOG"))
    assert [c for c, _, _ in dogs.items] == ["Dogfish", "hot_dog"]
    assert (dogs.n_searched, dogs.n_rare, dogs.n_matching) == (3, 1, 2)
    top2 = select_classes(ALPHAS, UNITS, ClassFilter("units", 2, "", 6))
    assert [c for c, _, _ in top2.items] == ["Dogfish", "cat"] and top2.n_matching == 3 and top2.n_rare == 2
    assert select_classes(ALPHAS, {}, ClassFilter()).items == []  # no unit counts: all below 5


def test_unit_counts_count_distinct_units_of_each_sample():
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import unit_counts

    rows = [("s1", 0, "cat"), ("s1", 0, "cat"), ("s1", 1, "cat"), ("s1", 1, "dog"),
            ("s2", 0, "cat"), ("s2", None, "cat"), ("s2", 2, None)]
    assert unit_counts(rows) == {"cat": 3, "dog": 1}


def test_chart_height_is_bounded_and_the_hover_names_the_units():
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import MAX_HEIGHT, MIN_HEIGHT, chart_height, class_bars, class_table

    assert chart_height(0) == MIN_HEIGHT and chart_height(274) == MAX_HEIGHT <= 700
    assert chart_height(10) == 22 * 10 + 90
    bars = class_bars([("dog", -0.5, 1), ("cat", 0.2, 12)])
    assert bars["y"] == ["dog", "cat"] and bars["customdata"] == [1, 12] and "units" in bars["hovertemplate"]
    assert "| cat | 0.200 | 12 |" in class_table([("cat", 0.2, 12)])


def test_every_class_bar_is_labelled_in_a_font_that_fits():
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import every_label

    names = [f"class_{k}" for k in range(25)]
    axis = every_label(names, 640)          # the App draws it 340 px high: (340 - 90) / 25 = 10 px a bar
    assert axis["tickmode"] == "array" and axis["tickvals"] == axis["ticktext"] == names
    assert axis["tickfont"]["size"] == 9
    assert every_label(["a", "b"], 300)["tickfont"]["size"] == 12 and every_label(names * 4, 640)["tickfont"]["size"] == 7


# -- the panel on the LVIS subset --------------------------------------------------------------

@pytest.fixture(scope="module")
def lvis(fo_isolated, lvis_subset_path):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds = import_multirater_coco("kalos-lvis-classes", str(lvis_subset_path), layout="rater_fields",
                                label_field="raters")
    fields = sorted(f for f in ds.get_field_schema() if f.startswith("raters_"))
    compute_agreement_run(ds, rater_fields=fields, run_key="kalos", bootstrap=0)
    return ds


@pytest.fixture(scope="module")
def engine_units(lvis_subset_path):
    """{class: units} straight from the engine's unit of every annotation (no FiftyOne)."""
    from kalos_core import load_coco
    from kalos_core.agreement import AgreementConfig, compute_agreement

    data = load_coco(lvis_subset_path, "bbox")
    res = compute_agreement(data, AgreementConfig(bootstrap=0))
    units = collections.defaultdict(set)
    for im in data.images:
        for a in im.annotations:
            units[data.categories[a.category]].add(res.unit_of[a.id])
    return {c: len(s) for c, s in units.items()}, res.class_difficulty


@pytest.mark.realdata
def test_lvis_unit_counts_match_the_engine_and_the_minimum_hides_151_of_274(lvis, engine_units):
    from fiftyone.plugins.orgs.kalos.agreement.panels.classes import ClassFilter, class_unit_counts, select_classes
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import RunLayout

    units, alphas = engine_units
    got = class_unit_counts(lvis, RunLayout.from_run(lvis, "kalos"))
    assert got == units
    assert len(units) == 274 and sum(n >= 5 for n in units.values()) == 123
    sel = select_classes(alphas, got, ClassFilter())
    assert (sel.n_classes, sel.n_rare, sel.n_matching, len(sel.items)) == (274, 151, 123, 25)
    assert sel.items[0][0] == "lettuce" and sel.items[0][2] == 19  # α -0.85 over 19 units
    # without the minimum, classes seen in 2-4 units crowd the top: 3 of the 5 hardest
    raw = select_classes(alphas, got, ClassFilter(min_units=0, top_n=5))
    assert sum(n < 5 for _, _, n in raw.items) == 3


@pytest.mark.realdata
def test_lvis_panel_controls_change_the_chart_and_a_class_click_shows_its_disagreeing_labels(lvis, engine_units):
    units, _ = engine_units
    p = Panel(lvis, "kalos_class_difficulty").call("on_load")
    (bars,) = p.data["classes"]
    assert len(bars["y"]) == 25 and bars["y"][0] == "lettuce" and bars["customdata"][0] == 19
    assert p.state["plot_layout"]["height"] <= 640
    assert "274 classes" in p.state["summary"] and "151 hidden with fewer than 5 units" in p.state["summary"]
    assert {"class_table", "classes"} <= p.rendered() and "| lettuce | -0.850 | 19 |" in p.state["class_table"]

    p.call("on_change_search", value="bottle")
    (bars,) = p.data["classes"]
    assert bars["y"] and all("bottle" in c for c in bars["y"])
    assert set(bars["y"]) == {c for c, n in units.items() if "bottle" in c and n >= 5}
    p.call("on_change_search", value="")
    p.call("on_change_min_units", value=0)
    p.call("on_change_top_n", value=0)
    assert len(p.data["classes"][0]["y"]) == 274 and p.state["plot_layout"]["height"] == 640
    p.call("on_change_sort", value="units")
    assert p.data["classes"][0]["y"][:2] == ["cherry", "lightbulb"]  # 72 and 66 units

    fields = lvis.get_run_info("kalos").config.rater_fields
    view = p.call("on_click_class", y="vase", id="vase").view()
    expected = set()
    for f in fields:
        labels = lvis.values(f"{f}.detections.label")
        status = lvis.values(f"{f}.detections.kalos_status")
        for sid, ls, ss in zip(lvis.values("id"), labels, status):
            if any(lab == "vase" and s in DISAGREEING for lab, s in zip(ls or [], ss or [])):
                expected.add(sid)
    used = {sid for f in fields for sid, ls in zip(lvis.values("id"), lvis.values(f"{f}.detections.label"))
            if "vase" in (ls or [])}
    # the engine's statuses: vases on 9 images, not all agreeing on 6; the other 3 are left out
    assert (len(expected), len(used)) == (6, 9)
    assert set(view.values("id")) == expected
    assert {lab for f in fields for lab in view.values(f"{f}.detections.label", unwind=True)} == {"vase"}
    assert set(view.values(f"{fields[0]}.detections.kalos_status", unwind=True)) <= DISAGREEING
