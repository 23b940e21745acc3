"""The documents written from the declarations: ``docs/options.md`` (every measure's parameters)
and the command line's synopses (the README's list of commands, ``docs/cli.md``'s usage).

``python -m kalos_core.measure_docs > docs/options.md`` prints the options page;
``python -m kalos_core.measure_docs --write`` rewrites the options page and the synopsis blocks of
README.md and docs/cli.md (between their ``<!-- cli-...:start -->`` / ``:end -->`` markers).
``tests/core/test_common_measures.py`` checks that all three are current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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


PROG = "python -m kalos_core"


def _commands() -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every sub-command, in the order ``--help`` lists them."""
    from .cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    return [(name, helps.get(name) or "", parser) for name, parser in sub.choices.items()]


def _value_text(action: argparse.Action) -> str:
    """What follows an option in a synopsis: its default when it has one, else its name."""
    default = action.default
    if isinstance(default, (tuple, list)) and default:
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default)
    if default not in (None, (), [], ""):
        return str(default)
    return action.metavar or action.dest.upper()


def _option_text(action: argparse.Action) -> str:
    """One option as a synopsis shows it: ``[--threshold 0.5]``, ``[--solver greedy|ahc|mgm|shm]``
    (the default first), ``[--no-vitality]``, ``--embeddings EMB.json`` (required)."""
    flag = action.option_strings[0]
    if isinstance(action, argparse.BooleanOptionalAction):
        text = {True: action.option_strings[1], False: flag}.get(action.default, f"{flag}|{action.option_strings[1]}")
    elif action.nargs == 0:
        text = flag
    elif action.choices:
        choices = [str(c) for c in action.choices]
        first = [str(action.default)] if str(action.default) in choices else []
        text = f"{flag} {'|'.join(first + [c for c in choices if c not in first])}"
    else:
        text = f"{flag} {_value_text(action)}" + (" ..." if isinstance(action, argparse._AppendAction) else "")
    return text if action.required else f"[{text}]"


def _shown(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _required(parser: argparse.ArgumentParser) -> str:
    """The positional arguments and required options of a sub-command."""
    parts = [a.metavar or a.dest.upper() if not a.option_strings else _option_text(a)
             for a in _shown(parser) if not a.option_strings or a.required]
    return " ".join(parts)


def cli_commands_markdown() -> str:
    """The README's list of commands: one row per sub-command, what it needs and what it does."""
    rows = ["| command | what it does |", "|---|---|"]
    for name, help_text, parser in _commands():
        call = f"{PROG} {name} {_required(parser)}".rstrip()
        rows.append(f"| `{call}` | {help_text.replace('|', '/')} |")
    return "\n".join(rows)


def _wrapped(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by spaces into lines of at most ``width`` characters, never splitting a part."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) > width:
            lines.append("    " + part)
        else:
            lines[-1] += " " + part
    return lines


def cli_usage_text(width: int = 100) -> str:
    """Every sub-command with all its options, as a wrapped synopsis (a value shown is the default;
    a list of choices starts with the default)."""
    out = ["```text"]
    for name, help_text, parser in _commands():
        optional = sorted((a for a in _shown(parser) if a.option_strings and not a.required),
                          key=lambda a: a.dest != "task")   # --task first, then as declared
        parts = [f"{PROG} {name}", *_required(parser).split(" "), *map(_option_text, optional)]
        out += [f"# {help_text}", *_wrapped([p for p in parts if p], width), ""]
    return "\n".join(out[:-1] + ["```"])


ROOT = Path(__file__).resolve().parents[1]
#: the generated blocks: file (under the repository), marker, writer
BLOCKS = (("README.md", "cli-commands", cli_commands_markdown), ("docs/cli.md", "cli-usage", cli_usage_text))


def block_of(text: str, marker: str) -> str | None:
    """What stands between ``<!-- marker:start -->`` and ``<!-- marker:end -->`` (None without them)."""
    start, end = f"<!-- {marker}:start -->\n", f"\n<!-- {marker}:end -->"
    if start not in text or end not in text:
        return None
    return text[text.index(start) + len(start): text.index(end)]


def with_block(text: str, marker: str, body: str) -> str:
    """``text`` with its ``marker`` block replaced by ``body``."""
    start, end = f"<!-- {marker}:start -->\n", f"\n<!-- {marker}:end -->"
    if block_of(text, marker) is None:
        raise ValueError(f"no <!-- {marker}:start --> ... <!-- {marker}:end --> block")
    return text[: text.index(start) + len(start)] + body + text[text.index(end):]


def write_all(root: Path = ROOT) -> None:
    """Rewrite docs/options.md and the synopsis blocks of README.md and docs/cli.md."""
    (root / "docs" / "options.md").write_text(options_markdown())
    for rel, marker, make in BLOCKS:
        path = root / rel
        path.write_text(with_block(path.read_text(), marker, make()))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_all()
    else:
        print(options_markdown(), end="")
