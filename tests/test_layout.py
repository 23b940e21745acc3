"""The test tree's own imports: shared fixtures live in conftest.py, shared code in ONE helpers module
per test folder, and no test module imports another test module or a conftest.

The helpers modules (:data:`HELPERS`), one per folder:

- ``tests/core/helpers/`` (a package: the shared comparisons and hand cases in ``__init__.py``, the
  one-``alpha``-call-per-image reference path of the agreement in ``agreement_reference.py``);
- ``tests/fiftyone/helpers/`` (a package);
- ``tests/e2e/e2e_pages.py`` (the App server and the page actions; the fixtures are in its conftest.py);
- ``tests/labelstudio/server.py`` (the Label Studio server; tests/conftest.py loads its session
  fixtures with ``pytest_plugins``, as tests/e2e takes them too).

Every other ``.py`` file under tests/ is a ``test_*.py`` module or a ``conftest.py``, and a test
module imports its own folder's helpers module only (the Label Studio tests, FiftyOne tests against a
server, also tests/fiftyone's: :data:`ALSO`); a helpers module passes on what its folder's tests take
from another folder's.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: the one helpers module of each test folder (a file, or a package folder), relative to tests/
HELPERS = {"core": "core/helpers", "fiftyone": "fiftyone/helpers", "e2e": "e2e/e2e_pages.py",
           "labelstudio": "labelstudio/server.py"}
#: the other helpers modules a folder's test modules may import
ALSO = {"labelstudio": {"fiftyone/helpers"}}


def _target(root: Path, path: Path, node) -> Path | None:
    """The file or package folder under ``root`` an import names, or None when it is not in the test tree.
    Absolute ``tests.x.y``, relative imports, and a bare name of a file next to the importer (a folder's
    conftest may put its folder on sys.path, as tests/e2e does) all count."""
    if isinstance(node, ast.ImportFrom) and node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = (node.module or "").split(".") if node.module else []
        return _existing(base.joinpath(*parts)) if parts else None
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for name in names:
        parts = name.split(".")
        if parts[0] == root.name:
            found = _existing(root.parent.joinpath(*parts))
        else:   # a bare name: a module or a regular package next to the importer (not ``fiftyone`` from tests/)
            found = _existing(path.parent.joinpath(*parts), package=True)
        if found is not None:
            return found
    return None


def _existing(stem: Path, package: bool = False) -> Path | None:
    if stem.with_suffix(".py").is_file():
        return stem.with_suffix(".py")
    return stem if stem.is_dir() and (not package or (stem / "__init__.py").is_file()) else None


def _helpers_of(root: Path, target: Path) -> str | None:
    """The HELPERS entry ``target`` is (or lies inside), else None."""
    for rel in HELPERS.values():
        allowed = root / rel
        if target == allowed or allowed in target.parents:
            return rel
    return None


def violations(root: Path = TESTS) -> list[str]:
    """Each import in the test tree of anything but a helpers module (file:line: what), and each
    ``.py`` file that is none of a test module, a conftest or part of a helpers module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        is_helper = _helpers_of(root, path) is not None
        if not (path.name.startswith("test_") or path.name == "conftest.py" or is_helper):
            found.append(f"{rel}: neither a test module, a conftest nor a folder's helpers module")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            target = _target(root, path, node)
            if target is None:
                continue
            helpers = _helpers_of(root, target)
            if helpers is None:
                found.append(f"{rel}:{node.lineno}: imports {target.relative_to(root)} (not a helpers module)")
            elif not is_helper and len(rel.parts) > 1 and helpers != HELPERS.get(rel.parts[0]) \
                    and helpers not in ALSO.get(rel.parts[0], ()):
                found.append(f"{rel}:{node.lineno}: imports {helpers}, another folder's helpers module "
                             f"(take it through {HELPERS.get(rel.parts[0])})")
    return found


def test_test_modules_import_only_the_helpers_modules():
    assert violations() == []


def test_every_helpers_module_exists():
    assert all((TESTS / rel).exists() for rel in HELPERS.values()), HELPERS


def test_the_check_catches_a_test_module_a_conftest_and_a_second_helpers_module(tmp_path):
    root = tmp_path / "tests"
    for name, text in {
        "core/helpers/__init__.py": "from .agreement_reference import x\n",
        "core/helpers/agreement_reference.py": "x = 1\n",
        "core/test_a.py": "from tests.core.helpers import x\nfrom tests.core.helpers.agreement_reference import x\n",
        "core/test_b.py": "from tests.core.test_a import x\n",
        "core/extra.py": "y = 2\n",
        "e2e/conftest.py": "y = 3\n",
        "e2e/e2e_pages.py": "z = 4\n",
        "e2e/test_c.py": "from e2e_pages import z\nimport extra_e2e\nfrom conftest import y\n",
        "e2e/extra_e2e.py": "",
        "e2e/test_d.py": "from tests.core.helpers import x\n",
        "fiftyone/helpers/__init__.py": "", "labelstudio/server.py": "",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert violations(root) == [
        "core/extra.py: neither a test module, a conftest nor a folder's helpers module",
        "core/test_b.py:1: imports core/test_a.py (not a helpers module)",
        "e2e/extra_e2e.py: neither a test module, a conftest nor a folder's helpers module",
        "e2e/test_c.py:2: imports e2e/extra_e2e.py (not a helpers module)",
        "e2e/test_c.py:3: imports e2e/conftest.py (not a helpers module)",
        "e2e/test_d.py:1: imports core/helpers, another folder's helpers module (take it through e2e/e2e_pages.py)",
    ]
