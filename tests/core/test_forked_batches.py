"""Batches parsed by forked processes (kalos_core.io.batches.read_forked): the columns one process
builds, in the same order; a refuted guess reads the file again by one process; a refused
batch reads it whole; the file's last key may be its annotations."""

import json

import numpy as np
import pytest

from kalos_core import load_coco
from kalos_core.demo_data import make_synthetic_boxes
from kalos_core.io import batches
from kalos_core.io.batches import read_forked, read_in_batches
from kalos_core.io.columnar import BoxColumns

from tests.core.helpers import assert_same_dataset


def boxes_file(tmp_path, note=None, last=False, **dump):
    raw = make_synthetic_boxes(40, 3, 6, seed=5, n_categories=4)
    rng = np.random.default_rng(1)
    for k, a in enumerate(raw["annotations"]):
        a["bbox"] = [v + rng.random() * 1e-3 for v in a["bbox"]]     # full-precision floats
        if note:
            a["note"] = note
    raw["annotations"][7]["id"] = "s7"                                # a string id among ints
    raw["annotations"][3:9] = raw["annotations"][3:9][::-1]           # images not in order
    if last:                                                          # the annotations last
        raw = {"images": raw["images"], "categories": raw["categories"], "annotations": raw["annotations"]}
    path = tmp_path / "f.json"
    path.write_text(json.dumps(raw, **dump))
    return path, raw


def serial(path, block):
    cols = BoxColumns()
    return read_in_batches(path, cols.take, block), cols


def forked(path, block, monkeypatch):
    again = []
    monkeypatch.setattr(batches, "read_in_batches", lambda *a: again.append(a) or read_in_batches(*a))
    cols = BoxColumns()
    return read_forked(path, cols.take, BoxColumns, cols.merge, 2, block), cols, len(again)


def same_columns(a: BoxColumns, b: BoxColumns):
    assert list(a.images) == list(b.images) and list(a.raters) == list(b.raters)
    assert a.id_types == b.id_types and a.all_ids() == b.all_ids()
    for k in range(4):
        assert np.array_equal(a.column(k), b.column(k))


@pytest.mark.parametrize("block", [256, 4096, 1 << 21])
@pytest.mark.parametrize("dump", [{}, {"indent": 1}])
def test_forked_batches_are_the_columns_of_one_process(tmp_path, monkeypatch, block, dump):
    path, _ = boxes_file(tmp_path, **dump)
    rest, cols = serial(path, block)
    assert rest is not None and len(cols.all_ids()) > 200
    got, forked_cols, again = forked(path, block, monkeypatch)
    assert got == rest and again == 0
    same_columns(forked_cols, cols)


def test_a_refuted_guess_reads_the_file_again_by_one_process(tmp_path, monkeypatch):
    path, _ = boxes_file(tmp_path, note="}, {")    # every guessed cut may fall inside a string
    rest, cols = serial(path, 4096)
    got, forked_cols, again = forked(path, 4096, monkeypatch)
    assert again == 1 and got == rest and rest is not None
    same_columns(forked_cols, cols)


def test_a_refused_batch_reads_the_file_whole(tmp_path, monkeypatch):
    path, raw = boxes_file(tmp_path)
    raw["annotations"][-5]["bbox"][2] = "3"
    path.write_text(json.dumps(raw))
    assert serial(path, 4096)[0] is None
    got, _, again = forked(path, 4096, monkeypatch)
    assert got is None and again == 0


def test_annotations_as_the_last_key_are_read_in_batches(tmp_path, monkeypatch):
    path, raw = boxes_file(tmp_path, last=True)
    for block in (97, 4096, 1 << 21):     # (4096 once sent such a file to the whole-file reader)
        taken: list = []
        assert read_in_batches(path, lambda anns, t=taken: t.extend(anns) or True, block) == {**raw, "annotations": None}
        assert taken == raw["annotations"]
    got, cols, again = forked(path, 4096, monkeypatch)
    assert got == {**raw, "annotations": None} and again == 0 and len(cols.all_ids()) == len(raw["annotations"])


def test_load_coco_with_workers_gives_the_same_data_set(tmp_path):
    path, raw = boxes_file(tmp_path)
    assert_same_dataset(load_coco(path, workers=2), load_coco(raw, columnar=False))
