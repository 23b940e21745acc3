"""A gate a pipeline can run: declared pass/fail rules over agreement and scorecard results.

``python -m kalos_core gate rules.toml agreement.json cards.json [--report gate.json]`` exits 0
when every rule holds, 1 when one fails (each failure printed: rule, class, rater, value, limit,
by how much), 2 on a bad rules file or result file (one line naming the file, the key or line, the fix).

The rules file (TOML, or the same as JSON)::

    [overall]
    min_alpha = 0.6              # agreement: mean α (per image) >= 0.6
    min_global_alpha = 0.5       # agreement: global α >= 0.5
    min_f1 = 0.7                 # scorecard: every rater's F1 over all classes >= 0.7
    tau = 0.5                    # with max_share_below_tau: the share of images
    max_share_below_tau = 0.25   # whose α is below 0.5 is at most 0.25

    [class.banana]               # one class (its name as the results write it)
    min_alpha = 0.5              # agreement: the class's α
    min_f1 = 0.6                 # scorecard: every rater's F1 on the class

    [class."*"]                  # every class the results name
    min_f1 = 0.2
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

#: rule -> (what it reads, the bounds of its value, help)
RULES = {
    "min_alpha": ("agreement", (-1.0, 1.0), "mean α (a class: its α) at least this"),
    "min_global_alpha": ("agreement", (-1.0, 1.0), "global α (a class: its global α) at least this"),
    "min_f1": ("scorecard", (0.0, 1.0), "every rater's F1 at least this"),
    "tau": ("agreement", (-1.0, 1.0), "the α an image must reach (with max_share_below_tau)"),
    "max_share_below_tau": ("agreement", (0.0, 1.0), "share of images whose α is below tau at most this"),
}
OVERALL_ONLY = ("tau", "max_share_below_tau")
EVERY_CLASS = "*"


class GateError(ValueError):
    """A bad rules or result file: the one line the command prints (exit 2)."""


@dataclass
class Check:
    """One rule applied to one value: passed when ``value`` is on the right side of ``limit``."""

    rule: str
    scope: str                   #: "overall" or the class's name
    rater: str | None
    value: float | None
    limit: float
    passed: bool
    margin: float | None         #: value - limit for a minimum, limit - value for a maximum (< 0: failed by)
    message: str


def _where(e: Exception) -> str:
    line, col = getattr(e, "lineno", None), getattr(e, "colno", None)
    if line is None:   # tomllib writes "(at line L, column C)" into the message
        return str(e)
    return f"line {line}, column {col}: {getattr(e, 'msg', e)}"


def load_rules(path: str | Path) -> dict:
    """``{"overall": {rule: value}, "classes": {name: {rule: value}}}`` from a TOML (or ``.json``) file.
    A :class:`GateError` names the file, the line or table and key, and the fix."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise GateError(f"{path}: cannot read the rules file ({e.strerror or e})") from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise GateError(f"{path}: {_where(e)} (fix the {'JSON' if path.suffix.lower() == '.json' else 'TOML'} "
                        "syntax there)") from None
    if not isinstance(raw, dict):
        raise GateError(f"{path}: expected tables [overall] and [class.NAME] of rules")
    unknown = sorted(set(raw) - {"overall", "class"})
    if unknown:
        raise GateError(f"{path}: unknown table [{unknown[0]}]; the tables are [overall] and [class.NAME]")
    classes = raw.get("class", {})
    if not isinstance(classes, dict) or any(not isinstance(v, dict) for v in classes.values()):
        raise GateError(f"{path}: 'class' must hold one table per class: [class.NAME] (quote a name with "
                        'dots or spaces: [class."traffic light"])')
    rules = {"overall": _table(path, "[overall]", raw.get("overall", {}), overall=True),
             "classes": {str(k): _table(path, f"[class.{k}]", v, overall=False) for k, v in classes.items()}}
    if not rules["overall"] and not any(rules["classes"].values()):
        raise GateError(f"{path}: no rule; write at least one of {', '.join(RULES)} under [overall] or [class.NAME]")
    return rules


def _table(path: Path, where: str, table, overall: bool) -> dict:
    if not isinstance(table, dict):
        raise GateError(f"{path}: {where} must be a table of rules ({', '.join(RULES)})")
    for key, value in table.items():
        if key not in RULES:
            raise GateError(f"{path}: {where} unknown rule {key!r}; the rules are: {', '.join(RULES)}")
        if key in OVERALL_ONLY and not overall:
            raise GateError(f"{path}: {where} {key}: an [overall] rule only (per-image α has no classes); "
                            "move it to [overall]")
        lo, hi = RULES[key][1]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi \
                or math.isnan(value):
            raise GateError(f"{path}: {where} {key} = {value!r}: must be a number in [{lo:g}, {hi:g}] "
                            f"({RULES[key][2]})")
    if ("tau" in table) != ("max_share_below_tau" in table):
        raise GateError(f"{path}: {where} tau and max_share_below_tau go together: the share of images whose "
                        "α is below tau; give both")
    return {k: float(v) for k, v in table.items()}


def load_results(paths) -> dict:
    """``{"agreement": dict, "scorecard": dict}`` (those given) from result JSON files, told apart by their keys."""
    out: dict = {}
    for path in map(Path, paths):
        try:
            data = json.loads(path.read_text())
        except OSError as e:
            raise GateError(f"{path}: cannot read the result file ({e.strerror or e})") from None
        except ValueError as e:
            raise GateError(f"{path}: not JSON ({e}); give the file --output wrote") from None
        kind = ("agreement" if isinstance(data, dict) and "per_image_alpha" in data and "mean_alpha" in data
                else "scorecard" if isinstance(data, dict) and isinstance(data.get("rows"), list)
                and "confusion" in data else None)
        if kind is None:
            raise GateError(f"{path}: neither an agreement nor a scorecard result; give the JSON of "
                            "python -m kalos_core agreement|scorecard ... --output FILE")
        if kind in out:
            raise GateError(f"{path}: a second {kind} result; give one of each")
        out[kind] = data
    return out


def _check(rule: str, scope: str, rater: str | None, value, limit: float, what: str) -> Check:
    where = f"[{scope if scope == 'overall' else 'class ' + scope}]" + (f" rater {rater}" if rater else "")
    if value is None:
        return Check(rule, scope, rater, None, limit, False, None, f"{rule} {where}: {what} undefined "
                     "(nothing to compute it from)")
    maximum = rule.startswith("max_")
    margin = (limit - value) if maximum else (value - limit)
    ok = margin >= 0
    sign = ("<=" if ok else ">") if maximum else (">=" if ok else "<")
    text = f"{rule} {where}: {what} {value:.4f} {sign} {limit:g}"
    return Check(rule, scope, rater, float(value), limit, ok, float(margin),
                 text + ("" if ok else f" (by {-margin:.4f})"))


def evaluate(rules: dict, results: dict, rules_path: str = "rules") -> list[Check]:
    """Every rule of ``rules`` applied to ``results``: a list of :class:`Check` (one per rule, class and rater)."""
    agreement, cards = results.get("agreement"), results.get("scorecard")
    for scope, table in [("[overall]", rules["overall"]), *((f"[class.{k}]", v) for k, v in rules["classes"].items())]:
        for key in table:
            if results.get(RULES[key][0]) is None:
                raise GateError(f"{rules_path}: {scope} {key} needs a{'n' if RULES[key][0][0] == 'a' else ''} "
                                f"{RULES[key][0]} result; give its JSON (python -m kalos_core {RULES[key][0]} ... "
                                "--output FILE)")
    checks: list[Check] = []
    o = rules["overall"]
    if "min_alpha" in o:
        checks.append(_check("min_alpha", "overall", None, agreement.get("mean_alpha"), o["min_alpha"], "mean α"))
    if "min_global_alpha" in o:
        checks.append(_check("min_global_alpha", "overall", None, agreement.get("global_alpha"),
                             o["min_global_alpha"], "global α"))
    if "max_share_below_tau" in o:
        values = [v for v in (agreement.get("per_image_alpha") or {}).values() if v is not None]
        share = sum(v < o["tau"] for v in values) / len(values) if values else None
        checks.append(_check("max_share_below_tau", "overall", None, share, o["max_share_below_tau"],
                             f"share of images with α < {o['tau']:g}"))
    if "min_f1" in o:
        for row in (r for r in cards["rows"] if r["class"] == "(all)"):
            checks.append(_check("min_f1", "overall", row["rater"], row["f1"], o["min_f1"], "F1"))
    classes = dict(rules["classes"])
    if EVERY_CLASS in classes:
        every = classes.pop(EVERY_CLASS)
        named = set((agreement or {}).get("class_difficulty") or {}) | \
            {r["class"] for r in (cards or {}).get("rows", []) if r["class"] != "(all)"}
        classes = {c: {**every, **classes.get(c, {})} for c in sorted(named | set(classes))}
    for cls, table in classes.items():
        for key, source, what in (("min_alpha", "class_difficulty", "α"),
                                  ("min_global_alpha", "class_difficulty_global", "global α")):
            if key in table:
                per = agreement.get(source) or {}
                value = per.get(cls)
                check = _check(key, cls, None, value, table[key], what)
                if cls not in per:
                    check.message = f"{key} [class {cls}]: not a class of the agreement result"
                checks.append(check)
        if "min_f1" in table:
            rows = [r for r in cards["rows"] if r["class"] == cls]
            if not rows:
                checks.append(Check("min_f1", cls, None, None, table["min_f1"], False, None,
                                    f"min_f1 [class {cls}]: not a class of the scorecard result"))
            checks += [_check("min_f1", cls, r["rater"], r["f1"], table["min_f1"], "F1") for r in rows]
    return checks


def report(checks: list[Check], rules_path, result_paths) -> dict:
    """The JSON a CI system keeps: ``passed``, counts, and every check."""
    failed = [c for c in checks if not c.passed]
    return {"passed": not failed, "rules": str(rules_path), "results": [str(p) for p in result_paths],
            "n_checks": len(checks), "n_failed": len(failed), "checks": [asdict(c) for c in checks]}


def run_gate(rules_path, result_paths, report_path=None, out=print) -> int:
    """The command: 0 every rule holds, 1 one fails (printed), 2 a bad file (:class:`GateError`, raised)."""
    rules = load_rules(rules_path)
    checks = evaluate(rules, load_results(result_paths), str(rules_path))
    failed = [c for c in checks if not c.passed]
    for c in failed:
        out(f"FAIL {c.message}")
    out(f"gate {'FAILED' if failed else 'passed'}: {len(checks) - len(failed)} of {len(checks)} checks hold"
        + (f"; {len(failed)} fail" if failed else ""))
    if report_path:
        Path(report_path).write_text(json.dumps(report(checks, rules_path, result_paths), indent=1))
        out(f"wrote {report_path}")
    return 1 if failed else 0
