"""Fixtures for the browser tests (marker ``e2e``): the demo data set, the App servers, headless chromium
(the page actions and the facts about the demo are in e2e_pages.py, the one helpers module here).

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
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_pages import DATASET, REPO, VIEWPORT  # noqa: E402  (this folder is on sys.path now)

# Debian's chromium; Playwright's own browser download does not work offline.
_CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
_CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def _chromium_path() -> str | None:
    env = os.environ.get("KALOS_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    return next((p for p in _CHROMIUM_CANDIDATES if os.path.exists(p)), None)


def _build_demo(folder: Path, log: Path, name: str = DATASET) -> str:
    """``python fiftyone_layer/demo.py run`` into ``folder``; returns its stdout (also in ``log``)."""
    cmd = [sys.executable, str(REPO / "fiftyone_layer" / "demo.py"), "run", "--folder", str(folder), "--name", name]
    env = dict(os.environ)
    proc = subprocess.run(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False,
                          text=True, timeout=600)
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode:
        raise RuntimeError(f"demo build failed ({proc.returncode}); see {log}\n{proc.stderr[-3000:]}")
    return proc.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connected(pid: int, port: int) -> bool:
    """Does process ``pid`` (the App's Session) hold an open connection to the server on ``port``
    (its event stream, once it has subscribed)? Under load the Session may try before the server
    it started is up ("Could not connect session, trying again in 10 seconds"); when it connects,
    the server sends its state (the default spaces) to every App page, and a panel opened
    meanwhile is closed (the first open in the full browser run never drew, docs/panels.md). So
    AppServer.start() waits for this, not for a fixed time after that message."""
    import psutil

    try:
        return any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
                   for c in psutil.Process(pid).net_connections(kind="tcp"))
    except psutil.Error:
        return False


class AppServer:
    """``python fiftyone_layer/demo.py app`` (what ``make app`` runs) on a free loopback port.

    Runs in its own process group so that stop() ends the Session process *and* the server
    subprocess it spawns, and nothing else.
    """

    def __init__(self, log: Path, name: str = DATASET, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.timings_path = log.with_suffix(".timings")  # the panels' event times (panels/common.py)
        self.name = name
        self.proc = None

    def start(self, timeout: float = 180) -> AppServer:
        self.timings_path.unlink(missing_ok=True)   # a file left by an earlier run is not this server's
        env = dict(os.environ, PYTHONUNBUFFERED="1", KALOS_PANEL_TIMINGS=str(self.timings_path))
        env.pop("FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS", None)   # as `make app`: FiftyOne's own settings
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "fiftyone_layer" / "demo.py"), "app", "--name", self.name, "--port", str(self.port)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        connected = 0   # polls in a row that found the Session's event stream open
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"App exited with {self.proc.returncode}:\n{self.log_tail()}")
            connected = connected + 1 if _connected(self.proc.pid, self.port) else 0
            try:
                with urllib.request.urlopen(self.url + "/fiftyone", timeout=2) as r:
                    if r.status == 200 and connected >= 2:   # not a passing request: the stream stays
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"App did not answer on {self.url} within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.5)

    def reset_state(self) -> None:
        """Put the App's shared session back on the whole data set (no view, no saved view, default
        spaces) through the server's own ``setDataset`` mutation, as choosing the data set in the
        App does. A case that deletes fields a selected (saved) view uses calls this first: the
        next page load would otherwise ask for the missing field ("Field ... does not exist")."""
        query = ('mutation { setDataset(subscription: "kalos-e2e", session: null, name: "%s", '
                 'viewName: null) }' % self.name)
        req = urllib.request.Request(self.url + "/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read())
        if answer.get("errors") or not (answer.get("data") or {}).get("setDataset"):
            raise RuntimeError(f"the App did not reset its session: {answer}")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """End every process of the session the App was started in (the Session process, the
        fiftyone service wrapper and the server it runs, each in its own process group):
        SIGTERM, then SIGKILL whatever is left after 3 s: nothing of a test's App needs a graceful
        shutdown, and under load the server's took 5-6 s of each App's teardown."""
        if self.proc is None:
            return
        sid = self.proc.pid  # start_new_session: the leader's pid is the session id
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
            for pid in _session_pids(sid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                self.proc.poll()  # reap the leader so that it does not linger as a zombie
                if not _session_pids(sid):
                    break
                time.sleep(0.2)
            else:
                continue
            break
        self.proc = None
        self._log.close()


def _session_pids(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is ``sid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            pids.append(int(entry))
    return pids


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
    exe = _chromium_path()
    if exe is None:
        _unavailable("no chromium found (/usr/bin/chromium or KALOS_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=_CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def start_app(artifacts_dir):
    """``with start_app(log_name, name=...) as server:`` an App server of its own on data set ``name``
    (default the demo), its log in the artifacts folder, stopped when the block ends; ``server.url``,
    ``server.dataset_url``."""
    @contextmanager
    def start(log_name: str, name: str = DATASET):
        t0 = time.monotonic()
        server = AppServer(artifacts_dir / log_name, name=name).start()
        server.dataset_url = f"{server.url}/datasets/{name}"
        t1 = time.monotonic()
        try:
            yield server
        finally:
            t2 = time.monotonic()
            server.stop()
            print(f"\n[e2e] App on {name}: start {t1 - t0:.1f} s, stop {time.monotonic() - t2:.1f} s", file=sys.stderr)

    return start


@pytest.fixture(scope="session")
def demo_app(chromium, tmp_path_factory, artifacts_dir, start_app):
    """The demo data set (``python fiftyone_layer/demo.py run``) served by ``fiftyone_layer/demo.py app``."""
    work = tmp_path_factory.mktemp("demo")
    t0 = time.monotonic()
    stdout = _build_demo(work / "demo", artifacts_dir / "demo-build.log")
    t1 = time.monotonic()
    with start_app("app-server.log") as server:
        print(f"\n[e2e] demo build {t1 - t0:.1f} s, App start {time.monotonic() - t1:.1f} s, {server.url}",
              file=sys.stderr)
        import fiftyone as fo  # this run's private database (tests/conftest.py)

        server.n_samples = len(fo.load_dataset(DATASET))
        server.demo_stdout, server.demo_folder = stdout, work / "demo"   # what make demo printed, and where to
        yield server


@pytest.fixture
def page(chromium, demo_app, request):
    """A fresh browser context (own storage) with the App's marketing pop-ups off; console
    messages and page errors are collected for the failure report."""
    context = chromium.new_context(viewport=VIEWPORT)
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
