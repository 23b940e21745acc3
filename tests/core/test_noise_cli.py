"""CLI contract of ``simulate`` and ``fit-noise``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kalos_core import load_coco
from kalos_core.cli import main
from kalos_core.noise import load_profile
from kalos_core.noise.testbed import lvis_like_reference, reference_to_coco

REPO_ROOT = Path(__file__).resolve().parents[2]


def _reference(tmp_path, kind="box"):
    path = tmp_path / "reference.json"
    coco = reference_to_coco(lvis_like_reference(12, seed=2, kind=kind))
    for a in coco["annotations"]:
        a["rater_id"] = "ignored"  # rater keys in the reference are ignored
    path.write_text(json.dumps(coco))
    return path, coco


def test_simulate_writes_multirater_coco_that_load_coco_reads(tmp_path, capsys):
    ref, coco = _reference(tmp_path)
    out = tmp_path / "out.json"
    assert main(["simulate", str(ref), "--raters", "4", "--magnitude", "1.0", "--seed", "0", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert all(im["rater_list"] == ["rater_1", "rater_2", "rater_3", "rater_4"] for im in data["images"])
    ds = load_coco(out, "bbox")
    assert ds.raters == ["rater_1", "rater_2", "rater_3", "rater_4"] and len(ds.images) == len(coco["images"])
    assert {"truth_ref_ids", "truth_errors", "truth_category"} <= set(data["annotations"][0])
    assert "cannibalisation ratio" in capsys.readouterr().out
    again = tmp_path / "again.json"
    main(["simulate", str(ref), "--raters", "4", "--seed", "0", "--output", str(again)])
    assert again.read_bytes() == out.read_bytes()


def test_simulate_with_schools_polygons_and_a_fitted_profile(tmp_path):
    ref, _ = _reference(tmp_path, "polygon")
    multi = tmp_path / "multi.json"
    assert main(["simulate", str(ref), "--task", "segm", "--schools", "2,2", "--defiant", "--magnitude", "0.5",
                 "--output", str(multi)]) == 0
    ds = load_coco(multi, "segm")
    assert ds.raters == ["defiant", "rater_1", "rater_2", "rater_3", "rater_4"]
    prof = tmp_path / "profile.json"
    assert main(["fit-noise", str(multi), "--task", "segm", "--output", str(prof)]) == 0
    fitted = load_profile(prof)
    assert fitted.meta["source"] == "fit-noise multi.json" and fitted.fit_report["n_matched"] > 0
    out = tmp_path / "out.json"
    assert main(["simulate", str(ref), "--task", "segm", "--profile", str(prof), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["info"]["kalos_simulation"]["profile"] == "fit-noise multi.json"


def test_bad_input_exits_with_2_and_a_message(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "missing.json"), "--output", str(tmp_path / "o.json")]) == 2
    assert "error" in capsys.readouterr().err
    ref, _ = _reference(tmp_path)
    with pytest.raises(SystemExit) as exit_:           # argparse's usage error
        main(["simulate", str(ref), "--magnitude", "-1", "--output", str(tmp_path / "o.json")])
    assert exit_.value.code == 2
    assert main(["fit-noise", str(ref), "--output", str(tmp_path / "p.json")]) == 2  # no rater_list
    assert not (tmp_path / "p.json").exists()


def test_module_entry_point(tmp_path):
    ref, _ = _reference(tmp_path)
    out = tmp_path / "o.json"
    run = subprocess.run([sys.executable, "-m", "kalos_core", "simulate", str(ref), "--raters", "2",
                          "--output", str(out)], cwd=REPO_ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert load_coco(out).raters == ["rater_1", "rater_2"]
