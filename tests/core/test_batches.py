"""The batched reader of a COCO file's annotations (kalos_core.io.batches): the structure scan
has known answers; the batches, read in blocks of every size, are the file's annotations;
anything orjson would not read whole as json does sends the file to the whole-file reader."""

import json

import numpy as np
import orjson
import pytest

from kalos_core import load_coco
from kalos_core.demo_data import make_synthetic_boxes
from kalos_core.io import InvalidInputError, batches
from kalos_core.io.batches import Scanner, read_in_batches

from tests.core.helpers import assert_same_dataset

ODD = [  # strings with braces, brackets, quotes, escaped quotes and backslashes, unicode
    {"id": 1, "image_id": 1, "note": "a } b ] c { [", "bbox": [1, 2, 3, 4]},
    {"id": 2, "image_id": 1, "parts": [{"p": 1}, {"p": 2}], "note": "say \"}\" and \\", "segmentation": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]},
    {"id": 3, "image_id": 1, "note": "\\\\\"}, {\"id\": 9}", "rle": {"size": [4, 4], "counts": "x}{"}},
    {"id": 4, "image_id": 1, "note": "é 日本 🦊 \u2028", "nested": [{"a": [{"b": "}, {"}]}]},
]


def scan_all(text: bytes, cuts=()):
    """Structural (position, depth after) of ``text`` scanned in pieces cut at ``cuts``."""
    scanner, out, start = Scanner(), [], 0
    for end in [*cuts, len(text)]:
        pos, depth = scanner.scan(text[start:end])
        out += list(zip((pos + start).tolist(), depth.tolist()))
        start = end
    return out


def test_scan_known_answer():
    text = rb'{"a": "x{[\"]}", "b": [1, {"c": "\\"}], "d": {}}'
    assert scan_all(text) == [(0, 1), (22, 2), (26, 3), (36, 2), (37, 1), (45, 2), (46, 1), (47, 0)]
    # the same text cut at every place (a quote, an escape or a run of backslashes split across blocks)
    for cut in range(1, len(text)):
        assert scan_all(text, [cut]) == scan_all(text), cut


@pytest.mark.parametrize("slashes, inside", [(0, False), (1, True), (2, False), (3, True), (4, False)])
def test_runs_of_backslashes_before_a_quote(slashes, inside):
    text = b'["' + b"\\" * slashes + b'"' + b', {"x": 1}]'
    # an odd run escapes the quote: the string goes on, the braces are in it, and the quote
    # after x opens another to the end (no structure but the [ )
    expect = [(0, 1)] if inside else [(0, 1), (5 + slashes, 2), (12 + slashes, 1), (13 + slashes, 0)]
    got = scan_all(text)
    assert got == expect
    for cut in range(1, len(text)):
        assert scan_all(text, [cut]) == got


def write(tmp_path, text, name="f.json"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def batched(path, block):
    got = []
    rest = read_in_batches(path, lambda anns: got.extend(anns) or True, block=block)
    return rest, got


DOCS = [
    json.dumps({"info": {"x": "]}"}, "images": [{"id": 1}], "annotations": ODD, "categories": []}),
    json.dumps({"annotations": ODD, "images": [{"id": 1, "annotations": [5]}]}, indent=2),
    json.dumps({"images": [], "annotations": ODD}, separators=(",", ":"), ensure_ascii=False),
    '\t{ "images" :\r\n[] ,\n  "annotations"\t:\n [ \n' + " ,\r\n\t".join(map(json.dumps, ODD)) + "\n]\n}\n ",
    json.dumps({"images": [], "annotations": []}),
]


@pytest.mark.parametrize("doc", DOCS)
@pytest.mark.parametrize("block", [1, 2, 3, 7, 16, 61, 256, 1 << 20])
def test_batches_are_the_annotations_whatever_the_blocks(tmp_path, doc, block):
    whole = orjson.loads(doc)
    rest, got = batched(write(tmp_path, "\ufeff" + doc if block == 7 else doc), block)
    assert got == whole["annotations"]
    assert rest == {**whole, "annotations": None}


@pytest.mark.parametrize("text", [
    b"[]", b"{}", b'{"images": []}', b" ", b"",
    b'{"annotations": [], "annotations": []}',                         # twice: json takes the last
    b'{"annotations": [{"id": 1}], "x": 1, "annotations": 5}',
    b'{"annotations": [{"id": 1} {"id": 2}]}',                          # a comma missing
    b'{"annotations": [{"id": 1}, {"id": 2},]}',                        # a trailing comma
    b'{"annotations": [, {"id": 1}]}',
    b'{"annotations": [{"id": 1}, 5]}', b'{"annotations": [[{"id": 1}]]}',
    b'{"annotations": [{"id": 1}}, "x": 1}',                            # a brace closes the array
    b'{"annotations": [{"id": 1234567890123456789}]}',                  # 19 digits: json's int
    b'{"annotations": [{"id": 1}]} x', b'{"annotations": [{"id": 1}]',  # trailing text, truncated
    b'{"\\"annotations": [{"id": 1}]}',                                 # another key that ends alike
    b'{"info": {"annotations": [{"id": 1}]}}',                          # not at the top level
    b'{"annotations": [{"id": "\xff"}]}',                               # not UTF-8
    '{"annotations": [{"id": 1}]}'.encode("utf-16"),
    b'{"annotations": [{"id": NaN}]}',
])
def test_what_json_must_read_goes_to_the_whole_file_reader(tmp_path, text):
    for block in (1, 5, 1 << 20):
        assert batched(write(tmp_path, text), block)[0] is None


def test_what_comes_before_an_object_is_in_its_batch(tmp_path):
    # (the box reader refuses a batch that holds anything but objects; json would read this file alike)
    for block in (1, 5, 1 << 20):
        assert batched(write(tmp_path, b'{"annotations": [5, {"id": 1}]}'), block) == \
            ({"annotations": None}, [5, {"id": 1}])


def test_stdlib_choice_and_a_refusing_taker_read_the_whole_file(tmp_path, monkeypatch):
    path = write(tmp_path, json.dumps({"images": [], "annotations": ODD}))
    assert read_in_batches(path, lambda anns: False) is None
    monkeypatch.setenv("KALOS_JSON", "stdlib")
    assert batched(path, 1 << 20)[0] is None


@pytest.mark.parametrize("block", [97, 1 << 12, 1 << 21])
def test_box_file_read_in_batches_equals_the_per_annotation_reader(tmp_path, monkeypatch, block):
    raw = make_synthetic_boxes(30, 3, 6, seed=3, n_categories=4)
    rng = np.random.default_rng(0)
    for a in raw["annotations"]:
        a["bbox"] = [v + rng.random() * 1e-3 for v in a["bbox"]]     # full-precision floats
    raw["annotations"][5]["id"] = "s5"                                # a string id among ints
    path = write(tmp_path, json.dumps(raw, indent=1 if block == 97 else None))
    monkeypatch.setattr(batches, "BLOCK", block)
    taken = []
    real = batches.read_in_batches
    monkeypatch.setattr("kalos_core.io.coco.read_in_batches",
                        lambda p, take, **k: taken.append(real(p, take, **k)) or taken[-1])
    ds = load_coco(path)
    assert taken[0] is not None                                       # read in batches, not whole
    assert_same_dataset(ds, load_coco(raw, columnar=False))


def test_bad_box_file_errors_as_when_read_whole(tmp_path, monkeypatch):
    raw = make_synthetic_boxes(5, 2, 3, seed=1)
    raw["annotations"][4]["bbox"] = [1, 2, "3", -4]
    raw["annotations"][6]["rater_id"] = "nobody"
    path = write(tmp_path, json.dumps(raw))
    monkeypatch.setattr(batches, "BLOCK", 64)
    with pytest.raises(InvalidInputError) as batched_error:
        load_coco(path)
    with pytest.raises(InvalidInputError) as whole_error:
        load_coco(raw, columnar=False)
    assert str(batched_error.value).replace(str(path), "input") == str(whole_error.value)
    assert "nobody" in str(batched_error.value)


@pytest.mark.parametrize("field, value, batched_read", [
    ("id", 12345678901234567890123, False),       # orjson's float: the columns refuse it
    ("category_id", -99999999999999999999, False),
    ("score", 123456789012345678901234, True),    # a field the columns do not keep
])
def test_integers_beyond_64_bits_in_box_batches(tmp_path, monkeypatch, field, value, batched_read):
    # box batches are not searched for 19-digit runs: the columns refuse every float where json
    # gives an int, and keep nothing else, so the data set (or the error) is the whole file's
    raw = make_synthetic_boxes(6, 2, 3, seed=2)
    raw["annotations"][4][field] = value
    path = write(tmp_path, json.dumps(raw))
    monkeypatch.setattr(batches, "BLOCK", 256)
    taken = []
    real = batches.read_in_batches
    monkeypatch.setattr("kalos_core.io.coco.read_in_batches",
                        lambda p, take, **k: taken.append(real(p, take, **k)) or taken[-1])
    try:
        got = load_coco(path)
    except InvalidInputError as e:
        got = str(e).replace(str(path), "input")
    try:
        whole = load_coco(raw, columnar=False)
    except InvalidInputError as e:
        whole = str(e)
    assert (taken[0] is not None) == batched_read
    if isinstance(whole, str):
        assert got == whole
    elif batched_read:
        assert_same_dataset(got, whole)
    else:
        assert got.images == whole.images and got.warnings == whole.warnings
