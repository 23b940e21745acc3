"""Brush masks (RLE) decoded by Label Studio's own code, where the plugin's venv lacks it: the SDK of
the Label Studio venv (``make ls-setup``) put on the path by the ``label_studio_sdk`` fixture."""

import numpy as np
import pytest

from tests.fiftyone.helpers import check_label_studio_cancelled_polygons_and_brush_masks as case

pytestmark = pytest.mark.labelstudio


def test_brush_masks_decoded_by_the_label_studio_sdk(label_studio_sdk, rex, tmp_path):
    case(rex, tmp_path)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_engines_rle_decoder_and_the_tests_writer_agree_with_label_studios_code(label_studio_sdk, seed):
    from label_studio_sdk.converter.brush import decode_rle, encode_rle

    from kalos_core.masks.label_studio import decode_brush_rle
    from tests.fiftyone.helpers import ls_rle, painted

    mask = painted(seed, (200, 120))
    mask[:160] = seed == 1     # a run beyond 2**16 values
    theirs = encode_rle(np.repeat(np.where(mask.ravel(), 255, 0), 4).astype(np.uint8))
    assert np.array_equal(decode_brush_rle(theirs, 120, 200), mask)
    ours = ls_rle(mask)    # literal blocks of several values, as Label Studio's editor writes
    assert np.array_equal(decode_rle(ours).reshape(200, 120, 4)[:, :, 3] > 0, mask)
