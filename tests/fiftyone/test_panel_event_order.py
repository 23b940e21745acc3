"""A panel's events run one at a time in the order they came (panels/kept.py): typed text sends
one event per keystroke, and the panel must end on what the box shows."""

import threading
import time
from types import SimpleNamespace

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset


def _wait_until(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_turns_let_waiting_threads_in_in_the_order_they_asked():
    from fiftyone.plugins.orgs.kalos.agreement.panels.kept import Turns

    turns, order = Turns(), []

    def enter(i):
        with turns:
            order.append(i)

    with turns:   # held: every thread below waits, each one asking after the one before
        threads = []
        for i in range(12):
            threads.append(threading.Thread(target=enter, args=(i,)))
            threads[-1].start()
            _wait_until(lambda: turns.taken == i + 2)
    for t in threads:
        t.join(10)
    assert order == list(range(12))


@pytest.fixture
def classes_panel(fo_isolated, demo):  # noqa: F811
    ds = agreement_dataset(fo_isolated, demo, "rater_fields")
    return ds, Panel(ds, "kalos_class_difficulty").call("on_load")


def test_keystroke_events_that_wait_run_in_the_order_typed(classes_panel):
    """"c", "ci", "cir", "circ" sent while an earlier event of the panel still runs: the kept
    search and the summary end on the last keystroke's value."""
    import json

    import fiftyone.operators as foo
    from fiftyone.plugins.orgs.kalos.agreement.panels import kept

    ds, p = classes_panel
    names = p.state["classes"][0]["y"]
    word = next(c for c in names if len(c) >= 4)[:4]
    name = p.uri.rsplit("/", 1)[1]
    turns = kept.one_at_a_time(SimpleNamespace(params={"panel_id": p.panel_id}), name)
    answers = {}

    def send(value):
        res = foo.execute_operator(p.uri, dataset=ds.name, params={
            "panel_id": p.panel_id, "__method__": "on_change_search", "panel_state": json.loads(json.dumps(p.app)),
            "value": value})
        answers[value] = res.executor.to_json()["requests"]

    with turns:   # an earlier event still running: the keystrokes queue behind it
        start = turns.taken
        threads = []
        for n in range(1, len(word) + 1):
            threads.append(threading.Thread(target=send, args=(word[:n],)))
            threads[-1].start()
            _wait_until(lambda: turns.taken == start + n)
    for t in threads:
        t.join(60)
    state = kept.load(SimpleNamespace(params={"panel_id": p.panel_id}, dataset=ds), name)["state"]
    assert state["search"] == word
    assert f"match “{word}”" in state["summary"], state["summary"]
    assert set(answers) == {word[:n] for n in range(1, len(word) + 1)}
