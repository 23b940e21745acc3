"""Checks every registered measure passes (as scikit-learn's test_common loops over estimators).

A new measure is covered by registering it (kalos_core.measure.MEASURE_MODULES): its declared
parameters, its config's validation, its stored config, its command line, and its result's
invariance to the order of the images and to the raters' names.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math

import pytest

from kalos_core.conventions import conventions_of
from kalos_core.data import MultiRaterDataset
from kalos_core.demo_data import demo_example
from kalos_core.measure import MEASURE_MODULES, MeasureData, get_measure
from kalos_core.params import KINDS, ParamError, params_of

NAMES = list(MEASURE_MODULES)


@pytest.fixture(params=NAMES)
def measure(request):
    return get_measure(request.param)


def test_the_registry_names_each_measure_once_with_its_own_run_kind():
    measures = [get_measure(n) for n in NAMES]
    assert [m.name for m in measures] == NAMES
    assert len({m.method for m in measures}) == len(measures)


def test_every_parameter_is_declared_with_kind_help_and_a_valid_default(measure):
    assert measure.params, f"{measure.name} declares no parameter"
    for p in measure.params:
        assert p.kind in KINDS and p.help.strip(), p.name
        assert p.check(p.default) == p.default or p.optional, p.name
    cfg = measure.config()
    assert dataclasses.is_dataclass(cfg) and type(cfg).__dataclass_params__.frozen


def _bad_value(p):
    """A value of the wrong type or out of bounds for ``p``."""
    if p.kind == "bool":
        return "yes"
    if p.kind == "int":
        return 1.5
    if p.kind in ("float", "fraction"):
        return math.nan
    if p.kind in ("fractions", "floats"):
        return (math.nan,)
    if p.kind == "choice":
        return "no-such-choice"
    if p.kind == "names":
        return "a, b"             # a string is not a list of names
    return ""                     # str: empty names are refused


def test_a_bad_value_of_any_parameter_is_refused_naming_it(measure):
    for p in measure.params:
        with pytest.raises(ParamError) as e:
            measure.config(**{p.name: _bad_value(p)})
        assert e.value.param == p.name and p.name in str(e.value), (measure.name, p.name, str(e.value))


@pytest.mark.parametrize("value", [-1, 0, 2**31, 2**32 - 1, 2**32, 2**64, -(2**63) - 1, "1e99", 1e99, True])
def test_every_integer_is_bounded_on_both_sides_naming_the_range(measure, value):
    """Negative, enormous (past int64, past NumPy's seeds) or non-integer: a ParamError naming the
    parameter and its range; inside the declared range: accepted, through Python and the CLI's text."""
    for p in (p for p in measure.params if p.kind in ("int", "ints")):
        assert p.lo is not None and p.hi is not None and p.hi <= 2**32 - 1, (measure.name, p.name, p.range_text())
        given = (value,) if p.kind == "ints" else value
        inside = isinstance(value, int) and not isinstance(value, bool) and p.lo <= value <= p.hi
        if inside:
            assert getattr(measure.config(**{p.name: given}), p.name) == given, (measure.name, p.name)
            continue
        with pytest.raises(ParamError) as e:
            measure.config(**{p.name: given})
        assert e.value.param == p.name and p.name in str(e.value), (measure.name, p.name, str(e.value))
        if isinstance(value, int) and not isinstance(value, bool):
            assert p.range_text() in str(e.value), str(e.value)
            with pytest.raises(ParamError):
                p.check(p.from_text(str(value)))
    seeds = [p for p in measure.params if p.name == "seed" or p.name.endswith("_seed")]
    assert all((p.lo, p.hi) == (0, 2**32 - 1) for p in seeds), [(p.name, p.range_text()) for p in seeds]


def test_the_stored_config_round_trips(measure):
    cfg = measure.config(**measure.example_params)
    stored = json.loads(json.dumps(cfg.to_dict()))
    assert measure.make_config(stored) == cfg
    assert list(stored) == [p.name for p in params_of(measure.config)]


def test_every_parameter_is_an_option_of_the_command_line(measure):
    from kalos_core.cli import build_parser

    parser = build_parser(commands=[measure.name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[measure.name]
    dests = {a.dest for a in sub._actions}
    for p in measure.params:
        if p.cli_flag:
            assert p.name in dests or p.name == "task", (measure.name, p.name)


def _renamed(ds: MultiRaterDataset, prefix: str, reverse: bool = True) -> MultiRaterDataset:
    """The same labels with every rater renamed (order kept) and the images in reverse order."""
    images = [dataclasses.replace(
        im, raters=tuple(prefix + r for r in im.raters),
        annotations=[dataclasses.replace(a, rater=prefix + a.rater) for a in im.annotations],
        rater_classes=None if im.rater_classes is None else {prefix + r: c for r, c in im.rater_classes.items()},
        row_rater=None if im.row_rater is None else {prefix + r: prefix + b for r, b in im.row_rater.items()})
        for im in (reversed(ds.images) if reverse else ds.images)]
    return dataclasses.replace(ds, images=images, warnings=list(ds.warnings))


def _canonical(value):
    """Dict keys sorted (run times left out), lists of records sorted: what must not depend on order."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if k != "seconds"}
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        if items and all(isinstance(v, (dict, list)) for v in items):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True, default=str)[:200])
        return items
    return value


def _same(a, b, path="result") -> None:
    """``a == b`` with floats equal up to summation order and iterative fits (relative 1e-6)."""
    if isinstance(a, float) and isinstance(b, (int, float)):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b)), (path, a, b)
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (path, sorted(set(a) ^ set(b)))
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{k}]")
    else:
        assert a == b, (path, a, b)


def test_the_same_seed_gives_the_same_result(measure):
    data = demo_example()
    data = measure.example(data) if measure.example else data
    config = measure.config(**measure.example_params)
    first, second = (json.dumps(measure.run(data, config).to_dict(), sort_keys=True, default=str) for _ in range(2))
    _same(_canonical(json.loads(first)), _canonical(json.loads(second)))


def test_a_result_said_to_name_no_conventions_names_none(measure):
    """The command line skips ``to_dict()`` of such a measure (``result_conventions=False``)."""
    if measure.result_conventions:
        pytest.skip("its result may name conventions")
    data = demo_example()
    result = measure.run(measure.example(data) if measure.example else data, measure.config(**measure.example_params))
    assert conventions_of(measure.method, result.to_dict()) == conventions_of(measure.method)


def test_the_result_does_not_depend_on_image_order_or_rater_names(measure):
    data = demo_example()
    data = measure.example(data) if measure.example else data
    if not isinstance(data.dataset, MultiRaterDataset):
        assert not measure.order_invariant, f"{measure.name}: a clean reference in, synthetic raters out"
        return   # a generator's input has no raters to rename; its order is its seeded draw order
    config = measure.config(**measure.example_params)
    plain = measure.run(data, config).to_dict()
    prefix = "zz_"
    raters = set(data.dataset.raters)
    options = {k: ({prefix + r: x for r, x in v.items()} if isinstance(v, dict) and v and set(v) <= raters else v)
               for k, v in data.options.items()}    # per-rater inputs (BAE's embeddings) renamed too
    moved = MeasureData(_renamed(data.dataset, prefix, measure.order_invariant), data.predictions, options)
    text = json.dumps(measure.run(moved, config).to_dict())
    if measure.order_invariant:
        assert [im.id for im in moved.dataset.images] != [im.id for im in data.dataset.images]
    if any(r in json.dumps(plain) for r in raters):   # a result that names raters names the renamed ones
        assert prefix in text
    text = text.replace(prefix, "")
    _same(_canonical(json.loads(text)), _canonical(json.loads(json.dumps(plain))))


def test_the_options_page_is_written_from_the_declarations():
    from pathlib import Path

    from kalos_core.measure_docs import options_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "options.md"
    assert page.read_text() == options_markdown(), "run: python -m kalos_core.measure_docs > docs/options.md"


def test_the_cli_synopses_are_written_from_the_declarations():
    """The README's list of commands and docs/cli.md's synopsis are the parser's, option by option."""
    from pathlib import Path

    from kalos_core.cli import build_parser
    from kalos_core.measure_docs import BLOCKS, block_of, cli_usage_text

    root = Path(__file__).resolve().parents[2]
    for rel, marker, make in BLOCKS:
        assert block_of((root / rel).read_text(), marker) == make(), \
            f"{rel}: run python -m kalos_core.measure_docs --write"
    usage = cli_usage_text()
    for name, parser in next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices).choices.items():
        assert f"python -m kalos_core {name} " in usage
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                assert any(flag in usage for flag in action.option_strings), (name, action.option_strings)
    assert "[--lsa LSA_THRESHOLDS]" in usage   # agreement's LSA thresholds: none unless asked for


def test_every_measure_is_exported_from_the_package(measure):
    import kalos_core

    assert getattr(kalos_core, measure.config.__name__) is measure.config
    assert getattr(kalos_core, measure.result.__name__) is measure.result
