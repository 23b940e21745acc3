"""Shared pytest fixtures for KaLOS.

- repo root on sys.path, so ``import kalos_core`` works without installing;
- a private, throw-away mongod per pytest run (see pytest_configure) and the ``fo_isolated`` fixture;
- ``shared_data_dir`` / ``lvis_subset_path`` and the ``realdata`` marker: tests needing
  ../shared/data skip cleanly when it is absent.
"""
import atexit
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

#: the real Label Studio server's session fixtures (``label_studio``, ``label_studio_sdk``), taken by
#: tests/labelstudio and tests/e2e alike; they start a server only when a test asks for one
pytest_plugins = ("tests.labelstudio.server",)

SHARED_DATA_DIR = (REPO_ROOT / ".." / "shared" / "data").resolve()
LVIS_SUBSET = SHARED_DATA_DIR / "lvis_v1_val_double_annotations_subset200.json"

_mongod = None  # (Popen, dir we created or None)
_own_dirs: list[str] = []  # temp dirs this run made, removed at exit


def _own_dir(prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix)
    _own_dirs.append(path)
    return path


def _remove_own_dirs():
    for path in _own_dirs:
        shutil.rmtree(path, ignore_errors=True)


def _start_private_mongod(db_dir):
    # FIFTYONE_DATABASE_DIR alone does not isolate: fiftyone *attaches to any running* fiftyone db
    # service of the same user (e.g. an open App), whatever its dbpath. So run the bundled mongod
    # ourselves on a free loopback port and point FIFTYONE_DATABASE_URI at it.
    spec = importlib.util.find_spec("fiftyone")  # locates the package without importing it
    mongod = Path(spec.origin).parent / "db" / "bin" / "mongod"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.makedirs(db_dir, exist_ok=True)
    proc = subprocess.Popen(
        [str(mongod), "--dbpath", db_dir, "--port", str(port), "--bind_ip", "127.0.0.1",
         "--nounixsocket", "--wiredTigerCacheSizeGB", "0.5", "--logpath", os.path.join(db_dir, "mongod.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"mongod exited with {proc.returncode}; see {db_dir}/mongod.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("mongod did not start listening within 60 s")
            time.sleep(0.1)


def pytest_configure(config):
    # Must happen before fiftyone is imported anywhere (it reads its config at import time,
    # possibly at collection). `make test` exports a fresh FIFTYONE_DATABASE_DIR; a bare
    # `pytest` run gets its own temp dir. An explicit FIFTYONE_DATABASE_URI is respected.
    global _mongod
    os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
    os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
    # placeholder images of imports without images go under FiftyOne's dataset dir: a private one
    # every temp dir made here is removed at exit (atexit is LIFO: after fiftyone's own handler)
    atexit.register(_remove_own_dirs)
    if not os.environ.get("FIFTYONE_DEFAULT_DATASET_DIR"):
        os.environ["FIFTYONE_DEFAULT_DATASET_DIR"] = _own_dir("kalos-datasets-")
    if not os.environ.get("FIFTYONE_PLUGINS_DIR"):
        # the plugin, and nothing else: a private plugins dir holding a link to this checkout
        plugins = Path(_own_dir("kalos-plugins-"))
        (plugins / "kalos-agreement").symlink_to(REPO_ROOT, target_is_directory=True)
        os.environ["FIFTYONE_PLUGINS_DIR"] = str(plugins)
    if os.environ.get("FIFTYONE_DATABASE_URI") or importlib.util.find_spec("fiftyone") is None:
        return
    if "fiftyone" in sys.modules:
        raise RuntimeError("fiftyone was imported before its database could be isolated")
    own_dir = None
    if not os.environ.get("FIFTYONE_DATABASE_DIR"):
        own_dir = os.environ["FIFTYONE_DATABASE_DIR"] = tempfile.mkdtemp(prefix="kalos-fodb-")
    proc, port = _start_private_mongod(os.environ["FIFTYONE_DATABASE_DIR"])
    os.environ["FIFTYONE_DATABASE_URI"] = f"mongodb://127.0.0.1:{port}"
    _mongod = (proc, own_dir)
    # atexit is LIFO: registered before fiftyone is imported, this runs *after* fiftyone's own
    # exit handler (which deletes non-persistent datasets and needs the server still up).
    atexit.register(_stop_private_mongod)


#: the plugin's package under the one name FiftyOne gives it (@kalos/agreement): tests import its
#: modules as ``fiftyone.plugins.orgs.kalos.agreement.<operators|panels|fiftyone_layer>.*``, never
#: as top-level ``operators`` / ``panels`` (which would be second copies of every module)
PLUGIN = "fiftyone.plugins.orgs.kalos.agreement"


def load_plugin_package() -> None:
    """Import the checkout's ``__init__.py`` as the plugin's package, exactly as FiftyOne's plugin
    loader does (same module name, same search path), so that FiftyOne finds it already loaded."""
    if PLUGIN in sys.modules:
        return
    from fiftyone.plugins.context import _ensure_parent_modules, _get_plugin_module_name

    assert _get_plugin_module_name("@kalos/agreement", REPO_ROOT.name) == PLUGIN
    _ensure_parent_modules(PLUGIN, str(REPO_ROOT))
    spec = importlib.util.spec_from_file_location(PLUGIN, REPO_ROOT / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[PLUGIN] = module
    spec.loader.exec_module(module)


def pytest_sessionstart(session):
    """The plugin's package importable under FiftyOne's name before test modules import it."""
    if importlib.util.find_spec("fiftyone") is not None:
        load_plugin_package()


def _stop_private_mongod():
    proc, own_dir = _mongod
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if own_dir:
        shutil.rmtree(own_dir, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # Tests marked `realdata` are skipped when the LVIS subset is absent.
    if LVIS_SUBSET.is_file():
        return
    skip = pytest.mark.skip(reason=f"real data not available: {LVIS_SUBSET} is missing")
    for item in items:
        if "realdata" in item.keywords:
            item.add_marker(skip)


def require_shared_file(name):
    """Return ../shared/data/<name>, or skip the calling test with a clear reason."""
    path = SHARED_DATA_DIR / name
    if not path.is_file():
        pytest.skip(f"real data not available: {path} is missing")
    return path


@pytest.fixture(scope="session")
def shared_data_dir():
    return SHARED_DATA_DIR


@pytest.fixture(scope="session")
def lvis_subset_path():
    return require_shared_file(LVIS_SUBSET.name)


@pytest.fixture(scope="session")
def fo_isolated():
    """The ``fiftyone`` module, connected to this run's private database."""
    assert os.environ.get("FIFTYONE_DATABASE_DIR"), "FIFTYONE_DATABASE_DIR must be set before fiftyone is imported"
    import fiftyone as fo

    yield fo


@pytest.fixture(scope="module")
def rex(fo_isolated):
    """The plugin's rater-export import module (tests/fiftyone and tests/labelstudio)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports as rater_import

    return rater_import
