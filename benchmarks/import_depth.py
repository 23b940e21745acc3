"""How deep the plugin's import graph is: the longest chain of KaLOS-internal imports.

Static (nothing is imported): every ``from .x import y``, ``from kalos_core.x import y`` and
``import kalos_core.x`` (likewise of ``fiftyone_layer``, ``operators``, ``panels``) in the plugin's
``__init__.py`` and those four packages is an edge, wherever the statement sits (module level,
functions, classes, ``try``); a package's ``__init__`` is a node of its own. Imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import mod`` is an edge to
``pkg.mod`` only (``pkg`` runs first as its parent whoever imports it), to ``pkg`` too for a name it
defines.

:func:`package_cycles` lifts every edge to the two siblings it joins under their common parent
(``kalos_core.convergence.engine -> kalos_core.noise_aware.inputs`` is ``kalos_core.convergence ->
kalos_core.noise_aware``): a cycle there is a package cycle even when no chain of modules is one,
and is listed with the ``file:line`` of every import behind it.

Usage: ``python benchmarks/import_depth.py [repo root] [--all]``: the longest chain from the
plugin's ``__init__.py`` and from any ``kalos_core`` module, the module and package cycles
(``--all``: every module's depth). Tests call :func:`import_graph`, :func:`longest_chain`,
:func:`deepest`, :func:`cycles` and :func:`package_cycles`.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "<plugin>"
PACKAGES = ("kalos_core", "fiftyone_layer", "operators", "panels")


def _modname(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or PLUGIN


def module_files(root: Path = REPO) -> dict[str, Path]:
    """Module name -> file: the plugin's top-level ``*.py`` and every module of :data:`PACKAGES`."""
    root = Path(root).resolve()
    paths = list(root.glob("*.py")) + [p for d in PACKAGES for p in sorted((root / d).rglob("*.py"))]
    return {_modname(root, p): p for p in paths}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import node of ``tree``, skipping the bodies of ``if TYPE_CHECKING:`` (not their ``else``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(mod: str, is_pkg: bool, level: int, name: str) -> str:
    base = mod.split(".") if mod != PLUGIN else []
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_edges(root: Path = REPO) -> list[tuple[str, str, str, int]]:
    """Every internal import as ``(module, imported module, file, line)``, wherever the statement
    sits (module level, function, class, ``try``), ``if TYPE_CHECKING:`` bodies left out."""
    root = Path(root).resolve()
    files = module_files(root)
    edges = []
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        where = str(path.relative_to(root))
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    target = _resolve(mod, is_pkg, node.level, node.module or "")
                elif node.module and node.module.split(".")[0] in PACKAGES:
                    target = node.module
                else:
                    continue
                subs = [f"{target}.{a.name}" if target else a.name for a in node.names]
                # ``from pkg import mod``: an import of pkg.mod (pkg itself runs first as its parent
                # whatever the importer); pkg is an edge of its own only for a name it defines
                cands = subs + ([target] if any(m not in files for m in subs) else [])
            else:
                cands = [a.name for a in node.names]
            for cand in cands:
                cand = cand or PLUGIN
                if cand in files and cand != mod:
                    edges.append((mod, cand, where, node.lineno))
    return edges


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Module -> the internal modules it imports (module names as :func:`module_files` gives them)."""
    graph: dict[str, set[str]] = {m: set() for m in module_files(root)}
    for mod, dep, _, _ in import_edges(root):
        graph[mod].add(dep)
    return graph


def sibling_pair(a: str, b: str) -> tuple[str, str] | None:
    """The two siblings an import from module ``a`` of module ``b`` joins: the packages or modules
    named by their first differing part under their common parent (``kalos_core.convergence.engine``
    -> ``kalos_core.noise_aware.box_eval``: ``kalos_core.convergence``, ``kalos_core.noise_aware``);
    None when one contains the other (a package and its own modules)."""
    pa = [] if a == PLUGIN else a.split(".")
    pb = [] if b == PLUGIN else b.split(".")
    n = 0
    while n < min(len(pa), len(pb)) and pa[n] == pb[n]:
        n += 1
    if n == len(pa) or n == len(pb):
        return None
    return ".".join(pa[: n + 1]), ".".join(pb[: n + 1])


def package_graph(edges) -> dict[str, dict[str, list[str]]]:
    """Package (or module) -> the siblings it imports -> the ``file:line`` of each import behind
    that edge. A cycle here is a package cycle, even when every module-level chain is acyclic."""
    graph: dict[str, dict[str, list[str]]] = {}
    for mod, dep, where, line in edges:
        pair = sibling_pair(mod, dep)
        if pair:
            graph.setdefault(pair[0], {}).setdefault(pair[1], []).append(f"{where}:{line}")
            graph.setdefault(pair[1], {})
    return graph


def package_cycles(root: Path = REPO) -> list[tuple[list[str], list[str]]]:
    """Every package cycle as ``(its members, its edges "a -> b (file:line, ...)")``."""
    graph = package_graph(import_edges(root))
    out = []
    for comp in cycles({k: set(v) for k, v in graph.items()}):
        inside = [f"{a} -> {b} ({', '.join(graph[a][b])})" for a in comp for b in sorted(graph[a]) if b in comp]
        out.append((comp, inside))
    return out


def imports_of(root: Path, package: str, top: str) -> list[str]:
    """The modules of ``package`` that import ``top`` (e.g. ``"fiftyone"``) anywhere, even under
    ``if TYPE_CHECKING:``."""
    hits = []
    for mod, path in module_files(root).items():
        if mod != package and not mod.startswith(package + "."):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n.split(".")[0] == top for n in names):
                hits.append(mod)
                break
    return sorted(hits)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def longest_chain(graph: dict[str, set[str]], start: str) -> list[str]:
    """The longest chain of imports from ``start`` (its modules, ``start`` first); its depth is
    ``len(chain) - 1`` imports. A cycle ends a chain at the module that closes it."""
    memo: dict[str, list[str]] = {}

    def walk(m: str, seen: frozenset) -> list[str]:
        if m in memo:
            return memo[m]
        if m in seen:
            return [m + "(cycle)"]
        best = [m]
        for d in sorted(graph.get(m, ())):
            path = walk(d, seen | {m})
            if len(path) + 1 > len(best):
                best = [m] + path
        memo[m] = best
        return best

    return walk(start, frozenset())


def deepest(graph: dict[str, set[str]], prefix: str) -> list[str]:
    """The longest chain starting at any module named ``prefix`` or ``prefix.*``."""
    chains = [longest_chain(graph, m) for m in sorted(graph) if m == prefix or m.startswith(prefix + ".")]
    return max(chains, key=len, default=[])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=str(REPO))
    ap.add_argument("--all", action="store_true", help="every module's depth, deepest first")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    graph = import_graph(root)
    for label, chain in (("plugin", longest_chain(graph, PLUGIN) if PLUGIN in graph else []),
                         ("kalos_core", deepest(graph, "kalos_core"))):
        print(f"{label}: {len(chain) - 1}  " + " -> ".join(chain))
    for comp in cycles(graph):
        print("cycle:", ", ".join(comp))
    for comp, edges in package_cycles(root):
        print("package cycle:", ", ".join(comp))
        for edge in edges:
            print("   ", edge)
    fo = imports_of(root, "kalos_core", "fiftyone")
    print("kalos_core modules importing fiftyone:", fo or "none")
    if args.all:
        rows = sorted(((len(longest_chain(graph, m)) - 1, m) for m in graph), reverse=True)
        for d, m in rows:
            print(f"{d:3d} {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
