"""Per-rater mask folders on the command line: PNG class maps as CVAT and FiftyOne write them
(8-bit, value = class index) and .npy; refused by name, one line, exit 2: masks of different sizes,
unknown class values, empty and corrupt files."""

import json

import numpy as np
import pytest
from PIL import Image

from tests.core.helpers import LABELMAP, cvat_export, write_png
from tests.core.helpers import run_masks as run
from tests.core.helpers import truth_mask as truth


@pytest.fixture
def folders(tmp_path):
    """Three raters, two images; bob has no mask of img2 (missing, not disagreement)."""
    for k, rater in enumerate(("ann", "bob", "cy")):
        write_png(tmp_path / rater / "img1.png", truth(shift=k))
        if rater != "bob":
            write_png(tmp_path / rater / "img2.png", truth(shift=2 * k))
    return [tmp_path / r for r in ("ann", "bob", "cy")]


def test_png_folders_give_the_result_json_and_the_consensus_pngs(folders, tmp_path, capsys):
    out_json, consensus = tmp_path / "out.json", tmp_path / "consensus"
    rc, out = run([*folders, "--classes", "bg,road,car", "--output", out_json, "--consensus-dir", consensus,
                   "--probabilities"], capsys)
    assert rc == 0, out.err
    result = json.loads(out_json.read_text())
    assert result["classes"] == {"0": "bg", "1": "road", "2": "car"} and result["raters"] == ["ann", "bob", "cy"]
    assert [row["raters"] for row in result["per_image"]] == [["ann", "bob", "cy"], ["ann", "cy"]]
    assert result["consensus"] == {"method": "staple", "tolerance": 1e-7, "max_iterations": 1000}
    assert result["pairs"]["ann|bob"]["2"]["dice"] == 1.0        # the car is where both drew it
    assert 0 < result["alpha_per_class"]["1"] < 1 and "class road: alpha" in out.out
    made = Image.open(consensus / "img1.png")
    assert made.mode == "L" and np.array_equal(np.asarray(made), truth(shift=1))   # the middle rater's map
    assert Image.open(consensus / "img2_probability.png").mode == "L"


def test_npy_maps_read_as_pngs(tmp_path, capsys):
    for k, rater in enumerate(("a", "b")):
        (tmp_path / rater).mkdir()
        np.save(tmp_path / rater / "x.npy", truth(shift=k).astype(np.int32))
    rc, out = run([tmp_path / "a", tmp_path / "b", "--consensus", "majority", "--no-boundary"], capsys)
    assert rc == 0, out.err


@pytest.mark.parametrize("break_it, words", [
    (lambda d: write_png(d[1] / "img1.png", np.zeros((40, 50))), ["img1", "differ in size", "bob 40x50"]),
    (lambda d: write_png(d[2] / "img2.png", np.full((40, 48), 7)), ["img2", "'cy'", "[7]", "--classes"]),
    (lambda d: (d[0] / "img1.png").write_bytes(b""), ["ann/img1.png", "empty file"]),
    (lambda d: (d[0] / "img1.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really"), ["ann/img1.png", "cannot be read"]),
    (lambda d: Image.new("RGB", (48, 40)).save(d[0] / "img1.png"), ["ann/img1.png", "RGB image, not a class map"]),
])
def test_bad_masks_are_refused_by_name_in_one_line(folders, capsys, break_it, words):
    break_it(folders)
    rc, out = run([*folders, "--classes", "bg,road,car"], capsys)
    lines = out.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), out.err
    assert all(w in lines[0] for w in words), lines[0]


def test_a_single_folder_is_refused(folders, capsys):
    rc, out = run([folders[0]], capsys)
    assert rc == 2 and "at least two rater folders" in out.err


def test_cvat_segmentation_mask_exports_read_as_the_class_maps_they_colour(tmp_path, capsys):
    dirs = [cvat_export(tmp_path, r, {"img1": truth(shift=k), "img2": truth(shift=2 * k)})
            for k, r in enumerate(("ann", "bob"))]
    for k, r in enumerate(("ann", "bob")):
        write_png(tmp_path / "plain" / r / "img1.png", truth(shift=k))
        write_png(tmp_path / "plain" / r / "img2.png", truth(shift=2 * k))
    rc, _ = run([*dirs, "--output", tmp_path / "cvat.json"], capsys)
    rc2, _ = run([tmp_path / "plain" / "ann", tmp_path / "plain" / "bob", "--output", tmp_path / "plain.json"],
                 capsys)
    cvat, plain = (json.loads((tmp_path / f).read_text()) for f in ("cvat.json", "plain.json"))
    assert rc == rc2 == 0 and cvat["classes"] == {"0": "background", "1": "road", "2": "car"}
    assert cvat["alpha"] == plain["alpha"] and cvat["pairs"] == plain["pairs"]


def test_a_colour_outside_the_labelmap_or_differing_labelmaps_are_refused(tmp_path, capsys):
    a = cvat_export(tmp_path, "ann", {"img1": truth()})
    b = cvat_export(tmp_path, "bob", {"img1": truth(shift=1)})
    Image.fromarray(np.full((40, 48, 3), 7, np.uint8)).save(b / "SegmentationClass" / "img1.png")
    rc, out = run([a, b], capsys)
    assert rc == 2 and "bob/SegmentationClass/img1.png: colour (7, 7, 7) at 1920 pixel(s) is no label" in out.err
    c = cvat_export(tmp_path, "cy", {"img1": truth()}, labelmap=LABELMAP.replace("car", "truck"))
    rc, out = run([a, c], capsys)
    assert rc == 2 and "labelmap.txt files differ" in out.err and "cy: background, road, truck" in out.err
