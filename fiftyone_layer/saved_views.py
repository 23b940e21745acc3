"""Saved views a run makes: save one (never over a view the run did not make), and show it in the App.

Used by ``browse_disagreements`` and ``tag_for_review``; the view is recorded in the run's
config (``views``) so that deleting the run deletes it (fiftyone_layer/run_store.py).
"""

from __future__ import annotations

import time

from . import run_store

APP_RELOAD_S = 1.5  # time the App gets to reload its list of saved views before one is selected


def save_run_view(dataset, run_key: str, name: str, view, description=None, param: str = "view_name") -> None:
    """Save ``view`` as ``name`` for run ``run_key`` and record it on the run; a saved view of that
    name that the run did not make is refused (:class:`SetupError` on ``param``)."""
    run_store.check_view_free(dataset, run_key, name, param)
    dataset.save_view(name, view, description=description, overwrite=True)
    run_store.record_view(dataset, run_key, name)


def select_saved_view(ctx, name: str):
    """App operations (``yield from``) that select the saved view ``name`` just saved.

    FiftyOne 1.22's App finds a saved view by name only in the list it loaded with the data set
    (its own save_view operator has the same "@todo"): reload it, give the App a moment to fetch
    the list, then select the view by name. Nothing for delegated runs (no App)."""
    if ctx.delegated:
        return
    yield ctx.ops.reload_dataset()
    time.sleep(APP_RELOAD_S)
    yield ctx.ops.set_view(name=name)
