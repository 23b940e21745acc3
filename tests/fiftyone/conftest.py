"""Fixtures shared by the tests of tests/fiftyone (helpers that are not fixtures: the helpers package).

A module that needs other demo data overrides ``demo`` with its own module fixture."""

import json

import pytest

from tests.fiftyone.helpers import agreement_dataset, demo_data, reference


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's boxes: 16 images, seed 3."""
    return demo_data(tmp_path_factory, n_images=16, seed=3)


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory):
    """The demo's boxes on 6 images (seed 2): the data of the common tests."""
    return demo_data(tmp_path_factory, n_images=6, seed=2)


@pytest.fixture(scope="module")
def fields_ds(fo_isolated, demo):
    """``demo`` with one field per rater and an agreement run ``kalos``."""
    return agreement_dataset(fo_isolated, demo, "rater_fields")


@pytest.fixture(scope="module")
def attr_ds(fo_isolated, demo):
    """``demo`` in one field whose labels carry ``rater_id``, with an agreement run ``kalos``."""
    return agreement_dataset(fo_isolated, demo, "rater_attribute")


@pytest.fixture(scope="module")
def lvis_reference(fo_isolated, lvis_subset_path):
    """Per-image α and run results of the LVIS r1/r2 multi-rater COCO import."""
    return reference(json.loads(lvis_subset_path.read_text()))


@pytest.fixture(scope="module")
def imports(fo_isolated):
    """The plugin's import package (``fiftyone_layer.imports``), once FiftyOne is isolated."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports

    return imports

