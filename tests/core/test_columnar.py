"""The columnar box reader (kalos_core.io.columnar) equals the per-annotation reader:
the same data set, the same agreement result on every field; anything it cannot take
falls back to the per-annotation reader (same errors, same warnings)."""

import copy
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, compute_agreement, load_coco
from kalos_core.columns import AnnotationColumns
from kalos_core.demo_data import make_synthetic_boxes
from kalos_core.io import InvalidInputError
from kalos_core.agreement.problem import annotation_key

from tests.core.helpers import assert_same, assert_same_dataset

ALL = AgreementConfig(lsa_thresholds=(0.3,), bootstrap=50)


def both(raw, task="bbox"):
    return load_coco(copy.deepcopy(raw), task), load_coco(copy.deepcopy(raw), task, columnar=False)


def assert_same_result(col, ref, config=ALL):
    a, b = compute_agreement(col, config), compute_agreement(ref, config)
    for f in dataclasses.fields(a):
        assert_same(getattr(a, f.name), getattr(b, f.name), f.name)


def _with_ties(raw, rng):
    """Copies of boxes by the same rater and class (the canonical order then goes by repr(id)),
    string ids mixed with integer ids and a rater written as an integer."""
    anns = raw["annotations"]
    extra = []
    for k in rng.choice(len(anns), size=min(len(anns), max(1, len(anns) // 10)), replace=False).tolist():
        dup = dict(anns[k], id=f"s{k}" if k % 2 else 10_000_000 + k)
        extra.append(dup)
    raw["annotations"] = anns + extra
    rng.shuffle(raw["annotations"])
    return raw


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(2, 4), st.integers(0, 6), st.integers(0, 10_000))
def test_columnar_equals_per_annotation_reader_on_random_boxes(n_images, n_raters, objects, seed):
    raw = _with_ties(make_synthetic_boxes(n_images, n_raters, objects, seed=seed, n_categories=3),
                     np.random.default_rng(seed))
    col, ref = both(raw)
    assert_same_dataset(col, ref)
    assert_same_result(col, ref)


def test_canonical_order_equals_annotation_key_with_ties():
    raw = _with_ties(make_synthetic_boxes(3, 3, 8, seed=1, n_categories=2), np.random.default_rng(1))
    col, _ = both(raw)
    for im in col.images:
        cols = im.annotations
        rows = sorted(im.raters)
        row = np.array([rows.index(r) for r in cols.rater_names()], dtype=np.int64)
        got = [a.id for a in cols.take(cols.canonical_order(row))]
        assert got == [a.id for a in sorted(cols, key=annotation_key)]


def test_integer_rater_ids_and_empty_images_read_columnar():
    raw = make_synthetic_boxes(4, 2, 3, seed=2)
    raw["images"].append({"id": "extra", "width": 10, "height": 10, "rater_list": [7, "b"]})
    raw["annotations"].append({"id": "x1", "image_id": "extra", "category_id": 1, "bbox": [1, 1, 2, 2],
                               "rater_id": 7})
    col, ref = both(raw)
    assert_same_dataset(col, ref)
    assert col.images[-1].annotations[0].rater == "7"
    assert len(col.images[0].annotations) == len(ref.images[0].annotations)


@pytest.mark.parametrize("mutate", [
    lambda r: r["annotations"][0].update(bbox=[1, 2, "3", 4]),          # coerced: warning
    lambda r: r["annotations"][0].update(category_id=1.0),              # coerced: warning
    lambda r: r["annotations"][0].update(bbox=[1, 2, 0, 4]),            # refused
    lambda r: r["annotations"][0].update(rater_id="nobody"),            # refused
    lambda r: r["annotations"][1].update(id=r["annotations"][0]["id"]),  # duplicate id
    lambda r: r["annotations"][0].update(image_id=str(r["annotations"][0]["image_id"])),
    lambda r: r["images"][0].pop("width"),                             # size from the extent: warning
    # each check of the columnar reader, one by one (they must all still be made)
    lambda r: r["annotations"][0].update(bbox=[1, 2, True, 4]),         # a bool is no number
    lambda r: r["annotations"][0].update(bbox=[1, 2, 3, 4, 5]),         # five numbers
    lambda r: r["annotations"][0].update(bbox=[1, 2, 3]) or r["annotations"][1].update(bbox=[1, 2, 3, 4, 5]),
    lambda r: r["annotations"][0].update(bbox=(1, 2, 3, 4)),            # not a list
    lambda r: r["annotations"][0].update(bbox=[1, 2, 10**400, 4]),      # an int too large for a float
    lambda r: r["annotations"][0].update(bbox=[1, 2, float("nan"), 4]),
    lambda r: r["annotations"][0].update(bbox=[1, 2, 3e7, 4]),          # beyond MAX_COORDINATE
    lambda r: r["annotations"][0].update(bbox=[1, 2, 1e-300, 1e-300]),  # no area relative to the image
    lambda r: r["annotations"][0].update(image_id=float(r["annotations"][0]["image_id"])),  # 1.0 is not image 1
    lambda r: r["annotations"][0].update(image_id=True),
    lambda r: r["annotations"][0].update(image_id=99),                  # no such image
    lambda r: r["annotations"][0].update(rater_id=True),
    lambda r: r["annotations"][0].update(rater_id=1.5),
    lambda r: r["annotations"][0].update(category_id=True),
    lambda r: r["annotations"][0].update(category_id=99),               # not a listed class
    lambda r: r["annotations"][0].update(category_id=2**70),
    lambda r: r["annotations"][1].update(id=str(r["annotations"][0]["id"])),  # the same id written two ways
    lambda r: r["annotations"][0].update(id=2.5),
    lambda r: r["annotations"][0].pop("bbox"),
    lambda r: r["annotations"].append(["not", "a", "dict"]),
    lambda r: r["images"][0].update(rater_list=["rater_1", "rater_2"]),  # rater_3 not listed on image 1 alone
    lambda r: [im.update(rater_list=["rater_1", "rater_2"]) for im in r["images"]],  # nor anywhere
])
def test_what_the_columnar_reader_cannot_take_goes_the_per_annotation_way(mutate):
    raw = make_synthetic_boxes(3, 3, 4, seed=3)
    mutate(raw)
    try:
        ref = load_coco(copy.deepcopy(raw), "bbox", skip_invalid=True, columnar=False)
    except InvalidInputError:
        ref = None
    col = load_coco(copy.deepcopy(raw), "bbox", skip_invalid=True)
    assert not any(isinstance(im.annotations, AnnotationColumns) for im in col.images)
    assert col.images == ref.images and col.warnings == ref.warnings and col.skipped == ref.skipped
    with pytest.raises(InvalidInputError) if ref.skipped else _nothing():
        load_coco(copy.deepcopy(raw), "bbox")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_columns_pickle_and_compare_like_lists():
    import pickle

    col, ref = both(make_synthetic_boxes(2, 2, 4, seed=4))
    im = pickle.loads(pickle.dumps(col.images[0]))
    assert im == ref.images[0] and im.annotations[-1] == ref.images[0].annotations[-1]
    assert im.annotations[:2] == ref.images[0].annotations[:2]


def test_annotations_in_or_out_of_image_order_and_varied_rater_lists_read_alike():
    raw = make_synthetic_boxes(6, 3, 5, seed=5)
    raw["images"][2]["rater_list"] = ["rater_3", "rater_1", "rater_2"]   # another order: other row positions
    raw["images"][4]["rater_list"] = ["rater_2", "rater_3", "rater_1", "rater_9"]
    shuffled = copy.deepcopy(raw)
    np.random.default_rng(5).shuffle(shuffled["annotations"])
    col, ref = both(raw)
    assert_same_dataset(col, ref)
    col_shuffled, ref_shuffled = both(shuffled)
    assert_same_dataset(col_shuffled, ref_shuffled)
    assert [sorted(map(repr, im.annotations)) for im in col_shuffled.images] == \
           [sorted(map(repr, im.annotations)) for im in col.images]
    same = make_synthetic_boxes(4, 3, 5, seed=6)                        # one rater list for all images
    assert_same_dataset(*both(same))


@pytest.mark.realdata
def test_columnar_equals_per_annotation_reader_on_lvis(lvis_subset_path):
    raw = json.loads(open(lvis_subset_path).read())
    col, ref = both(raw)
    assert_same_dataset(col, ref)
    assert_same_result(col, ref, AgreementConfig(lsa_thresholds=(0.3, 0.7), bootstrap=100))


def _taken(cls, *batches):
    cols = cls()
    if not all(cols.take(anns) for anns in batches):
        return False
    ids = cols.all_ids()
    return (ids.tolist() if isinstance(ids, np.ndarray) else ids, cols.id_types,
            list(cols.images), list(cols.raters), [cols.column(k).tolist() for k in range(4)])


@pytest.mark.parametrize("mutate", [
    lambda a: None,
    lambda a: a[0].update(bbox=[1, 2, True, 4]), lambda a: a[0].update(bbox=[0, False, 3, 4]),
    lambda a: a[0].update(bbox=[1, 2, "3", 4]), lambda a: a[0].update(bbox="abcd"),
    lambda a: a[0].update(bbox="1234"), lambda a: a[0].update(bbox={"x": 1, "y": 2, "w": 3, "h": 4}),
    lambda a: a[0].update(bbox=[1, 2, 3]), lambda a: a[0].update(bbox=[1, 2, [3], 4]),
    lambda a: a[0].update(bbox=[1, 2, 10**400, 4]), lambda a: a[0].update(bbox=None),
    lambda a: a[0].update(bbox=4), lambda a: a[0].update(bbox=[0, 0, 1, 1]),
    lambda a: a[0].update(id=True), lambda a: a[0].update(id=0), lambda a: a[0].update(id=1.0),
    lambda a: a[0].update(id="s0"), lambda a: a[0].update(id=2**63), lambda a: a[0].update(id=None),
    lambda a: a[0].update(image_id=True), lambda a: a[1].update(image_id=False), lambda a: a[0].update(image_id="1"),
    lambda a: a[0].update(image_id=1.0), lambda a: a[0].update(image_id=2**64),
    lambda a: a[0].update(rater_id=1), lambda a: a[0].update(rater_id=True), lambda a: a[0].update(rater_id=1.5),
    lambda a: a[0].update(rater_id=[1]), lambda a: a[0].update(rater_id=None),
    lambda a: a[0].update(category_id=True), lambda a: a[0].update(category_id=1.0),
    lambda a: a[0].update(category_id="1"), lambda a: a[0].update(category_id=2**70),
    lambda a: a[0].update(category_id=0), lambda a: a[0].pop("rater_id"),
    lambda a: a.append([1, 2]), lambda a: a.append("id"), lambda a: a.append(None),
    lambda a: a.reverse(), lambda a: a.clear(),
])
def test_parsed_columns_take_what_box_columns_take(mutate):
    """The orjson fast path (ParsedBoxColumns) takes exactly what BoxColumns takes, into the same columns."""
    from kalos_core.io.columnar import BoxColumns, ParsedBoxColumns

    raw = make_synthetic_boxes(4, 3, 4, seed=7)
    anns = raw["annotations"]
    mutate(anns)
    anns = json.loads(json.dumps(anns))           # parsed JSON: the types orjson gives
    want = _taken(BoxColumns, anns)
    assert _taken(ParsedBoxColumns, anns) == want
    half = len(anns) // 3                          # two batches: codes carried from one to the next
    assert _taken(ParsedBoxColumns, anns[:half], anns[half:]) == _taken(BoxColumns, anns[:half], anns[half:])


def test_the_reader_hands_the_batches_columns_over(tmp_path):
    """Joining the batches' columns lets each batch's copy go (a file's columns are not held twice);
    ``keep=True`` (the default) leaves them to be read again."""
    from kalos_core.io.columnar import BoxColumns, read_boxes
    from kalos_core.io.coco import _categories, _images

    raw = make_synthetic_boxes(n_images=6, n_raters=3, objects_per_image=5, seed=2)
    cols = BoxColumns()
    anns = raw["annotations"]
    assert cols.take(anns[:40]) and cols.take(anns[40:])
    kept = [cols.column(k).tolist() for k in range(4)], cols.all_ids().tolist()
    assert kept == ([cols.column(k).tolist() for k in range(4)], cols.all_ids().tolist())
    ds = read_boxes(raw["images"], cols, raw["categories"], _categories, _images)
    assert cols.ids == [] and [c.n for c in cols.columns] == [0] * 4
    assert_same_dataset(ds, load_coco(copy.deepcopy(raw), columnar=False))


def test_a_growing_column_appends_in_place_and_pickles_its_values():
    import pickle
    from kalos_core.io.columnar import _Growing

    col = _Growing(np.float64, 4)
    parts = [np.arange(4.0 * n).reshape(n, 4) for n in (0, 3, 1500, 7)]
    for p in parts:
        col.append(p)
    whole = np.concatenate(parts)
    assert np.array_equal(col.copy(), whole) and len(col.data) >= len(whole)
    back = pickle.loads(pickle.dumps(col))
    assert np.array_equal(back.copy(), whole) and len(back.data) == len(whole)     # no spare room sent
    assert np.array_equal(pickle.loads(pickle.dumps(_Growing(np.int64))).copy(), np.zeros(0, np.int64))
    again = pickle.loads(pickle.dumps(col, protocol=5))                           # may lend its buffer
    again.append(parts[1])
    assert np.array_equal(again.copy(), np.concatenate([whole, parts[1]]))
    taken = col.take()
    assert np.array_equal(taken, whole) and taken.shape == (1510, 4) and col.n == 0 and col.copy().shape == (0, 4)
