"""The plugin loads in FiftyOne without exposing its folder's packages at the top level.

Runs in a subprocess without PYTHONPATH, as a FiftyOne server would: only the
plugins dir points at the checkout.
"""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib.util, os, sys
repo = sys.argv[1]
assert repo not in sys.path
import fiftyone.operators as foo
reg = foo.OperatorRegistry()
assert not reg.list_errors(), reg.list_errors()
uris = {op.uri for op in reg.list_operators(builtin=False)}
assert "@kalos/agreement/compute_agreement" in uris and "@kalos/agreement/kalos_calibration" in uris, uris
import kalos_core
assert os.path.realpath(kalos_core.__file__).startswith(repo), kalos_core.__file__   # the plugin's own engine
assert not any(os.path.realpath(p) == repo for p in sys.path), "the plugin put its folder on sys.path"
for name in ("operators", "panels", "tests", "benchmarks"):
    assert name not in sys.modules and importlib.util.find_spec(name) is None, name
print("OK", len(uris))
"""


def test_plugin_registers_without_putting_its_folder_on_sys_path(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "kalos-agreement").symlink_to(REPO, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FIFTYONE_PLUGINS_DIR")}
    env["FIFTYONE_PLUGINS_DIR"] = str(plugins)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(REPO)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
