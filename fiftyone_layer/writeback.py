"""Write a run's results onto the samples and labels: one bulk request for everything.

Per sample: ``<run_key>_alpha`` and ``<run_key>_statuses`` (the sorted statuses its rater
labels got: one sidebar filter over every rater field); per rater label: ``<run_key>_unit``
(``"<sample id>:<n>"``, unique over the dataset: what filters and later runs read),
``<run_key>_unit_no`` (that ``n``: the unit's number within its image, the readable one in the
App's label tooltips) and ``<run_key>_status`` (``agreed`` / ``class_disagreement`` / ``unmatched``).

FiftyOne's ``set_values`` on a label attribute sends one update per *label*
(291k labels x 2 attributes took 29 s on 5,000 samples). Here every processed
sample gets one ``UpdateOne`` that sets its α and the unit and status of all
its rater labels at once, addressed by position in the label list, so the
whole run is ~one update per sample (5,000 updates, a few seconds).

Positions are read from the stored documents (not from the view), so a view
that filters labels still writes to the right labels; labels the run did not
see (filtered out, or added after the read) get no attribute.
"""

from __future__ import annotations

from datetime import datetime, timezone

import fiftyone as fo
import fiftyone.core.odm as foo
from bson import ObjectId
from pymongo import UpdateOne

BATCH = 1000  # samples per bulk request


def declare_schema(dataset, schema: dict) -> None:
    """Declare many fields at once: ``schema`` maps a field name or ``embedded.path`` to a
    ``fo.Field`` instance. Existing fields are left as they are.

    One schema merge and one dataset reload for the lot (what ``add_samples`` does
    internally); ``add_sample_field`` per field reloads the dataset each time, so
    declaring one field per rater would cost time quadratic in the rater count.
    """
    missing = {path: field for path, field in schema.items() if not dataset.has_field(path)}
    if missing:
        dataset._merge_sample_field_schema(missing)


def declare_fields(dataset, run_key: str, fields: list[str], list_name: str) -> None:
    """Declare the run's fields in the schema (the App filters on declared fields only), in one merge."""
    schema = {f"{run_key}_alpha": fo.FloatField(description=f"KaLOS per-sample alpha of run {run_key!r}"),
              f"{run_key}_statuses": fo.ListField(fo.StringField(), description=(
                  f"KaLOS: the statuses of this sample's rater labels in run {run_key!r} (one filter for all fields)"))}
    for f in fields:
        for attr in (f"{run_key}_unit", f"{run_key}_status"):
            schema[f"{f}.{list_name}.{attr}"] = fo.StringField()
        schema[f"{f}.{list_name}.{run_key}_unit_no"] = fo.IntField()
    declare_schema(dataset, schema)


def sample_updates(docs, run_key: str, fields: list[str], list_name: str,
                   alpha: dict, unit_of: dict, status_of: dict, now) -> list[UpdateOne]:
    """One ``UpdateOne`` per stored sample document (``_id`` + the rater fields' label ids)."""
    unit_attr, status_attr, no_attr = f"{run_key}_unit", f"{run_key}_status", f"{run_key}_unit_no"
    ops = []
    for doc in docs:
        sets = {"last_modified_at": now}
        a = alpha.get(str(doc["_id"]))
        if a is not None:
            sets[f"{run_key}_alpha"] = a
        present = set()
        for f in fields:
            labels = (doc.get(f) or {}).get(list_name) or []
            for j, label in enumerate(labels):
                lid = str(label.get("_id"))
                unit = unit_of.get(lid)
                if unit is not None:
                    sets[f"{f}.{list_name}.{j}.{unit_attr}"] = unit
                    sets[f"{f}.{list_name}.{j}.{no_attr}"] = unit_number(unit)
                    sets[f"{f}.{list_name}.{j}.{status_attr}"] = status_of.get(lid)
                    present.add(status_of.get(lid))
        sets[f"{run_key}_statuses"] = sorted(s for s in present if s is not None)
        ops.append(UpdateOne({"_id": doc["_id"]}, {"$set": sets}))
    return ops


def unit_number(unit: str) -> int | None:
    """The image-local number of a unit id ``"<image id>:<n>"`` (None when it has no such tail)."""
    tail = str(unit).rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def _samples(dataset):
    """The dataset's sample collection and the write time (``last_modified_at``: naive UTC, as FiftyOne stores it)."""
    return foo.get_db_conn()[dataset._sample_collection_name], datetime.now(timezone.utc).replace(tzinfo=None)


def write_results(collection, source, run_key: str, result) -> None:
    """Per-sample α and per-label unit/status of ``result``, one bulk request per 1,000 samples."""
    dataset = collection._dataset
    declare_fields(dataset, run_key, source.fields, source.list_name)
    alpha = {sid: float(a) for sid, a in result.per_image_alpha.items()}
    unit_of, status_of = result.unit_of, result.status_of
    coll, now = _samples(dataset)
    projection = {f"{f}.{source.list_name}._id": 1 for f in source.fields}
    ids = [ObjectId(s) for s in alpha]
    for start in range(0, len(ids), BATCH):
        docs = coll.find({"_id": {"$in": ids[start:start + BATCH]}}, projection)
        ops = sample_updates(docs, run_key, source.fields, source.list_name, alpha, unit_of, status_of, now)
        if ops:
            coll.bulk_write(ops, ordered=False)
    dataset.create_index(f"{run_key}_alpha")


def write_sample_fields(dataset, values: dict, schema: dict) -> None:
    """Whole sample fields by sample id, one bulk request per 1,000 samples: ``values``: sample id
    -> {field: its stored document}; ``schema``: field -> ``fo.Field``, declared first. In-memory
    samples of those ids are reloaded (as ``set_values`` does)."""
    declare_schema(dataset, schema)
    coll, now = _samples(dataset)
    ops = [UpdateOne({"_id": ObjectId(sid)}, {"$set": {**fields, "last_modified_at": now}})
           for sid, fields in values.items()]
    for start in range(0, len(ops), BATCH):
        coll.bulk_write(ops[start:start + BATCH], ordered=False)
    fo.Sample._reload_docs(dataset._sample_collection_name, sample_ids=list(values))


def write_label_values(collection, fields: list[str], list_name: str, values: dict, schema: dict) -> None:
    """Per-label attributes by label id, one bulk request per 1,000 samples.

    ``values``: attribute -> {label id -> value}; ``schema``: attribute -> ``fo.Field`` (declared
    on every field's labels first, so the App can filter on them). Labels without a value get
    no attribute."""
    dataset = collection._dataset
    declare_schema(dataset, {f"{f}.{list_name}.{a}": field for f in fields for a, field in schema.items()})
    coll, now = _samples(dataset)
    projection = {f"{f}.{list_name}._id": 1 for f in fields}
    ids = [ObjectId(s) for s in collection.values("id")]
    for start in range(0, len(ids), BATCH):
        ops = []
        for doc in coll.find({"_id": {"$in": ids[start:start + BATCH]}}, projection):
            sets = {}
            for f in fields:
                for j, label in enumerate((doc.get(f) or {}).get(list_name) or []):
                    lid = str(label.get("_id"))
                    for attr, by_id in values.items():
                        if lid in by_id:
                            sets[f"{f}.{list_name}.{j}.{attr}"] = by_id[lid]
            if sets:
                sets["last_modified_at"] = now
                ops.append(UpdateOne({"_id": doc["_id"]}, {"$set": sets}))
        if ops:
            coll.bulk_write(ops, ordered=False)
