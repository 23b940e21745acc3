"""Confusion cells and subsets of a scorecard, from its stored label outcomes, by hand: an expert
``e`` and a rater ``s`` on one 500×500 image (``scorecard_anns`` in tests/core/helpers.py).

=====  ============  ==============  =================================
object  e draws       s draws         outcome (classwise / class-blind)
=====  ============  ==============  =================================
A      cat 10×10     cat, same box   TP small / (cat, cat)
B      cat 40×40     dog, same box   FP medium + FN medium / (cat, dog)
C      dog 100×100   dog, same box   TP large / (dog, dog)
D      —             cat 10×10       FP small / ((none), cat)
E      dog 10×10     —               FN small / (dog, (none))
=====  ============  ==============  =================================
"""

import json

import pytest

from kalos_core import MultiRaterDataset, make_image
from kalos_core.scorecard import ScorecardConfig, compute_scorecards
from kalos_core.scorecard.subsets import confusion_cell_ids, confusion_matrix, subset_ids, subset_rows
from tests.core.helpers import scorecard_anns as anns

@pytest.fixture(scope="module")
def card():
    ds = MultiRaterDataset([make_image(1, 500, 500, ["e", "s"], anns())], {1: "cat", 2: "dog"}, "box")
    return json.loads(json.dumps(compute_scorecards(ds, ScorecardConfig(reference="e")).to_dict()))


def counts(rows, rater="s", cls="(all)"):
    r = next(r for r in rows if r["rater"] == rater and r["class"] == cls)
    return r["tp"], r["fp"], r["fn"]


def test_the_confusion_cells_name_exactly_the_labels_they_count(card):
    table = card["outcomes"]["s"]
    assert confusion_matrix(table) == card["confusion"]["s"] == {
        "classes": ["cat", "dog", "(none)"], "matrix": [[1, 1, 0], [0, 1, 1], [1, 0, 0]]}
    assert confusion_cell_ids(table, "cat", "dog") == [12]          # B: s's dog over e's cat
    assert confusion_cell_ids(table, "dog", "(none)") == [5]        # E: e's dog s missed
    assert confusion_cell_ids(table, "(none)", "cat") == [14]       # D: s's extra cat
    assert confusion_cell_ids(table, "cat", "cat") == [11] and confusion_cell_ids(table, "dog", "cat") == []


def test_object_size_subsets_partition_the_whole(card):
    split = subset_rows(card, "size")
    assert list(split) == ["small", "medium", "large"]
    got = {s: counts(rows) for s, rows in split.items()}
    assert got == {"small": (1, 1, 1), "medium": (0, 1, 1), "large": (1, 0, 0)}
    assert tuple(map(sum, zip(*got.values()))) == counts(card["rows"]) == (2, 2, 2)
    assert counts(split["medium"], cls="cat") == (0, 0, 1) and counts(split["medium"], cls="dog") == (0, 1, 0)
    small = next(r for r in split["small"] if r["class"] == "(all)")
    assert (small["precision"], small["recall"], small["f1"]) == (0.5, 0.5, 0.5)
    assert subset_ids(card, "s", "size", "small") == [11, 14, 5]


def test_a_label_attribute_splits_a_found_pair_by_the_reference_label(card):
    values = {1: "occluded", 11: "visible", 2: "visible", 12: "visible", 14: "occluded", 5: "occluded"}
    got = {s: counts(rows) for s, rows in subset_rows(card, "label", values).items()}
    # A found: e's label says occluded (s's visible does not count); C has no value
    assert got == {"occluded": (1, 1, 1), "visible": (0, 1, 1), "(none)": (1, 0, 0)}


def test_image_subsets_by_a_sample_field_and_overlapping_saved_views():
    ds = MultiRaterDataset([make_image(1, 500, 500, ["e", "s"], anns()),
                            make_image(2, 500, 500, ["e", "s"], anns(shift=100))], {1: "cat", 2: "dog"}, "box")
    card = compute_scorecards(ds, ScorecardConfig(reference="e")).to_dict()
    assert counts(card["rows"]) == (4, 4, 4)
    by_field = subset_rows(card, "image", {1: "day", 2: "night"})
    assert {s: counts(r) for s, r in by_field.items()} == {"day": (2, 2, 2), "night": (2, 2, 2)}
    views = subset_rows(card, "image", {1: ["first", "all"], 2: ["all"]})   # views overlap: no partition
    assert {s: counts(r) for s, r in views.items()} == {"all": (4, 4, 4), "first": (2, 2, 2)}
    assert sorted(subset_ids(card, "s", "image", "night", {1: "day", 2: "night"})) == [102, 105, 111, 112, 113, 114]   # TP + FP of s, FN of e


def test_a_reference_made_of_several_labels_takes_the_value_most_of_them_hold():
    from kalos_core.scorecard.subsets import subset_keys

    table = {"rater": {"id": [9], "image": [1], "class": ["cat"], "area": [100.0], "match": [-1], "blind": [-1]},
             "reference": {"ids": [[1, 2, 3], [4, 5], [6]], "image": [1, 1, 1], "class": ["cat"] * 3,
                           "area": [100.0] * 3}}
    values = {1: "a", 2: "b", 3: "b", 4: "z", 5: "y", 9: "a"}      # 2 b over 1 a; a tie of z and y: y; 6: none
    assert subset_keys(table, "label", values) == {"rater": [["a"]], "reference": [["b"], ["y"], ["(none)"]]}
