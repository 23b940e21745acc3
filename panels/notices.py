"""The scheduled-run notice of every KaLOS panel: a run scheduled for a worker (delegated) says
when it is done, and its fields appear without reloading the App.

A delegated run cannot reach the App in FiftyOne 1.22 (:mod:`fiftyone_layer.scheduled`), so the
panel asks on every load, and every :data:`POLL_MS` while one of the plugin's runs on this
dataset waits or runs (a ``TimerView``, shown only then): a run that ended since the dataset last
heard of one is announced (in the panel, and a toast), and the App reloads the dataset so that
its new fields show in the sidebar. "Last heard" is kept per dataset in the panels' store
(:mod:`panels.chrome`); the first time, runs that ended in the last :data:`RECENT` count.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from fiftyone.operators import types

from ..fiftyone_layer.scheduled import clock, scheduled_runs
from . import chrome

SEEN = "scheduled_runs"   # the panels' store entry: {"until": ISO time of the last announced end}
POLL_MS = 5000
RECENT = timedelta(hours=1)
MAX_LISTED = 3


def _listed(runs) -> str:
    names = [r.describe() for r in runs[:MAX_LISTED]]
    more = len(runs) - MAX_LISTED
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def ended_md(runs) -> str:
    """The notice about scheduled runs that ended (completed first, then failed)."""
    done = [r for r in runs if r.state == "completed"]
    failed = [r for r in runs if r.state != "completed"]
    lines = []
    if done:
        lines.append(f"**Scheduled run finished**: {_listed(done)} at {clock(done[-1].ended_at)}; "
                     "its fields are loaded (sidebar), its results are in this panel.")
    if failed:
        lines.append(f"**Scheduled run failed**: {_listed(failed)} at {clock(failed[-1].ended_at)}; "
                     f"`fiftyone delegated info {failed[-1].id}` says why.")
    return "\n\n".join(lines)


def pending_md(runs) -> str:
    n = len(runs)
    return (f"{n} scheduled KaLOS run{'' if n == 1 else 's'} waiting or running: {_listed(runs)} "
            f"(queued {clock(runs[0].queued_at)}). This panel says when it is done.")


def check(ctx) -> bool:
    """Look at the dataset's scheduled KaLOS runs: ``ctx.panel.state.scheduled_pending`` (the
    waiting / running ones), and for runs that ended since last heard ``scheduled_notice``, a
    toast and a dataset reload. True when a run ended (the caller reloads its run)."""
    try:
        runs = scheduled_runs(ctx.dataset.name)
    except Exception:   # no delegated-operation store (e.g. a read-only database): no notice
        return False
    pending = [r for r in runs if r.pending]
    ctx.panel.state.scheduled_pending = pending_md(pending) if pending else None
    heard = chrome.remembered(ctx, SEEN).get("until")
    since = datetime.fromisoformat(heard) if heard else datetime.now(timezone.utc).replace(tzinfo=None) - RECENT   # the store's naive UTC
    ended = [r for r in runs if not r.pending and r.ended_at and r.ended_at > since]
    if not ended:
        return False
    chrome.remember(ctx, SEEN, until=max(r.ended_at for r in ended).isoformat())
    ctx.panel.state.scheduled_notice = ended_md(ended)
    ctx.ops.notify(ended_md(ended).replace("**", ""), variant="success")
    ctx.ops.reload_dataset()
    return True


def render(panel, ctx, on_interval, on_dismiss) -> None:
    """At the top of the panel: the runs that ended (with Dismiss), and those still waiting or
    running, with the timer that calls ``on_interval`` every :data:`POLL_MS` ms (only then)."""
    if ctx.panel.state.scheduled_notice:
        bar = panel.h_stack("scheduled_bar", align_y="center", gap=1)
        bar.md(ctx.panel.state.scheduled_notice, name="scheduled_notice")
        bar.btn("dismiss_notice", label="Dismiss", icon="close", on_click=on_dismiss)
    if ctx.panel.state.scheduled_pending:
        panel.md(ctx.panel.state.scheduled_pending, name="scheduled_pending")
        panel.view("scheduled_timer", types.TimerView(interval=POLL_MS, on_interval=on_interval))
