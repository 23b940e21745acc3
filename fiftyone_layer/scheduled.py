"""Scheduled (delegated) KaLOS runs of a dataset, for the panels' notice (:mod:`panels.notices`).

FiftyOne 1.22 gives a delegated run no way to reach the App: in a worker ``ctx.trigger`` /
``ctx.ops`` (``reload_dataset``, ``notify``) go to a local executor and are dropped, and the
open-source App does not watch the delegated-operation store. So the panels ask that store:
which KaLOS runs of the dataset are waiting or running, and which ended (completed or failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

PLUGIN_PREFIX = "@kalos/agreement/"
PENDING = ("scheduled", "queued", "running", "processing")
ENDED = ("completed", "failed")


@dataclass(frozen=True)
class ScheduledRun:
    """One delegated operation of the plugin: its id, operator name (without the plugin's
    prefix), state, the run key it was given (None when its form has none) and when it was
    queued / ended."""

    id: str
    operator: str
    state: str
    run_key: str | None
    queued_at: datetime | None
    ended_at: datetime | None

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    def describe(self) -> str:
        key = f" (run key **{self.run_key}**)" if self.run_key else ""
        return f"{self.operator}{key}"


#: the fields of a delegated operation the notice needs (not its whole context and result)
_FIELDS = ("operator", "run_state", "queued_at", "completed_at", "failed_at", "context.request_params.params.run_key")


def _of(doc: dict) -> ScheduledRun:
    params = ((doc.get("context") or {}).get("request_params") or {}).get("params") or {}
    key = params.get("run_key")
    return ScheduledRun(str(doc["_id"]), str(doc.get("operator", "")).removeprefix(PLUGIN_PREFIX),
                        str(doc.get("run_state")), key if isinstance(key, str) else None, doc.get("queued_at"),
                        doc.get("completed_at") or doc.get("failed_at"))


def scheduled_runs(dataset_name: str) -> list[ScheduledRun]:
    """The plugin's delegated operations on ``dataset_name``, oldest first: one query on FiftyOne's
    store of them, for the few fields the notice shows. (``DelegatedOperationService()`` checks
    the store's indexes each time it is built: 1.3 s of the first panel open on a busy machine.)"""
    import fiftyone.core.odm as foo
    from fiftyone.factory.repos.delegated_operation import MongoDelegatedOperationRepo

    coll = foo.get_db_conn()[MongoDelegatedOperationRepo.COLLECTION_NAME]
    query = {"context.request_params.dataset_name": dataset_name, "operator": {"$regex": f"^{PLUGIN_PREFIX}"},
             "archived": {"$ne": True}}
    docs = coll.find(query, dict.fromkeys(_FIELDS, 1)).sort("queued_at", 1)
    return [_of(d) for d in docs]


def clock(t: datetime | None) -> str:
    """``09:41 UTC`` (the store keeps UTC times)."""
    return t.strftime("%H:%M UTC") if t else "?"
