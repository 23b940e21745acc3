"""The command line never fails silently: bad options are usage errors, bad input names its ids,
``--output`` never overwrites an input, and no Python traceback reaches the user."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kalos_core.cli import main

REPO = Path(__file__).resolve().parents[2]


def labels(tmp_path, mutate=None, name="in.json"):
    images = [{"id": k, "width": 100, "height": 100, "rater_list": ["a", "b"]} for k in (1, 2)]
    anns = [{"id": 10 + k, "image_id": 1 + k // 2, "category_id": 1, "rater_id": "ab"[k % 2],
             "bbox": [k, 0, 10, 10], "segmentation": [[k, 0, k + 10, 0, k + 10, 10, k, 10]]} for k in range(4)]
    data = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "cat"}]}
    if mutate:
        mutate(data)
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def run(argv, capsys):
    """(exit code, stderr) of ``main(argv)``, argparse's SystemExit included."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


@pytest.mark.parametrize("option, value", [
    ("--threshold", "-1"), ("--threshold", "1.5"), ("--threshold", "nan"), ("--threshold", "abc"),
    ("--distance", "nope"), ("--distance", "oks"), ("--distance", "mpjpe"), ("--lsa", "0.1,abc,2"), ("--lsa", "1.5"),
    ("--lsa", ","), ("--seed", "-1"), ("--seed", "1.5"), ("--bootstrap", "-1"), ("--workers", "-2"),
    ("--max-diagnostic-raters", "-1"), ("--solver", "nope"), ("--cost", "nope"), ("--task", "nope"),
])
def test_bad_agreement_options_are_usage_errors_naming_the_option(tmp_path, capsys, option, value):
    rc, err = run(["agreement", labels(tmp_path), option, value], capsys)
    assert rc == 2
    assert option.lstrip("-").split("-")[0] in err and "usage:" in err


@pytest.mark.parametrize("argv", [
    ["calibrate", "{f}", "--seed", "-1"], ["calibrate", "{f}", "--bootstrap", "-3"],
    ["calibrate", "{f}", "--distances", "iou,oks"], ["fit-noise", "{f}", "--threshold", "2", "--output", "{o}"],
    ["simulate", "{f}", "--raters", "0", "--output", "{o}"], ["simulate", "{f}", "--magnitude", "nan", "--output", "{o}"],
    ["simulate", "{f}", "--schools", "3,x", "--output", "{o}"], ["demo", "--images", "0"],
])
def test_bad_options_of_the_other_commands_are_usage_errors(tmp_path, capsys, argv):
    f, o = labels(tmp_path), tmp_path / "out.json"
    rc, err = run([a.format(f=f, o=o) for a in argv], capsys)
    assert rc == 2 and "error:" in err and not o.exists()


@pytest.mark.parametrize("argv", [
    ["agreement", "{f}", "--output", "{f}"], ["agreement", "{f}", "--output", "{dotted}"],
    ["calibrate", "{f}", "--output", "{f}"], ["fit-noise", "{f}", "--output", "{f}"],
    ["simulate", "{f}", "--output", "{f}"],
])
def test_output_equal_to_the_input_is_refused_and_the_labels_are_untouched(tmp_path, capsys, argv):
    f = labels(tmp_path)
    before = f.read_bytes()
    dotted = tmp_path / "sub" / ".." / f.name
    (tmp_path / "sub").mkdir()
    rc, err = run([a.format(f=f, dotted=dotted) for a in argv], capsys)
    assert rc == 2 and "refusing to overwrite" in err
    assert f.read_bytes() == before


def test_output_a_folder_is_refused(tmp_path, capsys):
    rc, err = run(["agreement", labels(tmp_path), "--output", tmp_path], capsys)
    assert rc == 2 and "is a folder" in err


@pytest.mark.parametrize("mutate, task, culprit", [
    (lambda d: d["images"][0].update(width="wide"), "bbox", "image 1"),
    (lambda d: d["images"][0].update(width=0), "segm", "image 1"),
    (lambda d: d["images"][0].update(width=-3), "bbox", "image 1"),
    (lambda d: d["annotations"][1].update(bbox=[1e308, 0, 1e308, 5]), "bbox", "annotation 11"),
    (lambda d: d["annotations"][1].update(bbox=["1", "x", 3, 4]), "bbox", "annotation 11"),
    (lambda d: d["annotations"][1].update(segmentation={"counts": "!!", "size": [100, 100]}), "segm", "annotation 11"),
    (lambda d: d["annotations"][1].update(segmentation=[[0, 0, 5, 0, 9, 0]]), "segm", "annotation 11"),
    (lambda d: d["annotations"][1].update(category_id=1.9), "bbox", "annotation 11"),
    (lambda d: d["annotations"][1].update(id="10"), "bbox", "annotation '10'"),
    (lambda d: d["images"].append(dict(d["images"][0], id="1")), "bbox", "image '1'"),
    (lambda d: d["images"][0].update(rater_list="ab"), "bbox", "image 1"),
    (lambda d: d["images"][0].pop("id"), "bbox", "images[0]"),
    (lambda d: d.update(images={"a": 1}), "bbox", "'images' must be a list"),
])
def test_bad_input_on_the_command_line_names_the_culprit(tmp_path, capsys, mutate, task, culprit):
    rc, err = run(["agreement", labels(tmp_path, mutate), "--task", task], capsys)
    assert rc == 2 and culprit in err and err.startswith("error:")


@pytest.mark.parametrize("payload, fragment", [
    (b"", "empty"), (b"[1, 2]", "JSON object"), (b"null", "JSON object"), (b'"x"', "JSON object"),
    (b"[" * 50000, "nested"), (b"\xff\xfe{\x00", "JSON"), (b'{"images": [], "x": "\xe9"}', "UTF-8"),
    (b'{"images": [], "annotations": [], "categories": []}', "nothing to measure"),
])
def test_unreadable_or_empty_files_are_one_line_errors(tmp_path, capsys, payload, fragment):
    p = tmp_path / "in.json"
    p.write_bytes(payload)
    rc, err = run(["agreement", p], capsys)
    assert rc == 2 and fragment in err


def test_coercions_reach_stderr_and_the_output_json(tmp_path, capsys):
    f = labels(tmp_path, lambda d: d["images"][0].update(width="100"))
    out = tmp_path / "out.json"
    rc, err = run(["agreement", f, "--output", out, "--no-diagnostics", "--bootstrap", "0"], capsys)
    assert rc == 0 and "warning: numbers written as strings" in err
    warnings = json.loads(out.read_text())["warnings"]
    assert warnings[0]["count"] == 1 and warnings[0]["examples"] == ["image 1"]


def test_simulate_refuses_nan_boxes_and_width_zero(tmp_path, capsys):
    out = tmp_path / "sim.json"
    for mutate, culprit in ((lambda d: d["annotations"][2].update(bbox=[float("nan"), 0, 5, 5]), "annotation 12"),
                            (lambda d: d["images"][1].update(width=0), "image 2")):
        rc, err = run(["simulate", labels(tmp_path, mutate), "--output", out], capsys)
        assert rc == 2 and culprit in err and not out.exists()


def test_a_thousand_raters_are_measured_with_a_warning_for_the_skipped_diagnostics(tmp_path, capsys):
    raters = [f"r{k}" for k in range(1000)]
    anns = [{"id": k, "image_id": 1, "category_id": 1, "rater_id": r, "bbox": [k % 5, 0, 50, 50]}
            for k, r in enumerate(raters)]
    p = tmp_path / "many.json"
    p.write_text(json.dumps({"images": [{"id": 1, "width": 99, "height": 99, "rater_list": raters}],
                             "annotations": anns, "categories": [{"id": 1}]}))
    out = tmp_path / "res.json"
    rc, err = run(["agreement", p, "--bootstrap", "0", "--output", out], capsys)
    assert rc == 0 and "vitality skipped" in err and "collaboration skipped" in err and "1000 raters" in err
    assert "--max-diagnostic-raters" in err
    assert json.loads(out.read_text())["mean_alpha"] == 1.0
    rc, err = run(["agreement", p, "--no-diagnostics", "--bootstrap", "0"], capsys)
    assert rc == 0 and "skipped" not in err


def test_no_traceback_from_the_module_entry_point(tmp_path):
    f = labels(tmp_path, lambda d: d["images"][0].update(width=0))
    proc = subprocess.run([sys.executable, "-m", "kalos_core", "agreement", str(f), "--task", "segm"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "image 1" in proc.stderr


@pytest.mark.parametrize("value", ["0.05,abc", "0,0.1", "-1", ""])
def test_bad_keypoint_sigmas_are_a_usage_error(value, tmp_path, capsys):
    from kalos_core.cli import main

    path = tmp_path / "k.json"
    path.write_text("{}")
    with pytest.raises(SystemExit) as e:
        main(["agreement", str(path), "--task", "keypoints", "--keypoint-sigmas", value])
    assert e.value.code == 2 and "--keypoint-sigmas" in capsys.readouterr().err
