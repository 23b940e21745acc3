"""The command line contract: flags, JSON keys, exit codes."""

import json
import subprocess
import sys
from pathlib import Path


from kalos_core.cli import main

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path, data):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(data))
    return p


def two_rater_file(tmp_path):
    images = [{"id": k, "width": 100, "height": 100, "rater_list": ["a", "b"]} for k in (1, 2)]
    anns = [
        {"id": 1, "image_id": 1, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10]},
        {"id": 2, "image_id": 1, "category_id": 1, "rater_id": "b", "bbox": [0, 0, 10, 10]},
        {"id": 3, "image_id": 2, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10]},
        {"id": 4, "image_id": 2, "category_id": 2, "rater_id": "b", "bbox": [0, 0, 10, 10]},
    ]
    return write(tmp_path, {"images": images, "annotations": anns,
                            "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]})


def test_agreement_writes_the_contract(tmp_path, capsys):
    out = tmp_path / "out.json"
    rc = main(["agreement", str(two_rater_file(tmp_path)), "--task", "bbox", "--threshold", "0.5",
               "--solver", "greedy", "--cost", "soft", "--lsa", "0.3,0.5", "--output", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["per_image_alpha"] == {"1": 1.0, "2": 0.0}
    assert res["mean_alpha"] == 0.5
    assert set(res["lsa"]) == {"0.3", "0.5"}
    assert res["n_images"] == 2 and res["n_annotations"] == 4
    assert res["config"]["solver"] == "greedy" and res["config"]["threshold"] == 0.5
    assert {"vitality", "class_difficulty", "collaboration", "global_alpha"} <= set(res)
    assert "mean alpha    0.5000" in capsys.readouterr().out


def test_invalid_input_exits_nonzero_with_ids(tmp_path, capsys):
    p = two_rater_file(tmp_path)
    data = json.loads(p.read_text())
    data["annotations"][3]["rater_id"] = "zed"
    data["annotations"][0]["bbox"] = [0, 0, -1, 5]
    write(tmp_path, data)
    assert main(["agreement", str(p)]) == 2
    err = capsys.readouterr().err
    assert "annotation 4, rater 'zed'" in err and "annotation 1, rater 'a'" in err
    out = tmp_path / "o.json"
    assert main(["agreement", str(p), "--skip-invalid", "--output", str(out)]) == 0
    assert json.loads(out.read_text())["n_skipped"] == 2


def test_module_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kalos_core", "agreement", str(two_rater_file(tmp_path)),
                           "--no-diagnostics", "--bootstrap", "0"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "global alpha" in proc.stdout


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["agreement", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
