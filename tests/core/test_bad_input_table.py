"""Issue 22: every command × every class of bad input (docs/bad_input.md): the page is current,
and no cell is an internal error, a time-out, or an answer where a refusal is due.

KNOWN_FAILING is empty: every cell is right. A cell that goes wrong fails here; regenerate the page
after changing an error message: ``python benchmarks/bad_input_table.py``."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bad_input_table", ROOT / "benchmarks" / "bad_input_table.py")
table_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table_module)

KNOWN_FAILING: set[tuple[str, str]] = set()   # every cell right (issue 22); a new wrong cell fails


@pytest.fixture(scope="module")
def cells():
    return table_module.table()


def test_the_page_is_current(cells):
    assert table_module.DOC.read_text() == table_module.markdown(cells), "run: python benchmarks/bad_input_table.py"


def test_every_command_and_class_is_in_the_table(cells):
    assert set(table_module.COMMANDS) == set(table_module.MEASURE_MODULES)
    assert len(cells) == len(table_module.COMMANDS) * len(table_module.CLASSES)
    assert cells["agreement", "valid input (reference)"][0] == 0   # the reference cell runs
    assert "levels deep" in cells["agreement", "deep JSON (100k nested lists)"][1]
    assert cells["calibrate", "predictions with NaN scores"] is None   # n/a: calibrate takes no predictions


@pytest.mark.parametrize("command, name", [(c, n) for c in table_module.COMMANDS for n in table_module.CLASSES])
def test_no_cell_is_an_internal_error_or_a_wrong_answer(cells, command, name):
    if (command, name) in KNOWN_FAILING:
        pytest.xfail("known: fixed by other work of issue 22")
    assert table_module.failure(command, name, cells[command, name]) is None
