"""Diagnostics come from one registry: config switches, result fields, CLI flags, operators' list."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kalos_core.agreement import DIAGNOSTICS, AgreementConfig, AgreementResult
from kalos_core.agreement.diagnostics import REGISTRY, get_diagnostic

REPO = Path(__file__).resolve().parents[2]


def test_the_switches_and_the_json_contract_are_unchanged():
    assert DIAGNOSTICS == ("vitality", "class_difficulty", "collaboration", "intra_rater")
    assert set(REGISTRY) == {*DIAGNOSTICS, "lsa"}
    cfg = AgreementConfig(vitality=False)
    assert cfg.vitality is False and cfg.collaboration is True
    res = AgreementResult(mean_alpha=1.0, global_alpha=1.0, mean_alpha_ci=None, per_image_alpha={}, n_images=0,
                          n_annotations=0, n_units=0, config={})
    assert set(res.to_dict()) == {
        "mean_alpha", "global_alpha", "mean_alpha_ci", "per_image_alpha", "n_images", "n_annotations", "n_units",
        "config", "vitality", "vitality_global", "vitality_images", "class_difficulty", "class_difficulty_global",
        "class_difficulty_images", "collaboration",
        "collaboration_global", "collaboration_n", "models", "model_comparison", "lsa", "lsa_delta", "intra_rater", "rater_summary",
        "n_skipped", "skipped", "n_single_rater_images", "warnings", "interpretation"}
    assert res.lsa_delta is None and res.vitality == {}


def test_unknown_diagnostic_is_named():
    try:
        get_diagnostic("vitalty")
    except ValueError as e:
        assert "vitalty" in str(e) and "vitality" in str(e)
    else:
        raise AssertionError("no error")


#: what adds a diagnostic: a registered definition appended to kalos_core/agreement/diagnostic_defs.py, its
#: switch on AgreementConfig and its result field on AgreementResult (one line each, seen in the source)
ADD_ONE = """

register_diagnostic(Diagnostic(
    "units_alpha", "alpha of the image's own matrix, once more",
    emit=lambda ctx, out: out.cells("all", "all", ctx.main),
    reduce=lambda red: {"units_alpha": {k: float(np.mean([a for _, a in v])) for k, v in red.values.items()}},
    fields=(("units_alpha", dict),)))
"""


def _insert_after(path: Path, anchor: str, text: str) -> None:
    source = path.read_text()
    assert anchor in source, anchor
    path.write_text(source.replace(anchor, anchor + text, 1))


def test_one_registered_definition_reaches_config_result_and_cli(tmp_path):
    from kalos_core.demo_data import build_demo

    path = build_demo(tmp_path / "d", n_images=6, seed=1, with_images=False)
    shutil.copytree(REPO / "kalos_core", tmp_path / "pkg" / "kalos_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    pkg = tmp_path / "pkg" / "kalos_core" / "agreement"
    with open(pkg / "diagnostic_defs.py", "a") as f:
        f.write(ADD_ONE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    check = "import kalos_core.agreement"
    run = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "units_alpha: bool = _switch('units_alpha')" in run.stderr     # the definition alone is refused
    _insert_after(pkg / "config.py", "    intra_rater: bool = _switch(\"intra_rater\")\n",
                  "    units_alpha: bool = _switch(\"units_alpha\")\n")
    run = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "units_alpha are not declared on AgreementResult" in run.stderr
    _insert_after(pkg / "result.py", "    intra_rater: dict = field(default_factory=dict)",
                  "\n    units_alpha: dict = field(default_factory=dict)")
    out = tmp_path / "r.json"
    check = "from kalos_core.agreement import DIAGNOSTICS, AgreementConfig; print(DIAGNOSTICS, AgreementConfig().units_alpha)"
    run = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "'intra_rater', 'units_alpha') True" in run.stdout, run.stderr
    run = subprocess.run([sys.executable, "-m", "kalos_core", "agreement", str(path), "--output", str(out)],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    res = json.loads(out.read_text())
    assert abs(res["units_alpha"]["all"] - res["mean_alpha"]) < 1e-12
    assert res["config"]["units_alpha"] is True
    off = subprocess.run([sys.executable, "-m", "kalos_core", "agreement", str(path), "--no-units-alpha",
                          "--output", str(out)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    assert json.loads(out.read_text())["units_alpha"] == {}
