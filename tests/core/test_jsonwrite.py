"""The result writer: ``dumps_indented`` is ``json.dumps(obj, indent=1)`` byte for byte."""

import enum
import json
import random

import numpy as np
import pytest

from kalos_core.io.jsonwrite import dumps_indented


class _Text(str):
    pass


class _Code(enum.IntEnum):
    A = 3


AWKWARD = [
    {"a[": ']}{,"\\', "b\\": ['x\\\\"[', [], {}, [[]], [{}], {"k": []}], 1: 2.5, None: True, 1.5: float("nan"),
     False: [float("inf"), -float("inf"), -0.0, 1e-7, 1e16, 10**30, 0.1 + 0.2]},
    [], {}, "é\u2028\n\t\x00", (1, (2, 3)), _Text("s"), _Code.A, [_Code.A, _Text("t"), 3.0, np.float64(0.3)],
    {"": ""}, [[[[[1]]]]], "\\", ["\\\\", '\\"', '"', "[", "]]", "{}"], 1.0, None, {"k": {"l": {"m": []}}},
]


@pytest.mark.parametrize("value", [*AWKWARD, AWKWARD], ids=range(len(AWKWARD) + 1))
def test_awkward_values_as_json_writes_them(value):
    assert dumps_indented(value) == json.dumps(value, indent=1)


def _random(rng: random.Random, depth: int):
    kind = rng.randrange(9 if depth < 5 else 6)
    if kind == 0:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
    if kind == 1:
        return rng.randint(-(2**70), 2**70)
    if kind == 2:
        return "".join(rng.choice('ab"\\[]{},: \n\u00e9\u4e2d') for _ in range(rng.randrange(6)))
    if kind in (3, 4, 5):
        return rng.choice([None, True, False, float("nan"), -0.0, ""])
    if kind in (6, 7):
        return [_random(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_random(rng, 9) if rng.random() < 0.2 else str(_random(rng, 9)): _random(rng, depth + 1)
            for _ in range(rng.randrange(5))}


def test_random_nested_values_byte_for_byte():
    rng = random.Random(23)
    for _ in range(300):
        value = [_random(rng, 0) for _ in range(3)]
        assert dumps_indented(value) == json.dumps(value, indent=1)


def test_what_json_refuses_is_refused_alike():
    for bad in ([1, {2, 3}], {"a": [object()]}, {(1, 2): 3}):
        with pytest.raises(TypeError) as expected:
            json.dumps(bad, indent=1)
        with pytest.raises(TypeError) as got:
            dumps_indented(bad)
        assert str(got.value) == str(expected.value)
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented(loop)
