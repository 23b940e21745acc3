"""`pip install -e .` in a fresh virtual environment gives a working CLI from any directory.

The fresh venv borrows the project venv's third-party packages through a ``.pth``
file (numpy, scipy, shapely, ... are not downloaded again) but not the repository:
``kalos_core`` and the ``kalos-fiftyone`` script must come from the install itself.
"""

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    venv = root / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(REPO)],
                   check=True, env=env, cwd=root, capture_output=True)
    return venv, env, root


def test_distribution_is_not_named_like_the_published_kalos(fresh_venv):
    venv, env, root = fresh_venv
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", "kalos-fiftyone"],
                         env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0 and "Name: kalos-fiftyone" in out.stdout
    assert subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", "kalos"],
                          env=env, cwd=root, capture_output=True).returncode != 0
    assert not (venv / "bin" / "kalos").exists()


@pytest.mark.parametrize("entry", [["bin/kalos-fiftyone"], ["bin/python", "-m", "kalos_core"]])
def test_cli_runs_outside_the_repository(fresh_venv, entry, tmp_path):
    from kalos_core.demo_data import build_demo

    venv, env, _ = fresh_venv
    path = build_demo(tmp_path / "demo", n_images=6, seed=1, with_images=False)
    out = tmp_path / "out.json"
    cmd = [str(venv / entry[0]), *entry[1:], "agreement", str(path), "--task", "bbox", "--bootstrap", "0",
           "--no-diagnostics", "--output", str(out)]
    proc = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert -1.0 <= json.loads(out.read_text())["mean_alpha"] <= 1.0


def test_fiftyone_still_imports_after_the_dask_extra(tmp_path):
    """dask pulls importlib_metadata; 8.0+ breaks FiftyOne's eta when dask is imported first."""
    pytest.importorskip("distributed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", "import distributed, fiftyone"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
