"""``docs/options.md``: every measure's parameters, written from the declarations.

``python -m kalos_core.measure_docs > docs/options.md`` rewrites it; a test checks it is current.
"""

from __future__ import annotations

from .conventions import PHRASES, conventions_of
from .measure import MEASURE_MODULES, get_measure
from .params import Param


def _default(p: Param) -> str:
    if p.default is None:
        return "—"
    return f"`{p.to_text(p.default) or '(none)'}`"


def _allowed(p: Param) -> str:
    if p.kind == "choice":
        return ", ".join(f"`{c}`" for c in p.options())
    if p.kind in ("int", "float", "floats") and (p.lo is not None or p.hi is not None):
        return f"{p.kind} in {p.range_text()}"
    if p.kind in ("fraction", "fractions"):
        lo, hi = "(" if p.lo_open else "[", ")" if p.hi_open else "]"
        return f"{'list of ' if p.kind == 'fractions' else ''}number in {lo}0, 1{hi}"
    return {"int": "integer >= 0", "bool": "true / false", "str": "name", "names": "list of names",
            "floats": "list of numbers"}.get(p.kind, p.kind)


def options_markdown() -> str:
    """The options page: per measure, one row per parameter (CLI option, default, allowed values, help)."""
    lines = ["# Options of every measure", "",
             "Written from the measures' declarations (`kalos_core/*/measure.py`, the config dataclasses) by",
             "`python -m kalos_core.measure_docs > docs/options.md`. The same parameters are the command line's",
             "options, the operators' form fields (advanced ones under *Advanced*) and the keys of a stored run's",
             "config.", "", "## Units and conventions", "",
             "Each command's summary ends in the phrases of its numbers, its result JSON and stored run carry them",
             "under `conventions`, and the panels print them (`kalos_core/conventions.py`). A result adds its own:",
             "Braylan's `convention` (`braylan` / `midrank`), BAE's `scope` (pairwise α per image / global).", "",
             "| key | phrase |", "|---|---|", *(f"| `{k}` | {v} |" for k, v in PHRASES.items()), ""]
    for name in MEASURE_MODULES:
        m = get_measure(name)
        used = "; ".join(f"`{k}`" for k in conventions_of(m.method)) or "—"
        lines += [f"## `{m.name}`", "", m.help[:1].upper() + m.help[1:] + ".", "", f"Conventions: {used}.", "",
                  "| parameter | option | default | allowed | what it does |", "|---|---|---|---|---|"]
        for p in m.params:
            flag = f"`{p.cli_flag}`" if p.cli_flag and p.name != "task" else ("`--task`" if p.name == "task" else "—")
            about = p.help + (" *(advanced)*" if p.advanced else "")
            lines.append(f"| `{p.name}` | {flag} | {_default(p)} | {_allowed(p)} | {about.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(options_markdown(), end="")
