"""Typed parameters, declared once: on the fields of a measure's config dataclass.

A config is an explicit frozen dataclass whose fields are made with :func:`param`::

    @dataclass(frozen=True)
    class VariationConfig(Config):
        threshold: float = param(0.5, "fraction", "the run's threshold", lo_open=True)

Everything else is derived from that one declaration (:func:`params_of`): the config's
validation (:meth:`Config.__post_init__`, a :class:`ParamError` naming the field), the
command line's options (:mod:`kalos_core.measure_cli`), the FiftyOne operator forms and
their form errors, the stored run config (:meth:`Config.to_dict`) and the panels'
Recompute (:meth:`Config.from_dict`).

Kinds: ``bool``, ``int`` (``lo`` = minimum), ``float`` (``lo``/``hi``, ends open where
asked), ``fraction`` (a float in [0, 1]), ``fractions`` / ``floats`` (tuples of them),
``ints`` (a tuple of integers >= ``lo``), ``choice`` (one of ``choices``: a tuple or a
callable giving the registry's names), ``str`` and ``names`` (a non-empty tuple of strings; each
one of ``choices`` where given).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .checks import check_bool, check_fraction, check_int, check_names

KINDS = ("bool", "int", "float", "fraction", "fractions", "floats", "ints", "choice", "str", "names")
#: the kinds whose value is a tuple (typed as comma-separated text)
LIST_KINDS = ("fractions", "floats", "ints", "names")


class ParamError(ValueError):
    """A bad parameter value; ``param`` names the field at fault (an operator puts the message on it)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Param:
    """One parameter of a measure: its type, bounds or choices, help, and how it is shown.

    ``name`` and ``default`` are filled in from the dataclass field by :func:`params_of`.
    """

    kind: str
    help: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple | Callable[[], Iterable[str]] | None = None
    optional: bool = False          #: None is a valid value (meaning "the default rule", in ``help``)
    advanced: bool = False          #: shown under "Advanced" in the forms
    flag: str | None = None         #: command-line option; None = ``--name-with-dashes``; "" = not on the CLI
    label: str | None = None        #: form label; None = from the name
    none_as: Any = None             #: a value the CLI / form uses to say None (e.g. 0 = no limit); None = none
    group: str | None = None        #: booleans of one group are one multi-select in the forms (its value: the names on)
    name: str = ""
    default: Any = None

    def options(self) -> tuple:
        """The allowed values of a ``choice``."""
        c = self.choices() if callable(self.choices) else self.choices
        return tuple(sorted(c)) if callable(self.choices) else tuple(c or ())

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def cli_flag(self) -> str:
        return f"--{self.name.replace('_', '-')}" if self.flag is None else self.flag

    def range_text(self) -> str:
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf" if self.hi is None else f"{self.hi:g}"
        return f"{'(' if self.lo_open or self.lo is None else '['}{lo}, {hi}{')' if self.hi_open or self.hi is None else ']'}"

    def from_text(self, text: str) -> Any:
        """A value typed as text (a command-line option, a form's text box): parsed by kind, ``none_as``
        read as None; not yet checked (:meth:`check`). Raises ValueError on text that is not of the kind."""
        if self.kind == "bool":
            low = str(text).strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"expected true or false, got {text!r}")
            value: Any = low in ("true", "1", "yes")
        elif self.kind in LIST_KINDS:
            parts = [v.strip() for v in str(text).replace(";", ",").split(",") if v.strip()]
            if not parts:
                raise ValueError(f"expected comma-separated values, got {text!r}")
            number = int if self.kind == "ints" else float
            value = tuple(parts) if self.kind == "names" else tuple(_number(number, v) for v in parts)
        else:
            value = {"int": int, "float": float, "fraction": float}.get(self.kind, str)(text)
        return None if self.none_as is not None and value == self.none_as else value

    def to_text(self, value: Any) -> str:
        """The value as :meth:`from_text` reads it (lists comma-separated)."""
        if isinstance(value, (tuple, list)):
            return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        return "" if value is None else str(value)

    def form_value(self, value: Any) -> Any:
        """The value as a form shows it: numbers' lists as comma-separated text, names as a list
        (a multiple choice), the rest as it is."""
        if value is None:
            return None
        return self.to_text(value) if self.kind in ("fractions", "floats", "ints") else \
            list(value) if self.kind == "names" else value

    def check(self, value: Any) -> Any:
        """``value`` checked and normalised (tuples for sequences, float for floats); raises
        :class:`ParamError` naming this parameter."""
        if value is None and self.optional:
            return None
        try:
            return _CHECKS[self.kind](self, value)
        except ParamError:
            raise
        except ValueError as e:
            raise ParamError(self.name, str(e)) from None


def _number(number: type, text: str):
    """One item of a comma-separated list read as ``number``; a ValueError that names the item."""
    try:
        return number(text)
    except ValueError:
        raise ValueError(f"{text!r} is not {'a whole number' if number is int else 'a number'} "
                         f"(expected numbers separated by commas)") from None


def _float(p: Param, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ParamError(p.name, f"{p.name} must be a number in {p.range_text()}, got {value!r}")
    v = float(value)
    if (p.lo is not None and (v < p.lo or (p.lo_open and v == p.lo))) or \
            (p.hi is not None and (v > p.hi or (p.hi_open and v == p.hi))):
        if p.lo == 0 and p.lo_open and p.hi is None:
            what = "positive numbers" if p.kind == "floats" else "a positive number"
            raise ParamError(p.name, f"{p.name} must be {what}, got {value!r}")
        raise ParamError(p.name, f"{p.name} must lie in {p.range_text()}, got {value!r}")
    return v


def _sequence(p: Param, value: Any, one: Callable[[Param, Any], Any]) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ParamError(p.name, f"{p.name} must be a list of numbers, got {value!r}")
    return tuple(one(p, v) for v in value)


def _choice(p: Param, value: Any) -> str:
    allowed = p.options()
    if value not in allowed:
        raise ParamError(p.name, f"unknown {p.name} {value!r}; known: {', '.join(map(str, allowed))}")
    return value


def _names(p: Param, value: Any) -> tuple:
    names = check_names(p.name, value)
    allowed = p.options() if p.choices else names
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise ParamError(p.name, f"unknown {p.name} {', '.join(map(repr, unknown))}; known: {', '.join(allowed)}")
    return names


def _str(p: Param, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ParamError(p.name, f"{p.name} must be a non-empty name, got {value!r}")
    return value


_CHECKS: dict[str, Callable[[Param, Any], Any]] = {
    "bool": lambda p, v: check_bool(p.name, v),
    "int": lambda p, v: check_int(p.name, v, int(p.lo or 0), None if p.hi is None else int(p.hi)),
    "float": _float,
    "fraction": lambda p, v: check_fraction(p.name, v, p.lo_open, p.hi_open),
    "fractions": lambda p, v: _sequence(p, v, lambda q, x: check_fraction(q.name, x, q.lo_open, q.hi_open)),
    "floats": lambda p, v: _sequence(p, v, _float),
    "ints": lambda p, v: _sequence(p, v, lambda q, x: check_int(q.name, x, int(q.lo or 0),
                                                                None if q.hi is None else int(q.hi))),
    "choice": _choice,
    "str": _str,
    "names": _names,
}


def param(default: Any, kind: str, help: str, **options: Any) -> Any:
    """A config dataclass field declaring one parameter (see :class:`Param` for ``options``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown parameter kind {kind!r}; known: {', '.join(KINDS)}")
    return field(default=default, metadata={"param": Param(kind, help, **options)})


def same_param(config_cls: type, name: str, **changes: Any) -> Any:
    """A config field declaring parameter ``name`` of ``config_cls`` once more, for a measure that
    takes the same setting (consensus matches with the agreement's threshold, distance, solver and
    cost): kind, default, bounds, choices and help are that declaration's, written once;
    ``changes`` replace some of them (``default``, ``advanced``, ``help``, ...)."""
    p = next((p for p in params_of(config_cls) if p.name == name), None)
    if p is None:
        raise ValueError(f"{config_cls.__name__} declares no parameter {name!r}")
    default = changes.pop("default", p.default)
    return field(default=default, metadata={"param": dataclasses.replace(p, name="", default=None, **changes)})


def params_of(config_cls: type) -> tuple[Param, ...]:
    """The declared parameters of a config class, in field order, with name and default filled in."""
    cached = config_cls.__dict__.get("_params_cache")
    if cached is not None:
        return cached
    out = tuple(dataclasses.replace(f.metadata["param"], name=f.name, default=f.default)
                for f in dataclasses.fields(config_cls) if "param" in f.metadata)
    setattr(config_cls, "_params_cache", out)
    return out


class Config:
    """Base of every measure's config: validation from the declared parameters, then the
    measure's own cross-field rules (:meth:`check`); ``to_dict``/``from_dict`` for storage."""

    def __post_init__(self) -> None:
        for p in params_of(type(self)):
            object.__setattr__(self, p.name, p.check(getattr(self, p.name)))
        self.check()

    def check(self) -> None:
        """Rules between parameters (override); raise :class:`ParamError` naming the field at fault."""

    def to_dict(self) -> dict:
        """The parameters as plain JSON values (tuples as lists), in declaration order."""
        return {p.name: (list(v) if isinstance(v, tuple) else v)
                for p in params_of(type(self)) for v in [getattr(self, p.name)]}

    @classmethod
    def from_dict(cls, values: dict | None) -> "Config":
        """A config from stored values; keys that are not parameters are ignored, missing ones take
        their defaults."""
        names = {p.name for p in params_of(cls)}
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in (values or {}).items() if k in names})


def groups_of(config_cls: type) -> dict[str, tuple[Param, ...]]:
    """The groups of boolean parameters (``Param.group``): group name -> its members, in order."""
    out: dict[str, list] = {}
    for p in params_of(config_cls):
        if p.group:
            out.setdefault(p.group, []).append(p)
    return {k: tuple(v) for k, v in out.items()}


def expand_groups(config_cls: type, values: dict) -> dict:
    """``values`` with each group's list of names (``{"diagnostics": ["vitality"]}``) turned into
    its members' booleans; a name that is not a member raises :class:`ParamError` on the group."""
    out = dict(values)
    for group, members in groups_of(config_cls).items():
        if group not in out:
            continue
        chosen = out.pop(group)
        names = [m.name for m in members]
        if chosen is None:
            continue
        if isinstance(chosen, str) or not hasattr(chosen, "__iter__"):
            raise ParamError(group, f"{group} must be a list of names among {names}, got {chosen!r}")
        unknown = [c for c in chosen if c not in names]
        if unknown:
            raise ParamError(group, f"unknown {group} {unknown}; choose among {names}")
        out.update({name: name in chosen for name in names})
    return out


def stored_form_values(config_cls: type, stored: Any) -> dict:
    """A stored run config's parameter values as form values (the panels' Recompute): complete,
    every declared parameter; one the run predates takes its default. ``stored`` is a dict or an
    object with the values as attributes (a FiftyOne run config)."""
    out = {}
    for p in params_of(config_cls):
        value = stored.get(p.name) if isinstance(stored, dict) else getattr(stored, p.name, None)
        out[p.name] = p.form_value(p.default if value is None and not p.optional else value)
    for group, members in groups_of(config_cls).items():
        out[group] = [m.name for m in members if out[m.name]]
    return out
