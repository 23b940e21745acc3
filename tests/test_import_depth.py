"""The import graph stays shallow (``benchmarks/import_depth.py``): at most 10 imports deep from the
plugin's ``__init__.py``, at most 6 from any ``kalos_core`` module (without cycles), and
``kalos_core`` never imports FiftyOne."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _load_tool():
    spec = importlib.util.spec_from_file_location("import_depth", REPO / "benchmarks" / "import_depth.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()
GRAPH = tool.import_graph(REPO)


def _text(chain):
    return f"{len(chain) - 1} imports deep: " + " -> ".join(chain)


def test_the_plugin_is_at_most_10_imports_deep():
    chain = tool.longest_chain(GRAPH, tool.PLUGIN)
    assert len(chain) - 1 <= 10, _text(chain)


def test_every_kalos_core_module_is_at_most_6_imports_deep():
    assert not [c for c in tool.cycles(GRAPH) if any(m.startswith("kalos_core") for m in c)]
    chain = tool.deepest(GRAPH, "kalos_core")
    assert len(chain) - 1 <= 6, _text(chain)


def test_no_kalos_core_module_imports_fiftyone():
    assert tool.imports_of(REPO, "kalos_core", "fiftyone") == []


def test_the_tool_counts_imports_in_functions_but_not_type_checking_ones(tmp_path):
    pkg = tmp_path / "kalos_core"
    pkg.mkdir()
    (tmp_path / "__init__.py").write_text("from kalos_core.a import f\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
                              "else:\n    from .d import D\n")
    (pkg / "c.py").write_text("")
    (pkg / "d.py").write_text("import fiftyone as fo\n")
    graph = tool.import_graph(tmp_path)
    assert graph["kalos_core.b"] == {"kalos_core.d"}
    assert tool.longest_chain(graph, tool.PLUGIN) == ["<plugin>", "kalos_core.a", "kalos_core.b", "kalos_core.d"]
    assert tool.imports_of(tmp_path, "kalos_core", "fiftyone") == ["kalos_core.d"]
