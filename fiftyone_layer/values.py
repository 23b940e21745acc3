"""Parameter values from an operator's form or a Python call, checked by the measure's declaration.

A bad value, or a rule between values, is a :class:`SetupError` naming the parameter (the
form shows it on that input). Forms send lists of numbers as comma-separated text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalos_core.params import Param, ParamError, expand_groups

from .errors import SetupError

if TYPE_CHECKING:
    from kalos_core.measure import Measure


def value_of(p: Param, value):
    """A form or Python value for ``p``, checked (text read for list kinds); :class:`SetupError` naming it."""
    try:
        if isinstance(value, str) and p.kind not in ("str", "choice"):
            value = p.from_text(value)
        if p.optional and (value == "" or (isinstance(value, (list, tuple)) and not value)):
            value = None    # an empty input (no name picked): the default rule
        return p.check(value)
    except ParamError as e:
        raise SetupError(str(e), e.param) from None
    except ValueError as e:
        raise SetupError(f"{p.name}: {e}", p.name) from None


def make_config(measure: Measure, values: dict):
    """The measure's config from form / Python values (missing ones take their defaults); a bad
    value or a rule between values is a :class:`SetupError` naming the parameter."""
    try:
        values = expand_groups(measure.config, values)
        given = {p.name: value_of(p, values[p.name]) for p in measure.params
                 if p.name in values and values[p.name] is not None}
        return measure.config(**given)
    except ParamError as e:
        raise SetupError(str(e), e.param) from None
