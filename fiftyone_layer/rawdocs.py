"""Sample documents built as plain dicts and inserted in bulk (the importer's fast path).

``Dataset.add_samples`` builds, validates and re-loads a mongoengine document for
every label: ~110 s for 5,000 images with 291k boxes, nearly all of it in the ORM.
The importer instead writes the documents FiftyOne itself would write (same keys,
same ``_cls`` tags, same defaults; ``tests/fiftyone/test_rawdocs.py`` compares them
with documents written by ``add_samples``) and declares the schema explicitly.
Instance masks are rare and complex (binary payloads), so those labels are still
serialised by FiftyOne's own classes.
"""

from __future__ import annotations

import random
from datetime import datetime

import fiftyone as fo
import fiftyone.core.odm as foo
import fiftyone.core.storage as fos
from bson import ObjectId

BATCH = 1000  # samples per insert_many
#: label-list class -> the name of its list attribute (``Detections.detections``, ...)
LIST_NAMES = {fo.Detections: "detections", fo.Polylines: "polylines", fo.Keypoints: "keypoints"}
_rand = random.Random()  # like FiftyOne: its own generator, never the user's seed


def list_name(label_type: str | None) -> str | None:
    """The list attribute of the label-list class named ``label_type`` (what a stored run records:
    ``"Detections"`` -> ``"detections"``); None for any other name."""
    return next((name for cls, name in LIST_NAMES.items() if cls.__name__ == label_type), None)


def detection(label: str, box, attrs: dict) -> dict:
    return {"_id": ObjectId(), "_cls": "Detection", "attributes": {}, "tags": [], "label": label,
            "bounding_box": [float(v) for v in box], **attrs}


def polyline(label: str, rings, attrs: dict) -> dict:
    return {"_id": ObjectId(), "_cls": "Polyline", "attributes": {}, "tags": [], "label": label,
            "points": [[[float(x), float(y)] for x, y in ring] for ring in rings],
            "closed": True, "filled": False, **attrs}


def keypoint(label: str, points, visible, attrs: dict) -> dict:
    return {"_id": ObjectId(), "_cls": "Keypoint", "attributes": {}, "tags": [], "label": label,
            "points": [[float(x), float(y)] for x, y in points], "visible": [int(v) for v in visible],
            "confidence": None, **attrs}


def from_label(label) -> dict:
    """A FiftyOne label object serialised as FiftyOne stores it (used for masks)."""
    return dict(label.to_mongo())


def label_list(list_cls, labels: list[dict]) -> dict:
    """``fo.Detections`` / ``fo.Polylines`` / ``fo.Keypoints`` document around label dicts."""
    list_name = LIST_NAMES[list_cls]
    return {"_cls": list_cls.__name__, list_name: labels}


def sample(filepath: str, fields: dict, width=None, height=None) -> dict:
    """One image sample document; ``fields`` maps field name -> value (None values are left out)."""
    doc = {"filepath": fos.normalize_path(filepath), "tags": [], "_media_type": "image",
           "_rand": _rand.random() * 0.001 + 0.999}
    if width and height:
        doc["metadata"] = {"_cls": "ImageMetadata", "width": round(width), "height": round(height)}
    doc.update((k, v) for k, v in fields.items() if v is not None)
    return doc


def declare(dataset, example_values: dict) -> None:
    """Declare plain top-level fields from an example value each (labels are declared by the caller)."""
    if dataset.media_type is None:
        dataset.media_type = "image"
    elif dataset.media_type != "image":
        raise ValueError(f"dataset {dataset.name!r} holds {dataset.media_type} samples, not images")
    for name, value in example_values.items():
        if value is not None and not dataset.has_sample_field(name):
            dataset.add_sample_field(name, **foo.get_implied_field_kwargs(value))  # as add_samples infers


def insert(dataset, docs: list[dict]) -> int:
    """Insert sample documents in batches of 1,000; returns how many were written."""
    coll = foo.get_db_conn()[dataset._sample_collection_name]
    now = datetime.utcnow()
    for doc in docs:
        doc["_dataset_id"] = dataset._doc.id
        doc["created_at"] = doc["last_modified_at"] = now
    for start in range(0, len(docs), BATCH):
        coll.insert_many(docs[start:start + BATCH], ordered=True)
    return len(docs)
