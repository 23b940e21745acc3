"""End-to-end: a panel event that changes nothing in the grid leaves the grid alone (issue 25).

The App saves a panel's *state* into its spaces on every change, and each save reloads the dataset
page and refetches the grid (``setSpacesMutation``, ``DatasetPageQuery``, ``paginateSamplesQuery``,
then the tiles' media again): the grid blanks for a moment. The panels send their state as data
(panels/kept.py), so Refresh (what a finished run from a panel's form calls too) asks for none of
these. The counts are printed (docs/panels.md).
"""

from __future__ import annotations

import json
import sys

import pytest
from e2e_pages import GRAPHQL_NAME, open_app, open_panel, wait_for_chart, wait_for_tiles

pytestmark = pytest.mark.e2e

OVERVIEW = "kalos_agreement_overview"
GRID = ("setSpacesMutation", "DatasetPageQuery", "paginateSamplesQuery")


def _name(request) -> str | None:
    """The graphql operation of a request, ``media`` for a tile's image, else None."""
    path = request.url.split("/", 3)[-1].split("?")[0]
    if path.startswith("media"):
        return "media"
    if path != "graphql":
        return None
    try:
        body = json.loads(request.post_data or "null") or {}
    except ValueError:
        return None
    found = GRAPHQL_NAME.search(str(body.get("query", "")))
    return body.get("operationName") or (found.group(1) if found else None)


def _requests_during(page, event: str, action, settle_ms: int = 6000) -> list[str]:
    """The grid's requests from ``action`` until ``settle_ms`` after the panel's answer to
    ``event``."""
    seen: list[str] = []

    def on_request(r):
        name = _name(r)
        if name in GRID or name == "media":
            seen.append(name)

    page.on("request", on_request)
    try:
        with page.expect_response(lambda r: "operators/execute" in r.url
                                  and f'"__method__":"{event}"' in (r.request.post_data or "").replace(" ", ""),
                                  timeout=60_000):
            action()
        page.wait_for_timeout(settle_ms)
    finally:
        page.remove_listener("request", on_request)
    return seen


def test_refresh_in_a_panel_does_not_reload_the_page_or_the_grid(page, demo_app):
    open_app(page, demo_app)
    body = open_panel(page, OVERVIEW)
    wait_for_chart(body, timeout=60)
    wait_for_tiles(page)
    page.wait_for_timeout(8000)   # the App's own saves and refetches after the split opened
    refresh = body.get_by_role("button", name="Refresh").first
    counts = [_requests_during(page, "refresh", refresh.click) for _ in range(2)]
    print(f"\n[grid-refetch] Refresh x2: {counts}", file=sys.stderr)
    for seen in counts:
        assert not [n for n in seen if n in GRID], seen   # no layout save, no page or grid reload
        assert "media" not in seen, seen   # no tile drawn again



def test_refresh_after_the_runs_changed_does_not_reload_the_page_or_the_grid(page, demo_app):
    """A Refresh that changes what the panel holds (another run appeared, as after a run from a
    panel's form): on main its state patch made the App save its spaces and reload the page and
    the grid; the panel's data does not."""
    import fiftyone as fo
    from e2e_pages import DATASET
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.run_store import AGREEMENT

    open_app(page, demo_app)
    body = open_panel(page, OVERVIEW)
    wait_for_chart(body, timeout=60)
    wait_for_tiles(page)
    page.wait_for_timeout(8000)   # the App's own saves and refetches after the split opened
    ds = fo.load_dataset(DATASET)
    runs = sorted((ds.get_run_info(k).timestamp, k) for k in ds.list_runs() if ds.get_run_info(k).config.method == AGREEMENT)
    assert len(runs) >= 2, runs
    old = runs[0][1]   # not the run shown (the newest): its selector keeps its value (a changed value is an input change)
    ds.rename_run(old, f"{old}_renamed")   # the run list the panel holds changes
    try:
        seen = _requests_during(page, "refresh", body.get_by_role("button", name="Refresh").first.click)
        print(f"\n[grid-refetch] Refresh after the runs changed: {seen}", file=sys.stderr)
    finally:
        ds.rename_run(f"{old}_renamed", old)
    assert not [n for n in seen if n in GRID], seen
    assert "media" not in seen, seen
