"""End-to-end: the panels' state sent as data and kept by the server (panels/kept.py, issue 25).

* A panel event that changes nothing in the grid leaves the grid alone.
* A restarted App server: the open panel still works (its kept state is read back).


The App saves a panel's *state* into its spaces on every change, and each save reloads the dataset
page and refetches the grid (``setSpacesMutation``, ``DatasetPageQuery``, ``paginateSamplesQuery``,
then the tiles' media again): the grid blanks for a moment. The panels send their state as data
(panels/kept.py), so Refresh (what a finished run from a panel's form calls too) asks for none of
these. The counts are printed for docs/perf/app_open.md.
"""

from __future__ import annotations

import json
import sys

import pytest
from e2e_harness import AppServer
from e2e_pages import (
    click_until_count_changes,
    open_app,
    open_panel,
    wait_for_chart,
    wait_for_text,
    wait_for_tiles,
)
from test_app_open import GRAPHQL_NAME, fresh_app, server_times  # noqa: F401  (fresh_app: the fixture)

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


def test_the_open_panel_works_after_the_app_server_restarts(page, fresh_app, artifacts_dir):  # noqa: F811
    """The App server stops and starts again (same port and database) under an open panel: a
    click on a bar reads the bins the first server computed from the kept state, without loading
    the panel again, and filters the grid."""
    open_app(page, fresh_app)
    body = open_panel(page, OVERVIEW)
    marks = [m for m in wait_for_chart(body, timeout=60) if m["type"] == "bar" and m["value"]]
    fresh_app.stop()
    again = AppServer(artifacts_dir / "app-restarted-server.log", port=fresh_app.port).start()
    try:
        got = click_until_count_changes(page, sorted(marks, key=lambda m: m["value"]), fresh_app.n_samples,
                                        timeout=20, what="histogram bars")
        assert 0 < got < fresh_app.n_samples
        wait_for_text(body, f"Showing {got} sample", timeout=30)
        events = server_times(again, OVERVIEW)
        print(f"\n[restart] after the restart: {events}", file=sys.stderr)
        assert events and all(e != "on_load" for e, _ in events), events
        assert "load_run" not in again.timings_path.read_text(), "the panel was loaded again"   # read from the kept state
    finally:
        again.stop()
