"""The panels' state, kept by the server (docs/panels.md, "How a panel's state travels").

The App saves every change of a panel's *state* into its spaces, and each save reloads the
dataset page and the grid; panel *data* is not saved there. So the handlers write
``ctx.panel.state`` as usual, :func:`panels.chrome.batched_patches` sends it to the App as data,
and the state itself is kept here: one document per panel instance in FiftyOne's execution
store collection (the fields ``ctx.store`` writes, expiring after :data:`TTL`), so that every
App server process (several workers, or the server after a restart) reads the same state. Where
none is kept (closed, expired), the panel loads again from its run (``RunPanel.execute``).

**The App's own copy.** When the user changes an input, the App's panel form writes everything
it shows, state and data alike, into the panel's state, and the App draws the lodash ``merge``
of state and data, which merges lists index by index: a longer stale list in the state shows
through a shorter new one in the data (class difficulty drew 4 bars, not 1, after a search).
So the App's copy of any key the server owns is ignored (:func:`restore`) and set to None in
the App (:func:`stale`), in the one state patch of that event.

**One event at a time.** The App sends a panel's event without waiting for the answer to the
previous one (Top N typed just after the search was cleared), and FiftyOne runs them in threads
at once: both would read the kept state before either wrote it, and the later write would bring
the older values back (the cleared search). So one panel instance's events run one after the
other in a server process, in the order they reached it (:func:`one_at_a_time`): typed text
sends an event per keystroke ("c", "ci", "cir", "circ"), and a plain lock lets waiting events in
in any order, so the panel could end on "cir" while the box shows "circ".
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

STORE = "kalos_panel_state"
#: a panel instance's kept state is dropped this long after its last event
TTL = timedelta(days=1)
#: state keys written to the App's panel state (saved in its spaces, so they outlive the kept
#: state): the user's own grid before the first click
APP_STATE = ("before",)
_indexed = False


class Turns:
    """A lock that lets its waiting threads in in the order they asked (``threading.Lock`` lets
    any one in): each takes a ticket and waits until the tickets before it are served."""

    def __init__(self):
        self._cond = threading.Condition()
        self.taken = 0      #: tickets given out
        self._served = 0    #: tickets done

    def __enter__(self):
        with self._cond:
            ticket, self.taken = self.taken, self.taken + 1
            self._cond.wait_for(lambda: self._served == ticket)
        return self

    def __exit__(self, *exc):
        with self._cond:
            self._served += 1
            self._cond.notify_all()


#: turns of the panel instances' events (a fixed set: two instances may share one, which only
#: makes one wait for the other's event)
_TURNS = tuple(Turns() for _ in range(64))


def _collection():
    import fiftyone.core.odm as fodm
    from fiftyone.factory.repos.execution_store import MongoExecutionStoreRepo

    global _indexed
    coll = fodm.get_db_conn()[MongoExecutionStoreRepo.COLLECTION_NAME]
    if not _indexed:   # the index FiftyOne's store service creates: expired documents go
        coll.create_index("expires_at", name="expires_at", expireAfterSeconds=0)
        _indexed = True
    return coll


def _query(ctx, panel: str) -> dict:
    return {"store_name": STORE, "key": f"{panel}:{ctx.params.get('panel_id')}", "dataset_id": ctx.dataset._doc.id}


def one_at_a_time(ctx, panel: str) -> Turns:
    """The lock that runs this panel instance's events one after the other, in the order they
    came (``with``; taken before the event loads the dataset, whose time varies)."""
    return _TURNS[hash(f"{panel}:{ctx.params.get('panel_id')}") % len(_TURNS)]


def load(ctx, panel: str) -> dict | None:
    """``{"state": ..., "owned": [...]}`` kept for this panel instance, None when none is."""
    doc = _collection().find_one(_query(ctx, panel), {"value": 1})
    return json.loads(doc["value"]) if doc and doc.get("value") else None


def restore(ctx, panel: str) -> dict | None:
    """Put the kept state in place of the App's copy of every key the server owns (the App's
    forms write what they show into the state, so its copy may be stale; a changed input's
    value comes with the event's params, which the handlers read); the App's other keys stay.
    Returns what was kept, None when nothing was (the caller loads the panel again)."""
    kept = load(ctx, panel)
    if kept is None:
        return None
    owned = set(kept["owned"]) - set(APP_STATE)
    app = ctx.panel.state._data or {}
    ctx.panel.state._data = {**{k: v for k, v in app.items() if k not in owned}, **kept["state"]}
    return kept


def save(ctx, panel: str, state_keys, owned) -> None:
    """Keep the panel's state (its keys ``state_keys``, less :data:`APP_STATE`) as this event left
    it, and ``owned``: every top-level key the server has sent the App as data."""
    state = ctx.panel.state._data or {}
    value = {"state": {k: state[k] for k in state_keys if k in state and k not in APP_STATE},
             "owned": sorted(set(owned))}
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    _collection().update_one(_query(ctx, panel), {
        "$set": {"value": json.dumps(value), "updated_at": now, "expires_at": now + TTL, "policy": "evict"},
        "$setOnInsert": {"created_at": now}}, upsert=True)


def forget(ctx, panel: str) -> None:
    """Drop the kept state of a closed panel."""
    _collection().delete_one(_query(ctx, panel))


def stale(app_state: dict, owned) -> dict:
    """The state patch that empties the App's copies of keys the server owns (None: the App's
    merge then shows the data's value)."""
    return {k: None for k, v in (app_state or {}).items() if k in owned and k not in APP_STATE and v is not None}
