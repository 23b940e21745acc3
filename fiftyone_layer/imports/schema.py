"""The FiftyOne side of an import: the label fields' names and schema, the label documents
(boxes, masks cropped to the box, polylines, keypoints) and the sample fields, and the checks
that keep an import from touching what the user already has (reserved names, fields of
another type, images imported before). Used by :mod:`.coco` (multi-rater COCO, per-rater
YOLO) and :mod:`.rater_exports` (one export per rater).
"""

from __future__ import annotations

import copy
import logging
import math

import fiftyone as fo
import fiftyone.core.odm as foo_odm
from pycocotools import mask as mask_utils

from .. import rawdocs, writeback
from ..names import FIELD_NAME_RE, safe_name
from .errors import ImportRefused

logger = logging.getLogger(__name__)

LAYOUTS = ("rater_fields", "rater_attribute")
ON_EXISTING = ("error", "skip")  # images of the file already in the dataset (same coco_id / yolo_stem)
LABEL_TYPES = ("detections", "segmentations", "keypoints")
#: most raters the one-field-per-rater layout accepts (import of 200 raters x 10 images: ~7 s)
MAX_RATER_FIELDS = 200
TASK = {"detections": "bbox", "segmentations": "segm", "keypoints": "keypoints"}
RESERVED = {"id", "filepath", "tags", "metadata", "coco_id", "yolo_stem", "rater_list", "rater_categories"}

def list_class(ltype, use_polylines):
    if ltype == "segmentations" and use_polylines:
        return fo.Polylines, "polylines"
    return (fo.Keypoints, "keypoints") if ltype == "keypoints" else (fo.Detections, "detections")


def check_options(layout, label_field, label_types, rater_attribute):
    label_types = [label_types] if isinstance(label_types, str) else list(dict.fromkeys(label_types or ()))
    if layout not in LAYOUTS:
        raise ImportRefused(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not label_types or any(t not in LABEL_TYPES for t in label_types):
        raise ImportRefused(f"label_types must be a non-empty subset of {LABEL_TYPES}, got {label_types!r}")
    for what, name in (("label_field", label_field), ("rater_attribute", rater_attribute)):
        if not isinstance(name, str) or not FIELD_NAME_RE.match(name):
            raise ImportRefused(f"{what} must start with a letter and hold only letters, digits and _: {name!r}")
    return label_types


def field_names(info, label_field, label_types, layout, raters):
    """{label type: {rater: field}} (rater_fields) or {label type: field} (rater_attribute)."""
    known = info.get("kalos_import", {}).get("rater_fields", {})  # earlier imports: same names
    plan = {}
    for t in label_types:
        prefix = f"{label_field}_{t}" if len(label_types) > 1 else label_field
        if layout == "rater_attribute":
            plan[t] = prefix
            continue
        plan[t], taken = {}, {}
        for r in raters:
            name = base = f"{prefix}_{safe_name(r)}"
            k = 1
            while taken.get(name, known.get(name, r)) != r:  # owned by another rater: next suffix
                k += 1
                name = f"{base}_{k}"
            taken[name], plan[t][r] = r, name
    for f in (f for names in plan.values() for f in (names.values() if isinstance(names, dict) else [names])):
        if f in RESERVED:
            raise ImportRefused(f"field name {f!r} is reserved; choose another label_field")
    return plan


def plan_classes(plan, label_types, use_polylines) -> dict:
    """``{field: label list class}`` of a :func:`field_names` plan."""
    fields = {}
    for t in label_types:
        cls = list_class(t, use_polylines)[0]
        fields.update((f, cls) for f in (plan[t].values() if isinstance(plan[t], dict) else [plan[t]]))
    return fields


def prepare_schema(dataset, plan, label_types, use_polylines):
    return declare_label_fields(dataset, plan_classes(plan, label_types, use_polylines))


def check_label_fields(dataset, fields: dict) -> None:
    """Refuse when a field of ``{field: label list class}`` exists in ``dataset`` holding another type."""
    for f, cls in fields.items():
        have = dataset.get_field(f) if dataset.has_sample_field(f) else None
        if have is not None and getattr(have, "document_type", None) is not cls:
            held = getattr(have, "document_type", None) or type(have)
            raise ImportRefused(f"field {f!r} of dataset {dataset.name!r} holds {held.__name__}, not the "
                                f"{cls.__name__} the import writes", fix="choose another label_field, or import "
                                "into a new dataset")


def declare_label_fields(dataset, fields: dict) -> list:
    """Declare ``{field: label list class}`` all at once, after checking that no field holds another type."""
    check_label_fields(dataset, fields)
    writeback.declare_schema(dataset, {f: fo.EmbeddedDocumentField(cls) for f, cls in fields.items()})
    return list(fields)


def _mask(geometry, bbox, width, height):
    """Bool mask of a polygon list or RLE, cropped to ``bbox`` (FiftyOne's convention)."""
    if isinstance(geometry, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(geometry, height, width))
    elif isinstance(geometry["counts"], list):
        rle = mask_utils.frPyObjects(geometry, *geometry["size"])
    else:
        rle = geometry
    full = mask_utils.decode(rle).astype(bool)
    if bbox is None:
        bbox = tuple(float(v) for v in mask_utils.toBbox(rle))
    x, y, w, h = bbox
    x0, y0 = round(x), round(y)
    return full[y0:max(round(y + h), y0 + 1), x0:max(round(x + w), x0 + 1)], bbox


def _mask_label(ann, w, h, attrs, use_polylines):
    """A segmentation as FiftyOne stores it: a Detection with a mask cropped to its box, or
    (``use_polylines``, RLE input) the mask's traced outline."""
    mask, (x, y, bw, bh) = _mask(ann.geometry, ann.bbox, round(w), round(h))
    det = fo.Detection(bounding_box=[x / w, y / h, bw / w, bh / h], mask=mask, **attrs)
    return det.to_polyline(tolerance=1, filled=False) if use_polylines else det


def to_doc(ltype, ann, w, h, label, attrs, use_polylines):
    """One engine Annotation -> the label document FiftyOne would store (see fiftyone_layer/rawdocs.py)."""
    if ltype == "detections":
        x, y, bw, bh = ann.geometry
        return rawdocs.detection(label, (x / w, y / h, bw / w, bh / h), attrs)
    if ltype == "keypoints":
        g = ann.geometry
        pts = [(g[i] / w, g[i + 1] / h) if g[i + 2] > 0 else (math.nan, math.nan) for i in range(0, len(g), 3)]
        return rawdocs.keypoint(label, pts, g[2::3], attrs)
    if use_polylines and isinstance(ann.geometry, list):
        rings = [[(r[i] / w, r[i + 1] / h) for i in range(0, len(r), 2)] for r in ann.geometry]
        return rawdocs.polyline(label, rings, attrs)
    return rawdocs.from_label(_mask_label(ann, w, h, {"label": label, **attrs}, use_polylines))


def declare_label_attributes(dataset, fields, id_types, scan_all=False):
    """Declare the labels' dynamic attributes (rater, annotation id, keypoint visibility, ...) of
    every field at once.

    All fields of one label class are written by the same code, so the dynamic schema of one
    field of each class, found by FiftyOne's own inference, holds for the others: one schema scan
    per class and one save, instead of ``add_dynamic_sample_fields`` over every field (minutes with
    hundreds of rater fields). Annotation ids of mixed types, and labels with attributes of their own
    (``scan_all``), fall back to the full scan.
    """
    if len(id_types) > 1 or scan_all:
        dataset.add_dynamic_sample_fields(fields=fields)
        return
    by_class: dict = {}
    for f in fields:
        by_class.setdefault(dataset.get_field(f).document_type, []).append(f)
    schema = {}
    for same in by_class.values():
        first = same[0]
        for path, field in dataset.get_dynamic_field_schema(fields=[first]).items():
            if isinstance(field, list):   # mixed types: let FiftyOne decide field by field
                dataset.add_dynamic_sample_fields(fields=same)
                break
            for f in same:
                schema[f + path[len(first):]] = copy.deepcopy(field)
    writeback.declare_schema(dataset, schema)


def plain_values(im, id_field, categories) -> dict:
    """The plain sample fields of one image: ``rater_list``, its id, ``rater_categories`` if any."""
    values = {"rater_list": list(im.raters), id_field: im.id}
    if im.rater_classes:
        values["rater_categories"] = {r: sorted(categories.get(c, str(c)) for c in cs)
                                      for r, cs in im.rater_classes.items()}
    return values


def declare_plain(dataset, docs):
    """Declare the plain sample fields of a batch (first non-None value of each)."""
    examples = {}
    for doc in docs:
        for key in ("rater_list", "coco_id", "yolo_stem", "rater_categories"):
            if key in doc and key not in examples:
                examples[key] = doc[key]
    rawdocs.declare(dataset, examples)


def check_plain_fields(dataset, images, id_field):
    """The dataset's ``rater_list`` / id / ``rater_categories`` fields must hold what the import writes
    (a list of names into a string field would leave a dataset that no longer loads)."""
    im = images[0]
    examples = {"rater_list": list(im.raters), id_field: im.id,
                "rater_categories": {"r": ["c"]} if any(i.rater_classes for i in images) else None}
    for name, value in examples.items():
        if value is None or not dataset.has_sample_field(name):
            continue
        have, want = dataset.get_field(name), foo_odm.get_implied_field_kwargs(value)
        sub, want_sub = getattr(have, "field", None), want.get("subfield")
        if type(have) is not want["ftype"] or (want_sub and sub is not None and not isinstance(sub, want_sub)):
            held = type(have).__name__ + (f"({type(sub).__name__})" if sub is not None else "")
            writes = want["ftype"].__name__ + (f"({want_sub.__name__})" if want_sub else "")
            raise ImportRefused(f"field {name!r} of dataset {dataset.name!r} holds {held}, but the import writes "
                             f"{writes}: import into a new dataset, or rename that field first")


def already_imported(dataset, images, id_field, on_existing):
    """Images of the file whose ``id_field`` is already in the dataset: an error (``on_existing="error"``)
    or left out (``"skip"``); returns the images to import."""
    if on_existing not in ON_EXISTING:
        raise ImportRefused(f"on_existing must be one of {ON_EXISTING}, got {on_existing!r}")
    if not dataset.has_sample_field(id_field):
        return images
    have = set(dataset.distinct(id_field))
    seen = [im.id for im in images if im.id in have]
    if seen and on_existing == "error":
        raise ImportRefused(f"{len(seen)} of the file's {len(images)} images are already in dataset {dataset.name!r} "
                         f"({id_field} {seen[:10]}{' ...' if len(seen) > 10 else ''}): importing them again would "
                         "duplicate them. Choose on_existing='skip' to import only the other images, or import "
                         "into a new dataset")
    return [im for im in images if im.id not in have]


def check_shared(keys: dict, fix: str = "match by 'stem' or 'path' if the names differ only in extension or "
                 "folder, or give the exports of the same images") -> None:
    """Every rater's images (``{rater: set of image keys}``) share one with another rater's: an export
    matching nothing (file names that differ, another key needed) is refused, as a CVAT project
    export's task is."""
    if len(keys) < 2:
        return
    for r, own in keys.items():
        if own and not any(own & other for o, other in keys.items() if o != r):
            example = sorted(own)[:3]
            others = sorted(k for o, other in keys.items() if o != r for k in other)[:3]
            raise ImportRefused(f"the export of rater {r!r} shares no image with the other raters' exports (its images "
                                f"{example}, theirs {others}): they would be imported as one rater per image, with "
                                "no agreement to measure", fix=fix)
