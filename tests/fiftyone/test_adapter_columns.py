"""The FiftyOne adapter's columnar box read equals its per-label read, item for item,
in both layouts, and so does the agreement result; a problem label falls back to the
per-label read, which names it."""

import dataclasses
import json

import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco
from kalos_core.columns import AnnotationColumns
from kalos_core.demo_data import build_demo
from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import SetupError, read_dataset, resolve_source
from tests.fiftyone.helpers import rater_dataset as make_dataset


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = build_demo(tmp_path_factory.mktemp("demo"), n_images=12, seed=2, with_images=False)
    return load_coco(path, "bbox")


@pytest.mark.parametrize("layout", ["rater_fields", "rater_attribute"])
def test_columnar_read_equals_per_label_read(fo_isolated, demo, layout):
    ds, fields = make_dataset(fo_isolated, demo, layout=layout)
    source = (resolve_source(ds, rater_fields=fields) if layout == "rater_fields"
              else resolve_source(ds, label_field="raters"))
    col, ref = read_dataset(ds, source), read_dataset(ds, source, columnar=False)
    assert all(isinstance(im.annotations, AnnotationColumns) for im in col.images)
    assert col.images == ref.images
    assert sum(len(im.annotations) for im in col.images) == demo.n_annotations > 0
    assert (col.categories, col.kind, col.meta) == (ref.categories, ref.kind, ref.meta)
    config = AgreementConfig(lsa_thresholds=(0.3,), bootstrap=50)
    a, b = compute_agreement(col, config), compute_agreement(ref, config)
    assert json.dumps(a.to_dict(include_labels=True), sort_keys=True) == \
           json.dumps(b.to_dict(include_labels=True), sort_keys=True)
    assert {f.name for f in dataclasses.fields(a)} - set(a.to_dict(include_labels=True)) <= {"timings"}
    ds.delete()


def test_a_label_without_class_falls_back_and_is_named(fo_isolated, demo):
    ds, fields = make_dataset(fo_isolated, demo)
    sample = ds.first()
    dets = sample[fields[0]].detections
    dets[0].label = None
    sample.save()
    source = resolve_source(ds, rater_fields=fields)
    with pytest.raises(SetupError, match="no class"):
        read_dataset(ds, source, columnar=True)
    ds.delete()
