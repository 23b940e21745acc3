"""End-to-end: the first KaLOS panel opened after the App starts, timed (printed, not asserted:
the machine is shared), and what it shows checked; a run scheduled for a worker announces
itself in the open panel and its field shows in the sidebar without reloading the page.

The server-side time comes from the panels' timing file (``kalos panel <name> <event>: <ms> ms``,
written by :meth:`panels.common.RunPanel.execute` to $KALOS_PANEL_TIMINGS); the browser times run from the click on
the panel's menu entry to its tab, its first text, its headline numbers ("Mean α 0.512") and the
first chart's drawn bars, with the load average and every request after the click (graphql
requests by operation and size, ``operators/execute`` by panel event and the operations its
answer sends). docs/benchmarks.md ("Panels") has the figures.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from e2e_pages import (DATASET, GRAPHQL_NAME, leave_app, open_app, open_panel, wait_for_chart, wait_for_quiet,
                       wait_for_text)

pytestmark = pytest.mark.e2e

FIRST = "kalos_agreement_overview"
SCHEDULED = "e2e_scheduled"
LOG_LINE = re.compile(r"kalos panel (\w+) (\w+): (\d+) ms")
def server_times(app, panel: str) -> list[tuple[str, int]]:
    """``(event, ms)`` of every logged event of ``panel``, in order."""
    path = app.timings_path
    text = path.read_text(errors="replace") if path.exists() else ""
    return [(m.group(2), int(m.group(3))) for m in LOG_LINE.finditer(text) if m.group(1) == panel]


def request_name(request) -> str:
    """A request of the timeline: its path, with the operation a graphql request asks for and the
    operator (or panel event) an ``operators/execute`` request runs."""
    path = request.url.split("/", 3)[-1].split("?")[0][:40]
    try:
        body = json.loads(request.post_data or "null")
    except ValueError:
        return path
    if not isinstance(body, dict):
        return path
    if path == "graphql":
        found = GRAPHQL_NAME.search(str(body.get("query", "")))
        return f"graphql {body.get('operationName') or (found.group(1) if found else '?')} ({len(request.post_data)} B)"
    if "operator_uri" in body:
        method = (body.get("params") or {}).get("__method__")
        return f"{path} {body['operator_uri'].rsplit('/', 1)[-1]}" + (f" {method}" if method else "") + sent_ops(request)
    return path


def sent_ops(request) -> str:
    """`` -> [operators]``: what an ``operators/execute`` answer asks the App to run (the panel's
    patches, its output, a view or reload), read from the response after the fact."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        answer = json.loads(request.response().body())
    except (AttributeError, ValueError, PlaywrightError):   # no answer, or its body not kept
        return ""
    ops = [o.get("operator_uri", "?").rsplit("/", 1)[-1] for o in (answer.get("executor") or {}).get("requests") or []]
    return f" -> {ops}" if ops else ""


def off_loop(fn, *args, **kwargs):
    """``fn(...)`` in a thread of its own: Playwright's event loop runs in this one, and FiftyOne's
    execute_operator would hand back an unawaited task inside it."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


@pytest.fixture
def fresh_app(demo_app, start_app):
    """An App server of its own on the demo data set, just started: no panel opened in it yet
    (the shared one has served the tests before this one)."""
    with start_app("app-open-server.log") as app:
        app.n_samples = demo_app.n_samples
        yield app


#: when the user clicks: at once (the grid's thumbnails and the App's own queries may still be
#: loading, the case the figures before stop 34 measured), or after the page has gone quiet (the
#: realistic case: the user looks at the grid first)
CLICK_WHEN = {"at_once": False, "after_grid_loaded": True}


@pytest.mark.parametrize("when", list(CLICK_WHEN))
def test_first_panel_open_is_timed_and_shows_the_run(page, fresh_app, when):
    demo_app = fresh_app
    open_app(page, demo_app)
    waited = wait_for_quiet(page) if CLICK_WHEN[when] else 0.0
    assert not server_times(demo_app, FIRST), "a panel was opened before: this is not the first open"
    calls = []   # (request, ms after the click it was sent, ms it took) of every request
    page.on("requestfinished", lambda r: calls.append(
        (r, round(r.timing["startTime"] - epoch * 1000), round(r.timing["responseEnd"]))))
    load = os.getloadavg()[0]
    t0, epoch = time.monotonic(), time.time()
    body = open_panel(page, FIRST)
    t_tab = time.monotonic() - t0
    body.get_by_text("Per-sample α of the run").first.wait_for(timeout=60_000)
    t_text = time.monotonic() - t0
    body.get_by_text(re.compile(r"Mean α\*?\*? -?\d\.\d{3}")).first.wait_for(timeout=60_000)
    t_headline = time.monotonic() - t0
    marks = wait_for_chart(body, timeout=60)
    wall = time.monotonic() - t0
    text = wait_for_text(body, "Mean α")
    assert re.search(r"Mean α\*?\*? -?\d\.\d{3}", text), text[-800:]
    assert any(m["type"] == "bar" for m in marks), marks[:5]
    events = server_times(demo_app, FIRST)
    assert events and events[0][0] == "on_load", events
    requests = [(request_name(r), *at) for r, *at in calls if at[0] >= 0]
    load_event = next(((at, took) for name, at, took in requests if name.startswith(
        f"operators/execute {FIRST} on_load")), (None, None))
    print(f"\n[app-open] {when} (waited {waited:.1f} s for the page to go quiet), load average {load:.1f} at "
          f"the click: tab {t_tab * 1000:.0f} ms, panel text {t_text * 1000:.0f} ms, headline "
          f"{t_headline * 1000:.0f} ms, bars {wall * 1000:.0f} ms; on_load sent at {load_event[0]} ms, "
          f"answered in {load_event[1]} ms; server on_load {events[0][1]} ms", file=sys.stderr)
    print(f"[app-open] {when}: server {server_lines(demo_app, FIRST)}; requests {requests}", file=sys.stderr)


def server_lines(app, panel: str) -> list[str]:
    """The panel's whole timing lines (each event's steps, :meth:`panels.common.RunPanel.execute`)."""
    path = app.timings_path
    text = path.read_text(errors="replace") if path.exists() else ""
    return [line.split(": ", 1)[-1] for line in text.splitlines() if f"kalos panel {panel} " in line]


def test_a_scheduled_run_announces_itself_in_the_open_panel(page, demo_app):
    import fiftyone as fo
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService

    ds = fo.load_dataset(DATASET)
    try:
        _announce(page, demo_app, ds, foo, DelegatedOperationService)
    finally:   # the run would be the newest on the shared demo: later panels would open it
        from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store

        ds.reload()
        if SCHEDULED in ds.list_runs():
            run_store.delete_run(ds, SCHEDULED)
        leave_app(page, demo_app)


def _announce(page, demo_app, ds, foo, DelegatedOperationService):
    open_app(page, demo_app)
    body = open_panel(page, FIRST)
    wait_for_chart(body, timeout=60)
    assert f"{SCHEDULED}_alpha" not in page.locator("body").inner_text()
    queued = off_loop(foo.get_operator("@kalos/agreement/compute_agreement"), ds, delegate=True,
                      rater_fields=ds.get_run_info("kalos").config.rater_fields, run_key=SCHEDULED, bootstrap=0)
    assert queued.delegated
    page.get_by_role("button", name="Refresh").first.click()   # as after scheduling it from the panel
    wait_for_text(body, f"1 scheduled KaLOS run waiting or running: compute_agreement (run key {SCHEDULED})")

    off_loop(DelegatedOperationService().execute_queued_operations, dataset_name=DATASET, log=False)   # the worker
    text = wait_for_text(body, f"Scheduled run finished: compute_agreement (run key {SCHEDULED}) at", timeout=60)
    assert "waiting or running" not in text
    wait_for_text(page.locator("body"), f"{SCHEDULED}_alpha", timeout=30)   # the sidebar, no page reload
