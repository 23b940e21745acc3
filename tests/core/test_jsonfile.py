"""kalos_core.io.jsonfile: orjson (when installed) and json give the very same objects,
accept and refuse the same files with the same messages; the engine works without orjson."""

import gc
import json
import random
import re
import struct

import pytest

from kalos_core.io import InvalidInputError, jsonfile, load_coco, read_json
from kalos_core.io.jsonfile import fast_parser, has_integer_run, parse_json_text

from tests.core.helpers import small

needs_orjson = pytest.mark.skipif(jsonfile.orjson is None, reason="orjson is not installed (the 'fast' extra)")


def outcome(path, monkeypatch, parser):
    """repr of what read_json gives (repr tells 1 from 1.0 and True, -0.0 from 0.0, and shows key order)."""
    monkeypatch.setenv("KALOS_JSON", parser)
    try:
        return "ok", repr(read_json(path))
    except InvalidInputError as e:
        return "error", str(e)


def both_parsers(path, monkeypatch):
    fast, std = outcome(path, monkeypatch, "orjson"), outcome(path, monkeypatch, "stdlib")
    assert fast == std
    return fast


def test_the_switch_and_the_missing_module(monkeypatch):
    monkeypatch.setenv("KALOS_JSON", "stdlib")
    assert not fast_parser()
    monkeypatch.setenv("KALOS_JSON", " STDLIB ")
    assert not fast_parser()
    monkeypatch.delenv("KALOS_JSON")
    assert fast_parser() == (jsonfile.orjson is not None)
    # auto (default): orjson up to ORJSON_MAX_BYTES, json beyond (orjson's document tree costs
    # about two bytes per byte of the file on top of the objects); orjson: every size
    big = jsonfile.ORJSON_MAX_BYTES + 1
    assert fast_parser(jsonfile.ORJSON_MAX_BYTES) == (jsonfile.orjson is not None) and not fast_parser(big)
    monkeypatch.setenv("KALOS_JSON", "orjson")
    assert fast_parser(big) == (jsonfile.orjson is not None)
    monkeypatch.setattr(jsonfile, "orjson", None)
    assert not fast_parser()


def test_without_orjson_a_file_still_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonfile, "orjson", None)
    monkeypatch.delenv("KALOS_JSON", raising=False)
    p = tmp_path / "in.json"
    p.write_text(json.dumps(small()))
    assert load_coco(p).n_annotations == 4
    p.write_bytes(b"{not json")
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        load_coco(p)


@needs_orjson
def test_a_plain_utf8_file_is_parsed_by_orjson(tmp_path, monkeypatch):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(small()))
    monkeypatch.delenv("KALOS_JSON", raising=False)

    def refuse(*a, **k):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(json, "loads", refuse)
    assert read_json(p) == small()
    assert load_coco(p).n_annotations == 4
    assert parse_json_text(json.dumps(small())) == small()


EDGE = {
    "plain": b'{"a": [1, 2.5, -0.0, -0, 1e-400, 1E5, true, false, null, "x"]}',
    "big ints go to json (orjson reads them as floats)": b'[18446744073709551616, -9223372036854775809, '
                                                         b'18446744073709551615, -9223372036854775808]',
    "many digits in a float": b"[0.1000000000000000055511151231257827021181583404541015625, 123456789012345678901.5]",
    "NaN and Infinity are json's": b'{"a": NaN, "b": [Infinity, -Infinity]}',
    "floats out of range": b"[1e400, -1.7976931348623159e308]",
    "largest and smallest floats": b"[1.7976931348623157e308, 1.7976931348623158e308, 4.9406564584124654e-324, "
                                   b"2.2250738585072011e-308]",
    "duplicate keys": b'{"a": 1, "b": 2, "a": 3}',
    "unicode": '{"caf\u00e9": "\u65e5\u672c \U0001f600", "e": "\\u00e9\\ud83d\\ude00\\u0000"}'.encode(),
    "lone surrogate escape": b'["\\ud800", "\\udc00x"]',
    "control character": b'["a\x01b"]',
    "trailing comma": b"[1, 2,]",
    "extra data": b"[1] [2]",
    "leading zero": b"[01]",
    "form feed": b"\x0c[1]",
    "whitespace": b" \t\r\n[1] \n",
    "bom": b"\xef\xbb\xbf[1]",
    "two boms": b"\xef\xbb\xbf\xef\xbb\xbf[1]",
    "latin-1": '{"x": "caf\u00e9"}'.encode("latin-1"),
    "encoded surrogate": b'["\xed\xa0\x80"]',
    "utf-16": '{"x": "caf\u00e9"}'.encode("utf-16"),
    "utf-32": '{"x": [1.5]}'.encode("utf-32"),
    "deep": b"[" * 100000 + b"]" * 100000,
    "deep for orjson": b"[" * 1025 + b"]" * 1025,
    "empty": b" \n",
    "number only": b"12345678901234567890",
}


@pytest.mark.parametrize("payload", EDGE.values(), ids=list(EDGE))
def test_orjson_and_json_accept_and_refuse_alike(tmp_path, monkeypatch, payload):
    p = tmp_path / "in.json"
    p.write_bytes(payload)
    both_parsers(p, monkeypatch)


def test_known_outcomes_of_the_edges(tmp_path, monkeypatch):
    p = tmp_path / "in.json"
    for key, want in [("big ints go to json (orjson reads them as floats)", "[18446744073709551616, "),
                      ("NaN and Infinity are json's", "{'a': nan, 'b': [inf, -inf]}"),
                      ("duplicate keys", "{'a': 3, 'b': 2}"), ("lone surrogate escape", "['\\ud800', '\\udc00x']")]:
        p.write_bytes(EDGE[key])
        assert both_parsers(p, monkeypatch)[1].startswith(want)
    p.write_bytes(EDGE["deep for orjson"])
    assert both_parsers(p, monkeypatch)[0] == "error"


def random_number(rng):
    """A JSON number of up to 25 significant digits over the whole double range."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))).lstrip("0") or "0"
    sign = rng.choice(["", "-"])
    form = rng.randrange(4)
    if form == 0:
        return sign + digits
    if form == 1:
        cut = rng.randint(1, len(digits))
        return f"{sign}{digits[:cut]}.{digits[cut:] or '0'}"
    if form == 2:
        return f"{sign}{digits[0]}.{digits[1:] or '0'}e{rng.randint(-330, 310)}"
    bits = rng.getrandbits(64)
    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return repr(value) if value == value and abs(value) != float("inf") else "0.5"


@needs_orjson
def test_floats_are_bit_identical(tmp_path, monkeypatch):
    rng = random.Random(7)
    numbers = [random_number(rng) for _ in range(20000)]
    text = "[" + ", ".join(numbers) + "]"
    # orjson itself, where it answers (numbers it turns into inf are json's: it refuses the file)
    for n in numbers:
        try:
            fast = jsonfile.orjson.loads(n)
        except jsonfile.orjson.JSONDecodeError:
            continue
        std = json.loads(n)
        if isinstance(std, int) and not isinstance(fast, int):
            assert len(n.lstrip("-")) >= 19     # an integer beyond 64 bits: the digit run sends it to json
            continue
        assert type(fast) is type(std) and struct.pack("<d", fast) == struct.pack("<d", std), n
    # and read_json on the whole file, by both routes
    p = tmp_path / "in.json"
    p.write_text(text)
    assert both_parsers(p, monkeypatch)[0] == "ok"
    short = [n for n in numbers if len(re.sub(r"\D", "", n)) < 19 and "e" not in n]
    p.write_text("[" + ", ".join(short) + "]")
    assert both_parsers(p, monkeypatch)[0] == "ok"


def test_integer_runs_are_found_like_a_regex():
    rng = random.Random(3)
    for _ in range(5000):
        length = rng.randint(2, 25)
        alphabet = "0123456789" * rng.randint(1, 12) + ' .,e-"'
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 150))).encode()
        chunk = rng.choice([1, 7, 64, 1 << 23])           # runs across the cut between chunks too
        want = bool(re.search(rb"(?:^|[^0-9.])[0-9]{%d}" % length, raw))
        assert has_integer_run(raw, length, chunk) == want, (raw, length, chunk)
    assert has_integer_run(b"x" * 1000 + b"1" * 19)
    assert has_integer_run(b"1" * 19)                         # a bare integer, the whole document
    assert not has_integer_run(b"x" * 1000 + b"1" * 18 + b"x" + b"1" * 18)
    assert has_integer_run("\u00e9 1234567890123456789".encode())
    assert has_integer_run(b"[-12345678901234567890]")        # beyond 64 bits: json must read it
    assert not has_integer_run(b"[0.000123456789012345678901]")   # a long fraction: one float either way


@needs_orjson
def test_full_precision_floats_go_to_orjson_and_read_the_same(tmp_path, monkeypatch):
    rng = random.Random(11)
    numbers = [repr(rng.random() * 10.0 ** rng.randint(-12, 4)) for _ in range(20000)]
    raw = ("[" + ", ".join(numbers) + "]").encode()
    assert not has_integer_run(raw) and jsonfile._orjson(raw) is not jsonfile._FAILED
    assert [struct.pack("<d", x) for x in jsonfile._orjson(raw)] == [struct.pack("<d", x) for x in json.loads(raw)]


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_restores_the_collector(tmp_path, enabled):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(small()))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        load_coco(p)
        read_json(p)
        with pytest.raises(InvalidInputError):
            load_coco(bad)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.realdata
def test_orjson_and_json_give_the_same_lvis_file(lvis_subset_path, monkeypatch):
    kind, text = both_parsers(lvis_subset_path, monkeypatch)
    assert kind == "ok" and len(text) > 1_000_000


SETTLED = """
import gc, json, sys
from kalos_core.io import load_coco, read_json
path = sys.argv[1]
gc.collect()
parsed = read_json(path)
assert gc.isenabled() and gc.get_freeze_count() == 0
assert any(o is parsed for o in gc.get_objects(generation=2)), "parsed objects not in the oldest generation"
assert not any(o is parsed for o in gc.get_objects(generation=0))
ds = load_coco(path)
assert any(o is ds for o in gc.get_objects(generation=2)) and gc.get_freeze_count() == 0
mine = [[] for _ in range(10)]
gc.freeze()
frozen = gc.get_freeze_count()
parsed2 = read_json(path)
ds2 = load_coco(path)
assert gc.get_freeze_count() == frozen, "a caller's frozen objects were unfrozen"
print("ok")
"""


def test_parsed_objects_settle_in_the_oldest_generation_and_frozen_ones_stay(tmp_path):
    """In a fresh interpreter (other tests freeze objects): no collection walks a parsed file's
    objects right after reading it, and objects a caller froze stay frozen."""
    import os
    import subprocess
    import sys

    p = tmp_path / "in.json"
    p.write_text(json.dumps(small()))
    proc = subprocess.run([sys.executable, "-c", SETTLED, str(p)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
