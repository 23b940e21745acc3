"""Import multi-rater COCO / per-rater YOLO labels into a FiftyOne dataset.

Python: :func:`import_multirater_coco`, :func:`import_multirater_yolo`; App: the
:class:`ImportMultiraterCoco` operator. ``kalos_core.io`` validates the file first: a bad
file fails (naming image/annotation/rater ids) before anything is written.

Samples (one per image): ``metadata`` (width/height from the json; image files are
optional), ``coco_id`` (``yolo_stem``), ``rater_list`` (assigned raters; rows such as
``"alice (S1)"`` for ``{rater: [sessions]}`` lists), ``rater_categories`` when given.

Label fields (``T`` label type, ``R`` rater name made field-safe, ``_2`` added on a clash):
``rater_fields``: ``<label_field>_R`` (one type) / ``<label_field>_T_R`` (several);
``rater_attribute``: ``<label_field>`` / ``<label_field>_T``. ``T``: ``detections``
(fo.Detections), ``segmentations`` (fo.Detections with a bool ``mask`` cropped to the box,
or fo.Polylines with ``use_polylines``), ``keypoints`` (fo.Keypoints; NaN points where v=0,
the v flags in ``visible``). Labels carry ``label`` (category name), the original rater
(row) name in ``rater_id`` (``rater_attribute``) and ``coco_annotation_id``
(``yolo_annotation_id``). rater_fields: an assigned rater who drew nothing has an *empty*
list, an unassigned one None. ``dataset.info["kalos_import"]`` keeps ``rater_fields``
(field -> rater) and ``attribute_fields`` (field -> rater attribute).
"""

from __future__ import annotations

import copy
import logging
import math
import os

import fiftyone as fo
import fiftyone.core.odm as foo_odm
import fiftyone.operators as foo
from fiftyone.operators import types
from pycocotools import mask as mask_utils

from kalos_core.io import InvalidInputError, load_coco, load_yolo
from kalos_core.io.jsonfile import read_json

from ..fiftyone_layer import rawdocs
from ..fiftyone_layer.placeholders import Placeholders, default_folder
from .common import (
    form, FIELD_NAME_RE, drive, form_error, progress_op, report_errors, run_steps, safe_name,
)
from .cards import show_card

logger = logging.getLogger(__name__)
LAYOUTS = ("rater_fields", "rater_attribute")
ON_EXISTING = ("error", "skip")  # images of the file already in the dataset (same coco_id / yolo_stem)
LABEL_TYPES = ("detections", "segmentations", "keypoints")
#: most raters the one-field-per-rater layout accepts (import of 200 raters x 10 images: ~7 s)
MAX_RATER_FIELDS = 200
_TASK = {"detections": "bbox", "segmentations": "segm", "keypoints": "keypoints"}
_RESERVED = {"id", "filepath", "tags", "metadata", "coco_id", "yolo_stem", "rater_list", "rater_categories"}
_PLACEHOLDER_DIR = os.path.join(os.sep, "__kalos_no_images__")
VALIDATE_MAX_BYTES = 50 * 2**20  # resolve_input validates files up to this size
_validated: dict = {}  # one-entry cache for resolve_input: key -> error message or None


def _list_class(ltype, use_polylines):
    if ltype == "segmentations" and use_polylines:
        return fo.Polylines, "polylines"
    return (fo.Keypoints, "keypoints") if ltype == "keypoints" else (fo.Detections, "detections")


def _check_options(layout, label_field, label_types, rater_attribute):
    label_types = [label_types] if isinstance(label_types, str) else list(dict.fromkeys(label_types or ()))
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not label_types or any(t not in LABEL_TYPES for t in label_types):
        raise ValueError(f"label_types must be a non-empty subset of {LABEL_TYPES}, got {label_types!r}")
    for what, name in (("label_field", label_field), ("rater_attribute", rater_attribute)):
        if not isinstance(name, str) or not FIELD_NAME_RE.match(name):
            raise ValueError(f"{what} must start with a letter and hold only letters, digits and _: {name!r}")
    return label_types


def _read_json(labels_path):
    if isinstance(labels_path, dict):
        return labels_path, "input"
    return read_json(labels_path), str(labels_path)   # deep / huge / not UTF-8: an error naming the file


def _validate_coco(raw, source, label_types, skip_invalid):
    """One engine data set per label type; raises InvalidInputError naming ``source``."""
    try:
        loaded = {t: load_coco(raw, _TASK[t], skip_invalid=skip_invalid) for t in label_types}
    except InvalidInputError as e:
        raise InvalidInputError(e.problems, source) from None
    sized = {im["id"]: im for im in raw["images"]}
    bad = [im.id for im in loaded[label_types[0]].images
           if not all(isinstance(sized[im.id].get(k), (int, float)) and sized[im.id][k] > 0
                      for k in ("width", "height"))]
    if bad:
        raise ValueError(f"{len(bad)} image(s) in {source} lack a positive width/height: ids {bad[:20]}")
    return loaded


def _field_names(info, label_field, label_types, layout, raters):
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
        if f in _RESERVED:
            raise ValueError(f"field name {f!r} is reserved; choose another label_field")
    return plan


def _prepare_schema(dataset, plan, label_types, use_polylines):
    fields = {}
    for t in label_types:
        cls = _list_class(t, use_polylines)[0]
        fields.update((f, cls) for f in (plan[t].values() if isinstance(plan[t], dict) else [plan[t]]))
    return declare_label_fields(dataset, fields)


def declare_label_fields(dataset, fields: dict) -> list:
    """Declare ``{field: label list class}`` all at once, after checking that no field holds another type."""
    for f, cls in fields.items():
        have = dataset.get_field(f) if dataset.has_sample_field(f) else None
        if have is not None and getattr(have, "document_type", None) is not cls:
            raise ValueError(f"field {f!r} exists and does not hold {cls.__name__}; choose another label_field")
    rawdocs.declare_schema(dataset, {f: fo.EmbeddedDocumentField(cls) for f, cls in fields.items()})
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


def _to_doc(ltype, ann, w, h, label, attrs, use_polylines):
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


def _declare_label_attributes(dataset, fields, id_types):
    """Declare the labels' dynamic attributes (rater, annotation id, keypoint visibility, ...) of
    every field at once.

    All fields of one label class are written by the same code, so the dynamic schema of one
    field of each class, found by FiftyOne's own inference, holds for the others: one schema scan
    per class and one save, instead of ``add_dynamic_sample_fields`` over every field (minutes with
    hundreds of rater fields). Annotation ids of mixed types fall back to the full scan.
    """
    if len(id_types) > 1:
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
    rawdocs.declare_schema(dataset, schema)


def _plain_values(im, id_field, categories) -> dict:
    """The plain sample fields of one image: ``rater_list``, its id, ``rater_categories`` if any."""
    values = {"rater_list": list(im.raters), id_field: im.id}
    if im.rater_classes:
        values["rater_categories"] = {r: sorted(categories.get(c, str(c)) for c in cs)
                                      for r, cs in im.rater_classes.items()}
    return values


def _declare_plain(dataset, docs):
    """Declare the plain sample fields of a batch (first non-None value of each)."""
    examples = {}
    for doc in docs:
        for key in ("rater_list", "coco_id", "yolo_stem", "rater_categories"):
            if key in doc and key not in examples:
                examples[key] = doc[key]
    rawdocs.declare(dataset, examples)


def _check_plain_fields(dataset, images, id_field):
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
            raise ValueError(f"field {name!r} of dataset {dataset.name!r} holds {held}, but the import writes "
                             f"{writes}: import into a new dataset, or rename that field first")


def _already_imported(dataset, images, id_field, on_existing):
    """Images of the file whose ``id_field`` is already in the dataset: an error (``on_existing="error"``)
    or left out (``"skip"``); returns the images to import."""
    if on_existing not in ON_EXISTING:
        raise ValueError(f"on_existing must be one of {ON_EXISTING}, got {on_existing!r}")
    if not dataset.has_sample_field(id_field):
        return images
    have = set(dataset.distinct(id_field))
    seen = [im.id for im in images if im.id in have]
    if seen and on_existing == "error":
        raise ValueError(f"{len(seen)} of the file's {len(images)} images are already in dataset {dataset.name!r} "
                         f"({id_field} {seen[:10]}{' ...' if len(seen) > 10 else ''}): importing them again would "
                         "duplicate them. Choose on_existing='skip' to import only the other images, or import "
                         "into a new dataset")
    return [im for im in images if im.id not in have]


def _import_steps(dataset_or_name, loaded, layout, label_field, rater_attribute, use_polylines,
                  filepath_of, id_field, ann_id_attr, sized=True, on_existing="error"):
    """Generator: yields (fraction, message); returns (dataset, n_samples, n_labels).

    Everything is checked before the first write: field names and types, images already imported."""
    label_types = list(loaded)
    first = loaded[label_types[0]]
    by_id = {t: {im.id: im for im in ds.images} for t, ds in loaded.items()}
    raters = list(dict.fromkeys(r for im in first.images for r in im.raters))
    if layout == "rater_fields" and len(raters) > MAX_RATER_FIELDS:
        raise ValueError(f"{len(raters)} raters: one label field per rater is limited to {MAX_RATER_FIELDS} (FiftyOne "
                         "saves its whole schema with every field, so a thousand fields take minutes to import and "
                         "fill the App's sidebar); import with layout 'rater_attribute' (one field, the rater on "
                         "each label), which takes seconds for any number of raters")
    dataset = dataset_or_name
    if isinstance(dataset, str) and fo.dataset_exists(dataset):
        dataset = fo.load_dataset(dataset)
    images = first.images
    if not isinstance(dataset, str) and images:
        _check_plain_fields(dataset, images, id_field)
        images = _already_imported(dataset, images, id_field, on_existing)
    plan = _field_names({} if isinstance(dataset, str) else dataset.info, label_field, label_types, layout, raters)
    dataset = fo.Dataset(dataset) if isinstance(dataset, str) else dataset  # nothing is created before this
    plain = [_plain_values(im, id_field, first.categories) for im in images]
    _declare_plain(dataset, plain)   # first, while the schema is small: each declaration saves the dataset
    fields = _prepare_schema(dataset, plan, label_types, use_polylines)
    batch, n_labels, n, done = [], 0, len(images), 0
    labelled, id_types = set(), set()   # fields that received labels; Python types of the annotation ids
    for k, im in enumerate(images):
        w, h = im.width, im.height
        values = dict(plain[k])
        for t in label_types:
            cls, _ = _list_class(t, use_polylines)
            per_rater = {r: [] for r in im.raters}
            for a in by_id[t][im.id].annotations:
                attrs = {rater_attribute: a.rater, ann_id_attr: a.id}
                label = first.categories.get(a.category, str(a.category))
                per_rater[a.rater].append(_to_doc(t, a, w, h, label, attrs, use_polylines))
                n_labels += 1
            id_types.update(type(a.id) for a in by_id[t][im.id].annotations)
            if layout == "rater_fields":
                for r, labels in per_rater.items():
                    values[plan[t][r]] = rawdocs.label_list(cls, labels)
                    labelled.update([plan[t][r]] if labels else [])
            else:
                values[plan[t]] = rawdocs.label_list(cls, [lab for labs in per_rater.values() for lab in labs])
                labelled.update([plan[t]] if any(per_rater.values()) else [])
        batch.append(rawdocs.sample(filepath_of(im), values, *((w, h) if sized else ())))
        if len(batch) == rawdocs.BATCH or k == n - 1:
            done += rawdocs.insert(dataset, batch)
            batch = []
            yield 0.1 + 0.85 * done / n, f"wrote {done}/{n} samples"
    yield 0.96, "declaring label attributes"
    _declare_label_attributes(dataset, [f for f in fields if f in labelled], id_types)
    info = dataset.info.setdefault("kalos_import", {})
    for t in label_types:
        if layout == "rater_fields":
            info.setdefault("rater_fields", {}).update({f: r for r, f in plan[t].items()})
        else:
            info.setdefault("attribute_fields", {})[plan[t]] = rater_attribute
    dataset.save()
    return dataset, n, n_labels


def _coco_steps(dataset_or_name, labels_path, data_path=None, layout="rater_fields", label_field="raters",
                label_types=("detections",), rater_attribute="rater_id", use_polylines=False, skip_invalid=False,
                on_existing="error", placeholders=True):
    label_types = _check_options(layout, label_field, label_types, rater_attribute)
    yield 0.0, "reading the json"
    raw, source = _read_json(labels_path)
    yield 0.03, "validating"
    loaded = _validate_coco(raw, source, label_types, skip_invalid)
    stem = os.path.splitext(os.path.basename(source))[0]

    blank = None
    if not data_path and placeholders:
        blank = Placeholders(placeholders if isinstance(placeholders, str) else default_folder(stem))

    def filepath_of(im):
        # called while writing, after every check: placeholders are never made for a refused import
        name = im.file_name or f"{im.id}.jpg"
        if data_path:
            return os.path.join(data_path, name)
        return blank.path(name, im.width, im.height) if blank else os.path.join(_PLACEHOLDER_DIR, stem, name)

    result = yield from _import_steps(dataset_or_name, loaded, layout, label_field, rater_attribute, use_polylines,
                                      filepath_of, "coco_id", "coco_annotation_id", on_existing=on_existing)
    skipped = {tuple(sorted(p.items())) for ds in loaded.values() for p in ds.skipped}
    if skipped:
        logger.warning("skipped %d invalid item(s) of %s (skip_invalid=True)", len(skipped), source)
    return (*result, len(skipped))


def import_multirater_coco(dataset_or_name, labels_path, data_path=None, layout="rater_fields",
                           label_field="raters", label_types=("detections",), rater_attribute="rater_id",
                           use_polylines=False, skip_invalid=False, on_existing="error", placeholders=True,
                           progress=None):
    """Import a multi-rater COCO json (path or dict) into a dataset (a Dataset, or a name: loaded or created).

    Without ``data_path`` each sample gets a blank image of its size (``placeholders``: True = under
    FiftyOne's dataset directory, a folder path, or False for none) so its labels can be reviewed.

    See the module docstring for the fields written. ``progress``: optional
    ``callable(fraction, message)``. Raises ``ValueError`` (``InvalidInputError``)
    naming the bad ids, before writing anything, unless ``skip_invalid``. Images whose
    ``coco_id`` the dataset already holds are an error (``on_existing="error"``) or left
    out (``"skip"``): importing a file twice never duplicates samples.
    """
    steps = _coco_steps(dataset_or_name, labels_path, data_path, layout, label_field, label_types, rater_attribute,
                        use_polylines, skip_invalid, on_existing, placeholders)
    return run_steps(steps, progress)[0]


def import_multirater_yolo(dataset_or_name, root, label_field="raters", layout="rater_fields", image_sizes=None,
                           data_path=None, class_names=None, rater_attribute="rater_id", skip_invalid=False,
                           on_existing="error", progress=None):
    """Import per-rater YOLO folders ``root/<rater>/<stem>.txt`` (see :func:`kalos_core.io.load_yolo`).

    Samples get ``yolo_stem``; ``metadata`` only when ``image_sizes`` ``{stem: (w, h)}``
    covers every image. ``data_path``: folder holding ``<stem>.<ext>`` images.
    """
    _check_options(layout, label_field, ["detections"], rater_attribute)
    ds = load_yolo(root, image_sizes=image_sizes, class_names=class_names, skip_invalid=skip_invalid)
    files = {os.path.splitext(f)[0]: os.path.join(data_path, f) for f in sorted(os.listdir(data_path or "."))
             if data_path}
    base = os.path.join(_PLACEHOLDER_DIR, os.path.basename(os.path.normpath(str(root))))
    sized = bool(image_sizes) and all(im.id in image_sizes for im in ds.images)
    steps = _import_steps(dataset_or_name, {"detections": ds}, layout, label_field, rater_attribute, False,
                          lambda im: files.get(im.id) or os.path.join(base, f"{im.id}.jpg"), "yolo_stem",
                          "yolo_annotation_id", sized=sized, on_existing=on_existing)
    return run_steps(steps, progress)[0]


def _quick_check(path, label_types, skip_invalid):
    """Form-time validation of small files (cached by path, mtime, size, options); error text or None."""
    st = os.stat(path)
    if st.st_size > VALIDATE_MAX_BYTES:
        return None
    key = (path, st.st_mtime_ns, st.st_size, tuple(label_types), bool(skip_invalid))
    if key not in _validated:
        _validated.clear()
        try:
            _validated[key] = _validate_coco(*_read_json(path), label_types, skip_invalid) and None
        except (ValueError, KeyError, TypeError, OSError) as e:
            _validated[key] = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
    return _validated[key]


def target_inputs(ctx, inputs, id_field: str) -> None:
    """The import form's destination: the open dataset or a new one (a name no dataset has), and what
    to do with images already imported (same ``id_field``)."""
    p, here = ctx.params, ctx.dataset is not None
    target = types.RadioGroup()
    target.add_choice("current", label=f"Into the open dataset ({ctx.dataset.name})" if here else "Into the open dataset")
    target.add_choice("new", label="Into a new dataset")
    inputs.enum("target", target.values(), default="current" if here else "new", label="Import into", view=target)
    if p.get("target", "current" if here else "new") == "new":
        name_prop = inputs.str("new_dataset", required=True, label="New dataset name")
        name = p.get("new_dataset")
        if isinstance(name, str) and name.strip() and fo.dataset_exists(name.strip()):
            form_error(name_prop, f"a dataset {name.strip()!r} exists already; choose another name")
    elif here and ctx.dataset.has_sample_field(id_field) and len(ctx.dataset):
        existing = types.RadioGroup()
        existing.add_choice("error", label="Stop with an error (nothing is written)")
        existing.add_choice("skip", label="Skip them (import only the other images)")
        inputs.enum("on_existing", existing.values(), default="error", view=existing,
                    label=f"Images already in this dataset (same {id_field})",
                    description=f"{len(ctx.dataset)} samples of this dataset have a {id_field}; importing the "
                                "same images again would duplicate them")


def import_target(ctx):
    """(new, the dataset or the new dataset's name) chosen in :func:`target_inputs`."""
    p = ctx.params
    new = p.get("target", "current" if ctx.dataset is not None else "new") == "new"
    name = (p.get("new_dataset") or "").strip()
    if new and (not name or fo.dataset_exists(name)):
        raise ValueError(f"choose a name for the new dataset that no dataset has (got {name!r})")
    return new, name if new else ctx.dataset


def import_card(ctx, dataset, n: int, n_labels: int, more=(),
                next_step: str = "Run 'KaLOS: compute agreement' (or 'KaLOS: calibrate threshold') on the rater fields."):
    """An import's result card: the counts (and ``more`` rows), the data set and its rater fields."""
    fields = sorted((dataset.info.get("kalos_import") or {}).get("rater_fields") or {})
    return show_card(ctx, "KaLOS: imported", [("Images imported", n), ("Labels", n_labels), *more],
                     f"data set {dataset.name!r}" + (": fields " + ", ".join(fields) if fields else ""), None,
                     next_step, dataset=dataset.name)


def imported(ctx, dataset, new: bool, n: int, n_labels: int, note: str = ""):
    """Generator of the operations after an import: progress, open or reload, a notice."""
    if new:
        dataset.persistent = True
    done = progress_op(ctx, 1.0, f"imported {n} images")
    if done is not None:
        yield done
    if not ctx.delegated:
        yield ctx.ops.open_dataset(dataset.name) if new else ctx.ops.reload_dataset()
        yield ctx.ops.notify(f"Imported {n} images with {n_labels} labels into {dataset.name!r}{note}",
                             variant="success")


class ImportMultiraterCoco(foo.Operator):
    """Import a multi-rater COCO json into the current dataset or a new one."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="import_multirater_coco", label="KaLOS: import multi-rater COCO", icon="/assets/icon.svg",
            description="Import a COCO json with images[].rater_list and annotations[].rater_id, one field per rater",
            dynamic=True, execute_as_generator=True, allow_delegated_execution=True)

    def resolve_input(self, ctx):
        inputs = types.Object()
        p = ctx.params
        path_prop = inputs.str("labels_path", required=True, label="Labels json",
                               description="Multi-rater COCO json (images[].rater_list, annotations[].rater_id)")
        data_prop = inputs.str("data_path", label="Images folder (optional)",
                               description="Folder the json's file_name are relative to; leave empty if the images "
                                           "are not available: each sample then gets a blank image of its size "
                                           "(under FiftyOne's dataset directory) so its labels can be reviewed")
        target_inputs(ctx, inputs, "coco_id")
        inputs.enum("layout", list(LAYOUTS), default="rater_fields", label="Layout", view=types.RadioGroup(),
                    description="rater_fields: one field per rater; rater_attribute: one field, rater_id on each label")
        field_prop = inputs.str("label_field", default="raters", label="Label field (prefix)")
        choices = types.AutocompleteView(allow_duplicates=False)
        for t in LABEL_TYPES:
            choices.add_choice(t, label=t)
        types_prop = inputs.list("label_types", types.String(), default=["detections"], label="Label types",
                                 view=choices)
        inputs.bool("use_polylines", default=False, label="Segmentations as polylines (instead of masks)")
        inputs.bool("skip_invalid", default=False, label="Skip invalid annotations instead of failing")
        label_types, path = p.get("label_types") or ["detections"], p.get("labels_path")
        types_ok = all(t in LABEL_TYPES for t in label_types)
        if not types_ok:
            form_error(types_prop, f"label types must be among {', '.join(LABEL_TYPES)}")
        if not FIELD_NAME_RE.match(p.get("label_field", "raters") or ""):
            form_error(field_prop, "start with a letter; letters, digits and _ only")
        if p.get("data_path") and not os.path.isdir(p["data_path"]):
            form_error(data_prop, f"no folder at {p['data_path']}")
        if path and not os.path.isfile(path):
            form_error(path_prop, f"no file at {path}")
        elif path and types_ok and (error := _quick_check(path, label_types, p.get("skip_invalid", False))):
            form_error(path_prop, error)
        return form(inputs, "KaLOS: import multi-rater COCO")

    def execute(self, ctx):
        p = ctx.params
        new, target = import_target(ctx)
        steps = _coco_steps(target, p["labels_path"], p.get("data_path") or None,
                            p.get("layout", "rater_fields"), p.get("label_field", "raters"),
                            p.get("label_types") or ["detections"], use_polylines=p.get("use_polylines", False),
                            skip_invalid=p.get("skip_invalid", False), on_existing=p.get("on_existing", "error"))
        dataset, n, n_labels, skipped = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: import failed")
        yield from imported(ctx, dataset, new, n, n_labels, f"; skipped {skipped} invalid item(s)" if skipped else "")
        yield import_card(ctx, dataset, n, n_labels, [("Invalid items skipped", skipped)])

    def __call__(self, sample_collection, labels_path, **kwargs):
        """Python entry with the operator's defaults; same as :func:`import_multirater_coco`."""
        return import_multirater_coco(sample_collection._dataset, labels_path, **kwargs)
