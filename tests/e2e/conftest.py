"""Fixtures for the browser tests (marker ``e2e``): the demo data set, the App, headless chromium.

Opt-in: they run only with KALOS_E2E=1 (``make test-e2e``, which .ci/run calls after
``make test``) and skip otherwise. They need Playwright (``requirements-e2e.txt``) and a
chromium (Debian's /usr/bin/chromium, or KALOS_CHROMIUM); ``make e2e-setup`` installs both,
and with KALOS_E2E=1 a missing one is a failure, not a skip.

On a failure the page's screenshot, its console log and the tail of the App server's log are
saved to KALOS_E2E_ARTIFACTS (default: a fresh ``kalos-e2e-*`` folder in the temp dir) and
the paths are printed in the test report. KALOS_SCREENSHOTS=1 also writes the documentation
screenshots into docs/img/panels/.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_harness as harness


def _required() -> bool:
    return os.environ.get("KALOS_E2E", "") not in ("", "0")


def _unavailable(reason: str):
    hint = f"{reason}; run `make e2e-setup` (Debian chromium + Playwright)"
    if _required():
        pytest.fail(hint, pytrace=False)
    pytest.skip(hint)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    path = os.environ.get("KALOS_E2E_ARTIFACTS")
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        return Path(path)
    return Path(tempfile.mkdtemp(prefix="kalos-e2e-"))


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian chromium driven by Playwright (a fresh temporary profile)."""
    if not _required():
        pytest.skip("browser tests are opt-in: `make test-e2e` (or KALOS_E2E=1)")
    if importlib.util.find_spec("playwright") is None:
        _unavailable("Playwright is not installed in this Python")
    exe = harness.chromium_path()
    if exe is None:
        _unavailable("no chromium found (/usr/bin/chromium or KALOS_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=harness.CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def demo_app(chromium, tmp_path_factory, artifacts_dir):
    """The demo data set (``python fiftyone_layer/demo.py run``) served by ``fiftyone_layer/demo.py app``."""
    work = tmp_path_factory.mktemp("demo")
    t0 = time.monotonic()
    stdout = harness.build_demo(work / "demo", artifacts_dir / "demo-build.log")
    t1 = time.monotonic()
    server = harness.AppServer(artifacts_dir / "app-server.log").start()
    t2 = time.monotonic()
    print(f"\n[e2e] demo build {t1 - t0:.1f} s, App start {t2 - t1:.1f} s, {server.url}", file=sys.stderr)
    import fiftyone as fo  # this run's private database (tests/conftest.py)

    server.n_samples = len(fo.load_dataset(harness.DATASET))
    server.demo_stdout, server.demo_folder = stdout, work / "demo"   # what make demo printed, and where to
    server.dataset_url = f"{server.url}/datasets/{harness.DATASET}"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(chromium, demo_app, request):
    """A fresh browser context (own storage) with the App's marketing pop-ups off; console
    messages and page errors are collected for the failure report."""
    context = chromium.new_context(viewport=harness.VIEWPORT)
    # the App skips its enterprise pop-over, analytics and toasts under Playwright
    context.add_init_script("window.IS_PLAYWRIGHT = true;")
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.console_lines = []
    pg.on("console", lambda m: pg.console_lines.append(f"[{m.type}] {m.text}"))
    pg.on("pageerror", lambda e: pg.console_lines.append(f"[pageerror] {e}"))
    yield pg
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed:
        return
    pg = item.funcargs.get("page")
    app = item.funcargs.get("demo_app")
    out = item.funcargs.get("artifacts_dir")
    if out is None:
        return
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in item.name)
    lines = []
    if pg is not None:
        shot = out / f"{stem}.png"
        try:
            pg.screenshot(path=str(shot), full_page=True)
            lines.append(f"screenshot: {shot}")
        except Exception as exc:  # a dead page must not hide the original failure
            lines.append(f"screenshot failed: {exc}")
        log = out / f"{stem}.console.log"
        log.write_text("\n".join(getattr(pg, "console_lines", [])) + "\n")
        lines.append(f"console log: {log}")
        try:
            lines.append(f"url: {pg.url}")
        except Exception:
            pass
    if app is not None:
        lines.append(f"App server log: {app.log_path}\n--- last lines ---\n{app.log_tail(40)}")
    rep.sections.append(("e2e artifacts", "\n".join(lines)))
