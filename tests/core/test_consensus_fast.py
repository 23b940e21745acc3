"""Consensus's fast paths equal the plain numpy ones they replace, to the bit."""

import json
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core.consensus import ConsensusConfig, compute_consensus
from kalos_core.consensus.engine import _median_box, _safe
from kalos_core.demo_data import demo_example
from kalos_core.jsonsafe import json_safe

coord = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)
box = st.tuples(coord, coord, st.floats(0, 1e4), st.floats(0, 1e4))


def numpy_median_box(boxes: list) -> tuple:
    """The former fusion: np.median of x1, y1, x2, y2 over the boxes."""
    xywh = np.array(boxes, float).reshape(-1, 4)
    f = np.median(np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1), axis=0)
    return tuple(float(v) for v in (f[0], f[1], f[2] - f[0], f[3] - f[1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(box, min_size=1, max_size=9))
def test_median_box_equals_numpy_median_bit_for_bit(boxes):
    assert _median_box(boxes) == numpy_median_box(boxes)


def test_median_box_known_answers():
    assert _median_box([(0, 0, 10, 10)]) == (0.0, 0.0, 10.0, 10.0)
    # x1 0, 2 -> 1; y1 0, 4 -> 2; x2 10, 14 -> 12; y2 10, 12 -> 11
    assert _median_box([(0, 0, 10, 10), (2, 4, 12, 8)]) == (1.0, 2.0, 11.0, 9.0)
    assert _median_box([(0, 0, 1, 1), (5, 5, 1, 1), (1, 2, 3, 4)]) == (1.0, 2.0, 3.0, 4.0)


@pytest.mark.parametrize("support", [0.5, 0.9])
def test_to_dict_equals_the_asdict_form(support):
    data = demo_example("bbox")
    result = compute_consensus(data.dataset, config=ConsensusConfig(support=support))
    assert result.labels and result.review
    assert json.dumps(result.to_dict()) == json.dumps(json_safe(
        {"config": result.config, "kind": result.kind, "labels": [asdict(x) for x in result.labels],
         "review": [asdict(x) for x in result.review]}))
    assert result.to_coco(data.dataset)["review"] == json_safe([asdict(x) for x in result.review])


values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
                      | st.builds(np.int64, st.integers(-9, 9)) | st.builds(np.float32, st.floats(width=32)),
                      lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(st.integers(0, 3) | st.text(max_size=2), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(values)
def test_safe_equals_json_safe(v):
    assert json.dumps(_safe(v)) == json.dumps(json_safe(v))
