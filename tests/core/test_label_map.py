"""LabelMap: the per-annotation unit / status maps, built from the chunks' columns on first use."""

import pickle

import numpy as np
import pytest

from kalos_core.agreement.label_map import LabelBlock, LabelMap


def blocks():
    return [LabelBlock(["a", "b", 7], ["im1:", "im2:"], [2, 1], np.array([0, 1, 0]), np.array([2, 0, 1])),
            LabelBlock([8], ["im3:"], [1], np.array([4]), np.array([2]))]


def test_label_map_equals_the_dict_it_stands_for():
    units, status = LabelMap(blocks(), "unit"), LabelMap(blocks(), "status")
    assert units == {"a": "im1:0", "b": "im1:1", 7: "im2:0", 8: "im3:4"}
    assert {"a": "im1:0", "b": "im1:1", 7: "im2:0", 8: "im3:4"} == units        # either side of ==
    assert dict(status) == {"a": "agreed", "b": "unmatched", 7: "class_disagreement", 8: "agreed"}
    assert list(units) == ["a", "b", 7, 8] and len(status) == 4 and 7 in units and "z" not in units
    assert units.get("z") is None
    with pytest.raises(KeyError):
        units["z"]


def test_label_map_is_built_only_when_read_and_pickles_as_a_dict():
    m = LabelMap(blocks(), "unit")
    assert m._dict is None                     # nothing built by construction
    assert m["b"] == "im1:1" and m._dict is not None
    back = pickle.loads(pickle.dumps(LabelMap(blocks(), "status")))
    assert type(back) is dict and back[8] == "agreed"
    with pytest.raises(ValueError, match="unit' or 'status"):
        LabelMap([], "units")


def test_a_block_with_an_order_reads_its_ids_through_it():
    """The kernel keeps a chunk's ids as read and the canonical order beside them."""
    block = LabelBlock(["x", "y", "z"], ["im:"], [3], np.array([0, 0, 1]), np.array([2, 2, 0]), np.array([2, 0, 1]))
    assert dict(LabelMap([block], "unit")) == {"z": "im:0", "x": "im:0", "y": "im:1"}
    assert dict(LabelMap([block], "status")) == {"z": "agreed", "x": "agreed", "y": "unmatched"}


def test_a_compact_block_holds_small_codes_and_reads_the_same():
    """A run keeps one block per chunk to its end: status codes as int8, units and order as int32."""
    units, codes, order = np.array([0, 0, 1, 70000]), np.array([2, 2, 0, 1]), np.array([3, 2, 0, 1])
    wide = LabelBlock(["w", "x", "y", "z"], ["im:"], [4], units, codes, order)
    small = LabelBlock.compact(["w", "x", "y", "z"], ["im:"], [4], units, codes, order)
    assert (small.units.dtype, small.codes.dtype, small.order.dtype) == (np.int32, np.int8, np.int32)
    assert LabelBlock.compact(["a"], ["im:"], [1], np.array([0]), np.array([2])).order is None
    for what in ("unit", "status"):
        assert dict(LabelMap([small], what)) == dict(LabelMap([wide], what))
    assert LabelMap([small], "unit")["x"] == "im:70000"      # annotation 3 is ids[order[3]]
