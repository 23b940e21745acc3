"""Every importer × every class of bad input (docs/bad_input.md, section "Imports"): one line and
exit 2 for a refusal, never a traceback, nothing written; an import only where nothing is wrong or
what was left out is counted; the page is current (``KALOS_WRITE_TABLE=1`` rewrites it)."""

import os

import pytest

from tests.fiftyone.helpers import import_tools

tables = import_tools()


@pytest.fixture(scope="module")
def cells(fo_isolated, tmp_path_factory):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import cli

    got = tables.table(cli, tmp_path_factory.mktemp("bad_imports"))
    if os.environ.get("KALOS_WRITE_TABLE"):
        tables.DOC.write_text(tables.page(got))
    return got


def test_the_page_is_current(cells):
    assert tables.DOC.read_text() == tables.page(cells), "run with KALOS_WRITE_TABLE=1 to rewrite docs/bad_input.md"


def test_the_reference_cells_import_both_raters(cells):
    for importer in tables.IMPORTERS:
        status, line, _, _ = cells[importer, "valid (reference)"]
        assert status == 0 and "2 samples" in line, (importer, line)


@pytest.mark.parametrize("importer, case", [(i, c) for i in tables.IMPORTERS for c in tables.CLASSES])
def test_no_cell_is_a_traceback_a_silent_import_or_a_write(cells, importer, case):
    assert tables.failure(importer, case, cells[importer, case]) is None
