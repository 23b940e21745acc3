"""The LVIS double-annotation subset through FiftyOne: import without images, run the
operator, find the CLI's per-image α on every sample (skipped without ../shared/data)."""

import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco

pytestmark = pytest.mark.realdata


def test_lvis_through_the_operator_equals_the_cli(fo_isolated, lvis_subset_path):
    import fiftyone.operators as foo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    ds = import_multirater_coco("kalos-lvis", str(lvis_subset_path), layout="rater_fields", label_field="raters")
    fields = sorted(f for f in ds.get_field_schema() if f.startswith("raters_"))
    res = foo.execute_operator("@kalos/agreement/compute_agreement", dataset=ds.name,
                               params={"rater_fields": fields, "run_key": "kalos", "threshold": 0.5})
    assert res.error is None
    cli = compute_agreement(load_coco(lvis_subset_path, "bbox"), AgreementConfig(bootstrap=0))
    got = dict(zip(ds.values("coco_id"), ds.values("kalos_alpha")))
    assert got == pytest.approx({int(k): v for k, v in cli.per_image_alpha.items()})
    assert round(ds.load_run_results("kalos").mean_alpha, 4) == 0.6889
