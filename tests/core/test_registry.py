"""The one registry executors, solvers, costs and agreement diagnostics are kept in."""

import pytest

from kalos_core.agreement.diagnostics import REGISTRY as DIAGNOSTICS
from kalos_core.executors import EXECUTORS
from kalos_core.matching import COSTS, SOLVERS
from kalos_core.registry import Registry


def test_a_registry_lists_its_names_in_registration_order_and_names_an_unknown_one():
    shapes = Registry("shape")
    shapes.register("square")(len)
    shapes.add("circle", abs)
    assert list(shapes) == ["square", "circle"] and shapes["circle"] is abs and shapes.get("square") is len
    assert "circle" in shapes and "oval" not in shapes and len(shapes) == 2
    with pytest.raises(ValueError, match=r"^unknown shape 'oval'; known: square, circle$"):
        shapes.get("oval")
    with pytest.raises(ValueError, match=r"^shape 'circle' is registered twice$"):
        shapes.add("circle", min)
    assert shapes["circle"] is abs


def test_the_engine_registries_are_registries_of_their_kind():
    assert {r.kind for r in (EXECUTORS, SOLVERS, COSTS, DIAGNOSTICS)} == {"executor", "solver", "cost", "diagnostic"}
    assert list(EXECUTORS) == ["local", "processes", "dask"] and list(COSTS) == ["soft", "neg"]
    assert {"greedy", "shm", "ahc", "mgm"} <= set(SOLVERS)
    with pytest.raises(ValueError, match=r"^unknown solver 'magic'; known: greedy, "):
        SOLVERS.get("magic")
