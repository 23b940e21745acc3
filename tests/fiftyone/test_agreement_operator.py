"""compute_agreement against a real FiftyOne database: same numbers as the CLI,
both layouts, bulk write-back, run storage, form errors for bad set-ups."""

import uuid

import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco
from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import rater_dataset as make_dataset, run_agreement

URI = "@kalos/agreement/compute_agreement"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = build_demo(tmp_path_factory.mktemp("demo"), n_images=12, seed=1, with_images=False)
    return load_coco(path, "bbox")


def test_operator_matches_the_engine_on_every_sample(fo_isolated, demo):
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    run_agreement(ds, rater_fields=fields, threshold=0.5, lsa_thresholds="0.3,0.7")
    expected = compute_agreement(demo, AgreementConfig(threshold=0.5, bootstrap=0))
    got = dict(zip(ds.values("coco_id"), ds.values("kalos_alpha")))
    assert got == pytest.approx({int(k): v for k, v in expected.per_image_alpha.items()})
    stored = ds.load_run_results("kalos", load_view=False)
    assert stored.mean_alpha == pytest.approx(expected.mean_alpha)
    assert stored.global_alpha == pytest.approx(expected.global_alpha)
    assert set(stored.lsa) == {"0.3", "0.7"}
    assert "kalos" in ds.list_runs()
    assert "kalos_alpha" in ds.list_indexes()
    # sort by alpha is instant and ascending
    low = ds.sort_by("kalos_alpha").first()["kalos_alpha"]
    assert low == min(got.values())


def test_labels_get_unit_and_status(fo_isolated, demo):
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    run_agreement(ds, rater_fields=fields)
    expected = compute_agreement(demo, AgreementConfig(bootstrap=0, vitality=False, collaboration=False))
    n_units = sum(len(set(u for u in ds.values(f"{f}.detections.kalos_unit", unwind=True))) for f in fields)
    assert n_units > 0
    statuses = [s for f in fields for s in ds.values(f"{f}.detections.kalos_status", unwind=True)]
    assert set(statuses) <= {"agreed", "class_disagreement", "unmatched"}
    by_id = dict(zip([i for f in fields for i in ds.values(f"{f}.detections.coco_annotation_id", unwind=True)],
                     statuses))
    assert by_id == expected.status_of
    # labels in one unit share the unit id across rater fields
    units = [u for f in fields for u in ds.values(f"{f}.detections.kalos_unit", unwind=True)]
    assert len(set(units)) == expected.n_units


def test_both_layouts_give_identical_results(fo_isolated, demo):
    fo = fo_isolated
    a, fields = make_dataset(fo, demo, "rater_fields")
    b, _ = make_dataset(fo, demo, "rater_attribute")
    run_agreement(a, rater_fields=fields)
    run_agreement(b, layout="rater_attribute", label_field="raters", rater_attribute="rater_id")
    assert a.values("kalos_alpha") == b.values("kalos_alpha")
    ra, rb = a.load_run_results("kalos"), b.load_run_results("kalos")
    assert ra.mean_alpha == rb.mean_alpha and ra.global_alpha == rb.global_alpha
    assert ra.vitality == rb.vitality


def test_rerun_replaces_own_fields_and_other_keys_coexist(fo_isolated, demo):
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    run_agreement(ds, rater_fields=fields, run_key="strict", threshold=0.9)
    run_agreement(ds, rater_fields=fields, run_key="loose", threshold=0.3)
    strict = ds.values("strict_alpha")
    run_agreement(ds, rater_fields=fields, run_key="strict", threshold=0.9, overwrite=True)
    assert ds.values("strict_alpha") == strict
    assert set(ds.list_runs()) == {"strict", "loose"}
    assert ds.load_run_results("strict").config.threshold == 0.9
    # the user's labels are untouched
    assert sum(len(d) for d in ds.values(f"{fields[0]}.detections")) == sum(
        1 for im in demo.images for x in im.annotations if f"raters_{x.rater}" == fields[0])


def test_delete_removes_exactly_the_run(fo_isolated, demo):
    import fiftyone.operators as foo
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    run_agreement(ds, rater_fields=fields, run_key="one")
    run_agreement(ds, rater_fields=fields, run_key="two")
    before = set(ds.get_field_schema())
    res = foo.execute_operator("@kalos/agreement/delete_agreement_run", dataset=ds.name, params={"run_key": "one"})
    assert res.error is None
    assert ds.list_runs() == ["two"]
    assert set(ds.get_field_schema()) == before - {"one_alpha", "one_statuses"}
    assert ds.get_field(f"{fields[0]}.detections.one_unit") is None
    assert ds.get_field(f"{fields[0]}.detections.one_unit_no") is None
    assert ds.get_field(f"{fields[0]}.detections.two_unit") is not None


def test_browse_disagreements_saves_a_sorted_view(fo_isolated, demo):
    import fiftyone.operators as foo
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    run_agreement(ds, rater_fields=fields)
    res = foo.execute_operator("@kalos/agreement/browse_disagreements", dataset=ds.name,
                               params={"run_key": "kalos", "save": True})
    assert res.error is None
    view = ds.load_saved_view("kalos_disagreements")
    alphas = view.values("kalos_alpha")
    assert alphas == sorted(alphas)
    shown = [s for f in fields for s in view.values(f"{f}.detections.kalos_status", unwind=True)]
    assert shown and "agreed" not in shown


@pytest.mark.parametrize("params, message", [
    (dict(rater_fields=[]), "choose at least two rater fields"),
    (dict(rater_fields=["raters_careful"]), "at least two rater fields"),
    (dict(rater_fields=["raters_careful", "polys"]), "different label types"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], run_key="bad key"), "run key must"),
    (dict(rater_fields=["raters_careful", "raters_sloppy"], run_key="user"), "was not written by a KaLOS run"),
])
def test_bad_setups_are_form_errors(fo_isolated, demo, params, message):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError
    fo = fo_isolated
    ds, _ = make_dataset(fo, demo)
    s = ds.first()
    s["polys"] = fo.Polylines(polylines=[])
    s["user_alpha"] = 0.3
    s.save()
    with pytest.raises(ExecutionError, match=message):
        foo.execute_operator(URI, dataset=ds.name, params={"run_key": "kalos", **params})


def test_missing_rater_list_uses_fields_present(fo_isolated, demo):
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo, drop_rater_list=True)
    run_agreement(ds, rater_fields=fields)
    expected = compute_agreement(demo, AgreementConfig(bootstrap=0))
    assert ds.load_run_results("kalos").mean_alpha == pytest.approx(expected.mean_alpha)


def test_python_entry_and_delegated_execution(fo_isolated, demo):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    fo = fo_isolated
    ds, fields = make_dataset(fo, demo)
    op = foo.get_operator(URI)
    direct = op(ds, rater_fields=fields, run_key="direct", bootstrap=0)
    assert set(direct.timings) == {"read_s", "compute_s", "write_s"}
    queued = op(ds, delegate=True, rater_fields=fields, run_key="queued")
    assert queued.delegated and not ds.has_field("queued_alpha")
    DelegatedOperationService().execute_queued_operations(limit=5, log=False)
    ds.reload()
    assert ds.values("queued_alpha") == ds.values("direct_alpha")


def test_instance_masks_are_compared_as_masks(fo_isolated):
    import numpy as np
    fo = fo_isolated
    ds = fo.Dataset(f"kalos-{uuid.uuid4().hex[:8]}")
    left, right = np.zeros((10, 10), bool), np.zeros((10, 10), bool)
    left[:, :5], right[:, 5:] = True, True       # same box, disjoint masks
    box = [0.1, 0.1, 0.1, 0.1]
    s = fo.Sample(filepath="/nonexistent/m.jpg", metadata=fo.ImageMetadata(width=100, height=100))
    s["raters_a"] = fo.Detections(detections=[fo.Detection(label="x", bounding_box=box, mask=left)])
    s["raters_b"] = fo.Detections(detections=[fo.Detection(label="x", bounding_box=box, mask=right)])
    ds.add_sample(s)
    run_agreement(ds, rater_fields=["raters_a", "raters_b"], run_key="boxes")
    run_agreement(ds, rater_fields=["raters_a", "raters_b"], run_key="masks", distance="mask_iou")
    assert ds.values("boxes_alpha") == [1.0]
    assert ds.values("masks_alpha") == [pytest.approx(-0.5)]   # two unmatched units
