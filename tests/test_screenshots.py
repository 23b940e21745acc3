"""The documentation screenshots (docs/img/panels/*.png) are what ``make screenshots`` writes: each
is shown by README.md or docs/*.md, each is saved by a browser test, and each such test carries the
``screenshot`` marker that ``make screenshots`` selects, so a stale, orphaned or forgotten image fails
here. (That every image a page shows exists: tests/test_docs.py, with the other links.)"""

import ast
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SHOTS = REPO / "docs" / "img" / "panels"
E2E = sorted((REPO / "tests" / "e2e").glob("test_*.py"))
SAVERS = {"doc_screenshot", "_screenshot", "_chart_screenshot"}   # the helpers that write into docs/img/panels


def shown() -> set[str]:
    """The docs/img/panels images README.md and docs/*.md show."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return {m for p in pages for m in re.findall(r"img/panels/([\w-]+)\.png", p.read_text(encoding="utf-8"))}


def _saves(func) -> list:
    """The calls to a screenshot saver in ``func``, with their name argument."""
    return [c for c in ast.walk(func) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
            and c.func.id in SAVERS]


def saving_tests():
    """(file, test function, names it saves: a string, or None for a name computed at run time)."""
    for path in E2E:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and _saves(node):
                yield path.name, node, [c.args[1].value if isinstance(c.args[1], ast.Constant) else None
                                        for c in _saves(node)]


def written() -> set[str]:
    """The names the browser tests save: the literal ones, and every panel's (test_app_e2e saves
    each panel of fiftyone.yml by its name)."""
    names = {n for _, _, ns in saving_tests() for n in ns if n}
    panels = yaml.safe_load((REPO / "fiftyone.yml").read_text())["panels"]
    return names | set(panels)


def test_every_screenshot_is_shown_by_the_docs_and_written_by_a_test():
    on_disk = {p.stem for p in SHOTS.glob("*.png")}
    assert sorted(on_disk - shown()) == [], "screenshots no page shows (delete them or show them)"
    assert sorted(on_disk - written()) == [], "screenshots no browser test writes (stale: make screenshots)"
    assert sorted(shown() - written()) == [], "images the docs show that no browser test writes"
    assert sorted(written() - shown()) == [], "screenshots make screenshots writes that no page shows"


def test_every_test_saving_a_screenshot_is_selected_by_make_screenshots():
    def marked(func):
        return any("screenshot" in ast.unparse(d) and "mark" in ast.unparse(d) for d in func.decorator_list)

    unmarked = [f"{file}::{func.name}" for file, func, _ in saving_tests() if not marked(func)]
    assert unmarked == [], "add @pytest.mark.screenshot (make screenshots runs only those)"
    assert "-m screenshot" in (REPO / "Makefile").read_text()


def test_the_check_finds_a_saved_name(tmp_path):
    tree = ast.parse('def test_x(page):\n    doc_screenshot(page, "shot_a")\n    _screenshot(page, panel)\n')
    calls = _saves(tree.body[0])
    assert [c.args[1].value if isinstance(c.args[1], ast.Constant) else None for c in calls] == ["shot_a", None]
