"""``make app`` (fiftyone_layer/demo.py ``app``) lets go of its port within seconds on a plain
``kill`` or Ctrl-C, with an App tab open."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

DEMO = Path(__file__).resolve().parents[2] / "fiftyone_layer" / "demo.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    """Something still listens on ``port``: a new App (which sets SO_REUSEADDR, as the server
    does) could not bind it. Binding, not connecting: a frozen server's backlog fills, and a
    connect would then hang."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


def _wait(cond, seconds: float) -> float | None:
    """Seconds until ``cond()`` held, or None if it did not within ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if cond():
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def _open_app_tab(port: int) -> socket.socket:
    """What an open App tab holds: the server-sent event stream (``POST /events``)."""
    body = b'{"initializer": null, "events": ["state_update"], "subscription": "test-tab"}'
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


def _server(pid: int) -> psutil.Process:
    """The App server (FiftyOne's ``server/main.py``) under the ``app`` process ``pid``."""
    kids = psutil.Process(pid).children(recursive=True)
    return next(p for p in kids if "--port" in p.cmdline() and "--51-service" not in p.cmdline())


# FiftyOne stops its server behind the App process's back: when that process exits, the
# server's watcher notices and shuts it down, gracefully, without a bound (open tabs keep it
# going); the port is free when the server has gone, not when `make app` returns
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_kill_releases_the_app_port_before_the_app_exits(fo_isolated, sig):
    name = f"app_port_{sig.name.lower()}"
    fo_isolated.Dataset(name, persistent=True)
    port, browser = _free_port(), None
    proc = subprocess.Popen([sys.executable, str(DEMO), "app", "--name", name, "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "FIFTYONE_DO_NOT_TRACK": "true"})
    server = None
    try:
        if _wait(lambda: _listening(port) or proc.poll() is not None, 60) is None or proc.poll() is not None:
            pytest.skip(f"the App server did not start: {proc.stderr.read().decode()[-300:] if proc.poll() else ''}")
        time.sleep(1)   # past launch_app's own start-up
        browser = _open_app_tab(port)
        server = _server(proc.pid)
        proc.send_signal(sig)
        # a hang check, not a speed target (the seconds it takes: benchmarks/app_exit.py)
        exited = _wait(lambda: proc.poll() is not None, 60)
        assert exited is not None, f"the App did not stop within 60 s of {sig.name}"
        assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE, "the server outlived the App"
        assert not _listening(port)
    finally:
        if browser is not None:
            browser.close()
        for p in ([server] if server is not None else []):
            if p.is_running():
                p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
