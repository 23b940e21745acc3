"""Bulk write-back (fiftyone_layer/writeback.py): right labels, declared schema, views that filter labels."""

import pytest

from kalos_core import load_coco
from kalos_core.demo_data import build_demo

from tests.fiftyone.helpers import rater_dataset as make_dataset


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = build_demo(tmp_path_factory.mktemp("demo"), n_images=10, seed=3, with_images=False)
    return load_coco(path, "bbox")


def _labels(ds, fields, attr):
    """(label id -> value of attr) over every rater label of the dataset."""
    out = {}
    for f in fields:
        ids, vals = ds.values([f"{f}.detections.id", f"{f}.detections.{attr}"])
        for row_ids, row_vals in zip(ids, vals):
            out.update(zip(row_ids or [], row_vals or []))
    return out


def test_every_label_gets_the_engines_unit_and_status(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds, fields = make_dataset(fo_isolated, demo)
    before = dict(zip(ds.values("id"), ds.values("last_modified_at")))
    user = [_labels(ds, fields, a) for a in ("label", "bounding_box", "rater_id")]
    res = compute_agreement_run(ds, rater_fields=fields, run_key="wb", bootstrap=0)
    units, status = _labels(ds, fields, "wb_unit"), _labels(ds, fields, "wb_status")
    assert units == {k: res.unit_of[k] for k in units} and len(units) == len(res.unit_of)
    assert status == {k: res.status_of[k] for k in status}
    # the readable companion: the unit's number within its image, the tail of the unit id
    numbers = _labels(ds, fields, "wb_unit_no")
    assert numbers == {k: int(u.rpartition(":")[2]) for k, u in units.items()}
    assert all(isinstance(n, int) and 0 <= n < 1000 for n in numbers.values())
    assert dict(zip(ds.values("id"), ds.values("wb_alpha"))) == pytest.approx(res.per_image_alpha)
    # declared in the schema (the App's sidebar filters need it), and samples marked as modified
    assert ds.get_field(f"{fields[0]}.detections.wb_unit") is not None
    assert ds.get_field(f"{fields[0]}.detections.wb_unit_no") is not None
    assert ds.get_field("wb_alpha") is not None
    after = dict(zip(ds.values("id"), ds.values("last_modified_at")))
    assert all(after[k] > before[k] for k in before)
    # the user's labels are untouched: same ids, classes and boxes
    assert [_labels(ds, fields, a) for a in ("label", "bounding_box", "rater_id")] == user


def test_a_view_that_filters_labels_writes_only_the_labels_it_saw(fo_isolated, demo):
    from fiftyone import ViewField as F
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds, fields = make_dataset(fo_isolated, demo)
    cls = ds.values(f"{fields[0]}.detections.label", unwind=True)[0]
    view = ds
    for f in fields:
        view = view.filter_labels(f, F("label") == cls, only_matches=False)
    res = compute_agreement_run(view, rater_fields=fields, run_key="wb", bootstrap=0)
    labels, units = _labels(ds, fields, "label"), _labels(ds, fields, "wb_unit")
    seen = {k for k, v in labels.items() if v == cls}
    assert seen and len(seen) < len(labels)
    assert {k for k, v in units.items() if v is not None} == seen
    assert all(units[k] == res.unit_of[k] for k in seen)


def test_selected_samples_only(fo_isolated, demo):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    ds, fields = make_dataset(fo_isolated, demo)
    ids = ds.values("id")[:3]
    compute_agreement_run(ds.select(ids), rater_fields=fields, run_key="wb", bootstrap=0)
    alphas = dict(zip(ds.values("id"), ds.values("wb_alpha")))
    assert {k for k, v in alphas.items() if v is not None} == set(ids)
    per_sample_units = ds.values(f"{fields[0]}.detections.wb_unit")
    for sid, row in zip(ds.values("id"), per_sample_units):
        assert all(u is not None for u in row or []) if sid in ids else all(u is None for u in row or [])
