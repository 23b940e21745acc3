"""Brush masks (RLE) decoded by Label Studio's own code, where the plugin's venv lacks it: the SDK of
the Label Studio venv (``make ls-setup``) put on the path by the ``label_studio_sdk`` fixture."""

import pytest

from tests.fiftyone.helpers import check_label_studio_cancelled_polygons_and_brush_masks as case

pytestmark = pytest.mark.labelstudio


def test_brush_masks_decoded_by_the_label_studio_sdk(label_studio_sdk, rex, tmp_path):
    case(rex, tmp_path)
