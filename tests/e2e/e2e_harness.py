"""Plumbing for the browser tests: the demo data set, the App server, headless chromium.

The private mongod is the one ``tests/conftest.py`` starts for the whole pytest run
(FIFTYONE_DATABASE_URI), and FIFTYONE_PLUGINS_DIR already points at a private folder holding
only a link to this checkout; the subprocesses started here inherit both.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATASET = "kalos-demo"
VIEWPORT = {"width": 1600, "height": 1000}  # also the size of the documentation screenshots

# Debian's chromium; Playwright's own browser download does not work offline.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    env = os.environ.get("KALOS_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    return next((p for p in CHROMIUM_CANDIDATES if os.path.exists(p)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_demo(folder: Path, log: Path, name: str = DATASET) -> str:
    """``python fiftyone_layer/demo.py run`` into ``folder``; returns its stdout (also in ``log``)."""
    cmd = [sys.executable, str(REPO / "fiftyone_layer" / "demo.py"), "run", "--folder", str(folder), "--name", name]
    env = dict(os.environ)
    proc = subprocess.run(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False,
                          text=True, timeout=600)
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode:
        raise RuntimeError(f"demo build failed ({proc.returncode}); see {log}\n{proc.stderr[-3000:]}")
    return proc.stdout


#: printed by FiftyOne's session when it could not reach the server it started (still starting,
#: under load); it tries again 10 s later, and when it connects the server sends its state (the
#: default spaces) to every App page: a panel opened meanwhile is closed (the first open in the
#: full browser run never drew, docs/panels.md). start() waits for the retry.
SESSION_RETRY, SESSION_RETRY_S = "Could not connect session", 15.0


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
        failed, failed_at = 0, 0.0
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"App exited with {self.proc.returncode}:\n{self.log_tail()}")
            seen = self.log_tail(10_000).count(SESSION_RETRY)
            if seen != failed:
                failed, failed_at = seen, time.monotonic()
            try:
                with urllib.request.urlopen(self.url + "/fiftyone", timeout=2) as r:
                    if r.status == 200 and time.monotonic() - failed_at > SESSION_RETRY_S:
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
        SIGTERM, then SIGKILL whatever is left after 20 s."""
        if self.proc is None:
            return
        sid = self.proc.pid  # start_new_session: the leader's pid is the session id
        for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
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


def panels_needing_a_run() -> dict[str, str]:
    """Registered panel -> the run kind it shows, for every panel not of agreement runs (the
    plugin's own registry: a new panel is covered without editing the tests)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.run_store import AGREEMENT
    from fiftyone.plugins.orgs.kalos.agreement.panels import PANELS

    return {cls().config.name: cls.METHOD for cls in PANELS if cls.METHOD != AGREEMENT}


def has_run(method: str) -> bool:
    """Does the demo data set hold a run of kind ``method``?"""
    import fiftyone as fo

    ds = fo.load_dataset(DATASET)
    return any(getattr(ds.get_run_info(k).config, "method", None) == method for k in ds.list_runs())


def panel_names(yml: Path = REPO / "fiftyone.yml") -> list[str]:
    """The ``panels:`` entries of fiftyone.yml (a plain list; no YAML dependency needed)."""
    names, inside = [], False
    for line in yml.read_text().splitlines():
        if re.match(r"^\S", line):
            inside = line.split(":")[0].strip() == "panels"
            continue
        m = re.match(r"^\s*-\s*['\"]?([\w.-]+)", line)
        if inside and m:
            names.append(m.group(1))
    return names


def parse_count(text: str) -> int | None:
    """The first integer of the grid's count ("1,234 samples", "12 of 40 samples")."""
    m = re.search(r"\d[\d,]*", text or "")
    return int(m.group(0).replace(",", "")) if m else None


def save_png(data: bytes, path: Path) -> None:
    """A screenshot as a 256-colour PNG (about a quarter of the size; text stays crisp)."""
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
