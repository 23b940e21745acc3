"""``python -m kalos_core calibrate``: flags, the JSON contract (the panel reads it), exit codes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kalos_core.cli import main
from kalos_core.demo_data import build_demo

REPO = Path(__file__).resolve().parents[2]
DISTANCE_KEYS = {"ks", "ks_ci", "tau_star", "tau_ci", "similarity_threshold", "similarity_ci", "sigma",
                 "tau_method", "do", "de", "histogram", "strata"}
STRATUM_KEYS = {"ks", "tau_star", "similarity_threshold", "n_do", "n_de"}


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("clidemo"), n_images=20, seed=3, with_images=False)


def test_calibrate_writes_the_contract(demo_path, tmp_path, capsys):
    out = tmp_path / "cal.json"
    rc = main(["calibrate", str(demo_path), "--task", "bbox", "--distances", "iou,centroid", "--seed", "4",
               "--bootstrap", "30", "--stratify", "--output", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert (res["task"], res["seed"], res["bootstrap"], res["confidence"], res["n_images"]) == ("bbox", 4, 30, 0.95, 20)
    assert list(res["distances"]) == ["iou", "centroid"]
    for d in res["distances"].values():
        assert DISTANCE_KEYS <= set(d)
        assert d["ks_ci"][0] <= d["ks"] <= d["ks_ci"][1]
        assert d["tau_ci"][0] <= d["tau_star"] <= d["tau_ci"][1]
        assert d["similarity_threshold"] == pytest.approx(1 - d["tau_star"], abs=2e-6)
        assert d["similarity_ci"] == pytest.approx([1 - d["tau_ci"][1], 1 - d["tau_ci"][0]], abs=2e-6)
        assert {"n", "mean", "median", "std", "mode"} == set(d["do"]) == set(d["de"])
        hist = d["histogram"]
        assert len(hist["edges"]) == 51 and len(hist["do"]) == len(hist["de"]) == 50
        assert sum(hist["do"]) == d["do"]["n"] and sum(hist["de"]) == d["de"]["n"]
        assert set(d["strata"]) == {"small", "medium", "large"}
        assert all(STRATUM_KEYS <= set(s) for s in d["strata"].values())
        assert sum(s["n_do"] for s in d["strata"].values()) == d["do"]["n"]
    rec = res["recommended"]
    assert set(rec) == {"distance", "tau_star", "similarity_threshold", "standard_threshold", "reason", "ks",
                        "scale_dependent", "mean_alpha", "global_alpha", "alternative"}
    # centroid's KS is ahead of iou's, but within its interval: a tie, and iou (scale-invariant) is recommended
    ks = {n: d["ks"] for n, d in res["distances"].items()}
    assert ks["centroid"] > ks["iou"] >= res["distances"]["centroid"]["ks_ci"][0]
    best = "iou"
    assert rec["distance"] == best and not rec["scale_dependent"]
    assert res["similarity_threshold"] == rec["similarity_threshold"] == res["distances"][best]["similarity_threshold"]
    text = capsys.readouterr().out
    assert f"recommended: {best}" in text and "iou by size" in text and f"wrote {out}" in text


def test_same_seed_gives_byte_identical_output(demo_path, tmp_path):
    paths = [tmp_path / f"{k}.json" for k in range(2)]
    for p in paths:
        assert main(["calibrate", str(demo_path), "--bootstrap", "20", "--output", str(p)]) == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_default_distances_per_task(demo_path, tmp_path):
    out = tmp_path / "segm.json"
    assert main(["calibrate", str(demo_path), "--task", "segm", "--bootstrap", "0", "--output", str(out)]) == 0
    res = json.loads(out.read_text())
    assert list(res["distances"]) == ["iou", "centroid", "centroid_box", "giou"]      # the default first; no mask_iou duplicate
    assert res["distances"]["iou"]["tau_ci"] is None and res["recommended"]["standard_threshold"] is None


def test_unknown_distance_and_missing_file_exit_2(demo_path, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:           # argparse's usage error
        main(["calibrate", str(demo_path), "--distances", "iou,wobble"])
    assert exit_.value.code == 2
    assert "unknown distance 'wobble'" in capsys.readouterr().err
    assert main(["calibrate", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_module_entry_point(demo_path):
    proc = subprocess.run([sys.executable, "-m", "kalos_core", "calibrate", str(demo_path), "--bootstrap", "5"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "recommended:" in proc.stdout and "KS" in proc.stdout
