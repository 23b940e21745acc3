"""The next-rater run on FiftyOne: the hand case of tests/core/test_next_rater.py as two samples;
``<run_key>_gain`` sorts the disagreeing sample first, with the engine's gain."""

import math

import pytest

from tests.fiftyone.helpers import rater_dataset


def test_the_gain_field_sorts_the_sample_that_needs_another_rater_first(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.next_rater import next_rater_run
    from kalos_core import Annotation, MultiRaterDataset, make_image

    box = lambda aid, rater, cat, x: Annotation(aid, rater, cat, (x, 0, 20, 20))
    disagree = make_image(1, 500, 500, ["a", "b"], [box(1, "a", 1, 0), box(2, "b", 1, 0), box(3, "a", 1, 100),
                                                    box(4, "b", 2, 100), box(5, "a", 1, 200)])
    agree = make_image(2, 500, 500, ["a", "b"], [box(6, "a", 1, 0), box(7, "b", 1, 0)])
    ds, fields = rater_dataset(fo_isolated, MultiRaterDataset([agree, disagree], {1: "cat", 2: "dog"}, "box"),
                               with_metadata=True)
    res = next_rater_run(ds, rater_fields=fields, run_key="nr")
    ranked = ds.sort_by("nr_gain", reverse=True)
    assert ranked.values("coco_id") == [1, 2]
    assert ranked.values("nr_gain") == [pytest.approx(2 * 1.959963984540054 * 5 / 9 * (1 - math.sqrt(2 / 3))), 0.0]
    assert [r["image"] for r in res.rows] == ranked.values("id")
    assert ds.get_run_info("nr").config.fields == ["nr_gain"]


def test_an_agreement_runs_units_give_its_per_sample_alpha(fo_isolated, fields_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.next_rater import next_rater_run

    ds = fields_ds
    fields = ds.get_run_info("kalos").config.rater_fields
    compute_agreement_run(ds, rater_fields=fields, run_key="agr_nr", bootstrap=0, threshold=0.7)
    res = next_rater_run(ds, rater_fields=fields, run_key="nr_agr", agreement_key="agr_nr")
    alpha = dict(zip(*ds.values(["id", "agr_nr_alpha"])))
    assert len(res.rows) > 5 and all(r["alpha"] == pytest.approx(alpha[r["image"]], abs=1e-12) for r in res.rows)
    assert ds.get_run_info("nr_agr").config.agreement_key == "agr_nr"
    matched_here = next_rater_run(ds, rater_fields=fields, run_key="nr_own")    # IoU 0.5: other units
    assert any(r["alpha"] != pytest.approx(alpha[r["image"]], abs=1e-9) for r in matched_here.rows)
