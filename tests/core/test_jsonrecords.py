"""The columnar writer: ``records_text`` / ``dumps_with`` are ``json.dumps(..., indent=1)`` byte for byte."""

import enum
import json
import random

import numpy as np
import pytest

from kalos_core.cli_common import write_result
from kalos_core.io.jsonrecords import ABSENT, dumps_with, records_parts, records_text, value_texts


class _Code(enum.IntEnum):
    A = 3


FLOATS = [1e16, 1e-7, 0.1 + 0.2, 5e-324, -0.0, 0.0, 1.7976931348623157e308, 1e22, 123456789.123, 2.5e-5,
          float("nan"), float("inf"), -float("inf")]


def as_dicts(columns):
    keys = [k for k, _ in columns]
    return [{k: v for k, v in zip(keys, row) if v is not ABSENT} for row in zip(*(c for _, c in columns))]


def same(columns, depth=0):
    want = json.dumps(as_dicts(columns), indent=1).replace("\n", "\n" + " " * depth)
    assert records_text(columns, depth) == want


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_corner_values_as_json_writes_them(depth):
    n = len(FLOATS)
    same([("id", list(range(1, n + 1))),
          ("score", FLOATS),
          ("bbox", [[f, -f, 1.0, 0.5] for f in FLOATS]),
          ("tie", [k % 3 == 0 for k in range(n)]),
          ("tied_categories", [[1, 2] if k % 3 == 0 else ABSENT for k in range(n)]),      # ties
          ("category_id", [None if k % 3 == 0 else k for k in range(n)]),                 # None among ints
          ("raters", [["a", 'q"uote', "back\\slash", "é\u2028\n", ""][: k % 6] for k in range(n)]),  # 0-5 long
          ("image_id", [np.float64(0.1), _Code.A, 10**30, -5, True, "x", None, 2.5, "[{,}]", 7, 8, 9, 10]),
          ("segmentation", [{"size": [3, 4], "counts": "a\\b"} if k % 2 else [[1.5, 2.0, 3.0]] for k in range(n)]),
          ("area", [[[]], [{}], [[1, [2]]], {}, [], 1, "", [None], [True, 0.5], {"k": []}, -0.0, 1e16, 5e-324])],
         depth)


def test_columns_of_one_kind_and_empty_data():
    same([("a", [1.5, 2.0]), ("b", ["x", "y"]), ("c", [None, None]), ("d", [False, True]), ("e", [[], []])])
    same([("x", [ABSENT, 1]), ("y", [ABSENT, ABSENT])])       # a record without any key: {}
    same([("p%s", [1, 2]), ("%(q)s", [ABSENT, "%s"]), ("%", [[1, 2], [3, 4]])])   # % in keys and values
    same([("a", [ABSENT, 1, ABSENT]), ("b", [[1.5, 2], [3, 4], [5, 6]]), ("c", [ABSENT, ABSENT, ""])])   # first absent
    same([("a", [[0.5, 1]]), ("b", [ABSENT]), ("c", [""])])                 # a single record
    few = [1 / 3, 2 / 3, 1.0, 1e16, 5e-324] * 60                  # few distinct floats: each written once
    same([("score", few), ("signed", [-0.0, 1.0, 2.0] * 100), ("zero", [0.0, -0.0, 1.0] * 100),
          ("boxes", [[f, 1.0] for f in few]), ("ragged", [[f] * (k % 3) for k, f in enumerate(few)]),
          ("raters", [["a", 'b"'][: k % 3] for k in range(300)]),              # few lists of text: each written once
          ("mixed", [["1"], [1], [True], [1.0], []] * 60)])                     # equal tuples, other texts
    assert records_text([("id", [])]) == "[]" == records_text([])
    assert dumps_with({}, {}) == "{}"


def test_random_floats_as_json_writes_them():
    rng = random.Random(7)
    floats = [rng.uniform(-1, 1) * 10 ** rng.randint(-320, 308) for _ in range(3000)] + \
        [float(np.float32(rng.random())) for _ in range(500)]
    same([("v", floats), ("box", [floats[k:k + 4] for k in range(0, 3000, 4)] * 4 + [floats[:3]] * 500)])


def test_numpy_values_fail_as_json_fails():
    for bad in ([np.int64(4)], [np.float32(0.5)], [[np.int64(1)]]):
        with pytest.raises(TypeError) as expected:
            json.dumps(bad)
        with pytest.raises(TypeError) as got:
            value_texts(bad, 1)
        assert str(got.value) == str(expected.value)


def test_dumps_with_puts_the_texts_in_place():
    obj = {"images": [{"id": 1, "file_name": "a\"b.jpg"}], "annotations": [], "categories": [], "review": [{}]}
    anns = [("id", [1, 2]), ("bbox", [[0.1, 0.2, 0.3, 0.4], [1e16, -0.0, 5e-324, 1e-7]])]
    want = json.dumps({**obj, "annotations": as_dicts(anns)}, indent=1)
    assert dumps_with(obj, {"annotations": records_text(anns, 1)}) == want
    assert dumps_with(obj, {"annotations": records_parts(anns, 1)}) == want
    assert dumps_with({"a": 1}, {"a": ["[", "]"]}) == json.dumps({"a": []}, indent=1)


def test_arrays_tuples_and_few_ints_as_json_writes_them():
    rng = random.Random(3)
    rows = [[rng.choice(FLOATS + [rng.uniform(-9, 9)]) for _ in range(4)] for _ in range(400)]
    raters = [("a", "b"), ("b",), ("a", 'c"'), ()] * 100
    ints = {"support": [rng.choice([1, 2, 3]) for _ in range(400)], "big": [10**30, -1, 0] * 133 + [7],
            "tie": [rng.random() < 0.1 for _ in range(400)], "code": [_Code.A, 3] * 200}
    columns = [("bbox", np.array(rows)), ("raters", raters), ("none", np.empty((400, 0)))] + list(ints.items())
    plain = [("bbox", rows), ("raters", [list(r) for r in raters]), ("none", [[]] * 400)] + list(ints.items())
    for depth in (0, 1, 3):
        want = json.dumps(as_dicts(plain), indent=1).replace("\n", "\n" + " " * depth)
        assert records_text(columns, depth) == "".join(records_parts(columns, depth)) == want
        assert '"bbox": [' in want and "NaN" in want and "-0.0" in want and "1000000000000000000000000000000" in want


def test_write_result_writes_the_text_in_slices(tmp_path, capsys):
    text = json.dumps([{"k": "x" * 1000, "v": list(range(k))} for k in range(200)], indent=1)
    assert len(text) > 3 * (1 << 16)
    write_result(tmp_path / "a" / "out.json", text)
    write_result(tmp_path / "b.json", {"k": [1.5, None]})
    write_result(tmp_path / "c.json", "")
    assert (tmp_path / "a" / "out.json").read_text() == text and (tmp_path / "c.json").read_bytes() == b""
    assert (tmp_path / "b.json").read_text() == json.dumps({"k": [1.5, None]}, indent=1)
    assert "wrote" in capsys.readouterr().out
