#!/usr/bin/env python3
"""How long ``make app`` holds its port after a plain ``kill``, with the App open in a browser.

Builds the demo data set (``fiftyone_layer/demo.py run``) in a private, throw-away database
directory, then ``--trials`` times: starts ``fiftyone_layer/demo.py app`` (what ``make app`` runs),
opens the data set in headless chromium (Playwright, ``--chromium``) with the Agreement overview
panel open and its chart drawn, sends SIGTERM to the ``app`` process and measures, from the signal,
the seconds until the port can be bound again, until each process under ``app`` (the App server,
its watcher, the database and its watcher) is gone, and until ``app`` itself has exited. The tab
stays open meanwhile (an open tab's event stream is what kept the port before). Needs
``make e2e-setup``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
COUNT = '[data-cy="entry-counts"]'
NEW_PANEL = '[data-cy="new-panel-btn"]'
PANEL = "kalos_agreement_overview"


def bound(port: int) -> bool:
    """Whether something holds ``port`` (it cannot be bound), as a restarted server would find it."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


def waited(cond, seconds: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if cond():
            return round(time.monotonic() - t0, 2)
        time.sleep(0.05)
    return None


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def trial(browser, port: int, log: Path) -> dict:
    app = subprocess.Popen([sys.executable, "fiftyone_layer/demo.py", "app", "--port", str(port)], cwd=REPO,
                           stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    kids: list = []
    try:
        if waited(lambda: bound(port) or app.poll() is not None, 180) is None or app.poll() is not None:
            raise RuntimeError(f"the App did not start:\n{log.read_text()[-2000:]}")
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        context.add_init_script("window.IS_PLAYWRIGHT = true;")   # the App's enterprise pop-over off
        page = context.new_page()
        for _ in range(60):
            try:
                page.goto(f"http://127.0.0.1:{port}/datasets/kalos-demo", timeout=60_000)
                break
            except Exception:  # noqa: BLE001  (the server still starting)
                time.sleep(1)
        page.locator(COUNT).first.wait_for(timeout=120_000)
        page.locator(NEW_PANEL).first.click()
        page.locator(f'[data-cy="new-panel-option-{PANEL}"]').click()
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        kids = psutil.Process(app.pid).children(recursive=True)
        names = {k.pid: " ".join(a.rsplit("/", 1)[-1] for a in k.cmdline()[1:4]) for k in kids}
        t0 = time.monotonic()
        app.send_signal(signal.SIGTERM)
        free = waited(lambda: not bound(port), 120)
        gone, exited = {}, None
        while time.monotonic() - t0 < 120 and (exited is None or len(gone) < len(kids)):
            now = round(time.monotonic() - t0, 2)
            gone.update({k.pid: now for k in kids if k.pid not in gone and not alive(k)})
            if exited is None and app.poll() is not None:
                exited = now
            time.sleep(0.05)
        context.close()
        return {"port_free_s": free, "app_exit_s": exited,
                "children_gone_s": {names[pid]: t for pid, t in sorted(gone.items(), key=lambda kv: kv[1])}}
    finally:
        if not kids and app.poll() is None:
            kids = psutil.Process(app.pid).children(recursive=True)
        for p in [app, *kids]:
            try:
                p.kill()
            except (psutil.Error, ProcessLookupError):
                pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--port", type=int, default=5187)
    ap.add_argument("--chromium", default=os.environ.get("KALOS_CHROMIUM", "/usr/bin/chromium"))
    args = ap.parse_args()
    if bound(args.port):
        sys.exit(f"port {args.port} is in use: choose another with --port")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as db, tempfile.TemporaryDirectory() as folder:
        os.environ.update(FIFTYONE_DATABASE_DIR=db, FIFTYONE_DO_NOT_TRACK="true", FIFTYONE_DATABASE_VALIDATION="false")
        subprocess.run([sys.executable, "fiftyone_layer/demo.py", "run", "--folder", folder], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)
        rows = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu",
                                                                             "--disable-dev-shm-usage"])
            for _ in range(args.trials):
                rows.append(trial(browser, args.port, Path(folder) / "app.log"))
                print(json.dumps(rows[-1]), flush=True)
                time.sleep(2)
            browser.close()
    for key in ("port_free_s", "app_exit_s"):
        values = [r[key] for r in rows if r[key] is not None]
        if values:
            print(f"{key}: median {statistics.median(values):.2f}, range {min(values):.2f}-{max(values):.2f} "
                  f"({len(values)} of {len(rows)} trials)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
