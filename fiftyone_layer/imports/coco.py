"""Import multi-rater COCO / per-rater YOLO labels into a FiftyOne dataset (the fields' schema
and the label documents: :mod:`.schema`).

``kalos_core.io`` validates the file first: a bad file fails (naming image/annotation/rater ids)
before anything is written.

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
(``yolo_annotation_id``), and an annotation's COCO ``attributes`` as label attributes of the same
names. rater_fields: an assigned rater who drew nothing has an *empty* list, an unassigned one None. ``dataset.info["kalos_import"]`` keeps ``rater_fields``
(field -> rater) and ``attribute_fields`` (field -> rater attribute).
"""

from __future__ import annotations

import logging
import os

import fiftyone as fo

from kalos_core.io import InvalidInputError, load_coco, load_yolo
from kalos_core.io.jsonfile import read_json
from kalos_core.progress import run_steps

from .. import rawdocs
from ..placeholders import Placeholders, default_folder
from .errors import ImportRefused
from .schema import (
    MAX_RATER_FIELDS,
    TASK,
    already_imported,
    check_label_fields,
    check_options,
    check_plain_fields,
    check_shared,
    declare_label_attributes,
    declare_plain,
    field_names,
    list_class,
    plain_values,
    plan_classes,
    prepare_schema,
    to_doc,
)

logger = logging.getLogger(__name__)
VALIDATE_MAX_BYTES = 50 * 2**20  # check_coco_file (the form) validates files up to this size
_validated: dict = {}  # one-entry cache for check_coco_file: key -> error message or None


def _read_json(labels_path):
    if isinstance(labels_path, dict):
        return labels_path, "input"
    return read_json(labels_path), str(labels_path)   # deep / huge / not UTF-8: an error naming the file


def validate_coco(raw, source, label_types, skip_invalid):
    """One engine data set per label type; raises InvalidInputError naming ``source``."""
    try:
        loaded = {t: load_coco(raw, TASK[t], skip_invalid=skip_invalid) for t in label_types}
    except InvalidInputError as e:
        raise InvalidInputError(e.problems, source) from None
    sized = {im["id"]: im for im in raw["images"]}
    bad = [im.id for im in loaded[label_types[0]].images
           if not all(isinstance(sized[im.id].get(k), (int, float)) and sized[im.id][k] > 0
                      for k in ("width", "height"))]
    if bad:
        raise ImportRefused(f"{len(bad)} image(s) in {source} lack a positive width/height: ids {bad[:20]}")
    return loaded


#: a label's own fields: a COCO ``attributes`` entry of one of these names is refused, never written over
LABEL_OWN = {"_id", "_cls", "id", "label", "bounding_box", "mask", "mask_path", "points", "closed", "filled",
             "visible", "confidence", "index", "tags", "attributes"}


def annotation_attributes(raw: dict, source: str, reserved=()) -> dict:
    """``{annotation id: {name: value}}`` of the annotations' COCO ``attributes`` (as CVAT writes them:
    ``{"occluded": false, "pose": "standing"}``), to be label attributes of the same names; a name
    the label itself uses, or a value that is not a number, text, true/false or a list of them, is
    refused naming the annotation."""
    out = {}
    for a in raw.get("annotations") or []:
        attrs = a.get("attributes") if isinstance(a, dict) else None
        if not attrs:
            continue
        where = f"annotation {a.get('id')!r} of image {a.get('image_id')!r}"
        if not isinstance(attrs, dict):
            raise ImportRefused(f"its attributes are {type(attrs).__name__}, not an object of name: value", source,
                                where, fix='write them as {"occluded": false, "pose": "standing"}')
        for k, v in attrs.items():
            scalar = (str, int, float, bool, type(None))
            if k in LABEL_OWN or k in reserved:
                raise ImportRefused(f"its attribute {k!r} has the name of the label's own field", source, where,
                                    fix="rename that attribute")
            if not (isinstance(v, scalar) or (isinstance(v, list) and all(isinstance(x, scalar) for x in v))):
                raise ImportRefused(f"its attribute {k!r} is {type(v).__name__}: {str(v)[:60]}", source, where,
                                    fix="give a number, text, true/false or a list of them")
        out[a.get("id")] = attrs
    return out


def _import_steps(dataset_or_name, loaded, layout, label_field, rater_attribute, use_polylines,
                  filepath_of, id_field, ann_id_attr, sized=True, on_existing="error", extra_attrs=None):
    """Generator: yields (fraction, message); returns (dataset, n_samples, n_labels).

    Everything is checked before the first write: field names and types, images already imported."""
    label_types = list(loaded)
    first = loaded[label_types[0]]
    by_id = {t: {im.id: im for im in ds.images} for t, ds in loaded.items()}
    raters = list(dict.fromkeys(r for im in first.images for r in im.raters))
    if layout == "rater_fields" and len(raters) > MAX_RATER_FIELDS:
        raise ImportRefused(f"{len(raters)} raters: one label field per rater is limited to {MAX_RATER_FIELDS} (FiftyOne "
                         "saves its whole schema with every field, so a thousand fields take minutes to import and "
                         "fill the App's sidebar); import with layout 'rater_attribute' (one field, the rater on "
                         "each label), which takes seconds for any number of raters")
    dataset = dataset_or_name
    if isinstance(dataset, str) and fo.dataset_exists(dataset):
        dataset = fo.load_dataset(dataset)
    images = first.images
    if not isinstance(dataset, str) and images:
        check_plain_fields(dataset, images, id_field)
        images = already_imported(dataset, images, id_field, on_existing)
    plan = field_names({} if isinstance(dataset, str) else dataset.info, label_field, label_types, layout, raters)
    if not isinstance(dataset, str):
        check_label_fields(dataset, plan_classes(plan, label_types, use_polylines))
    dataset = fo.Dataset(dataset) if isinstance(dataset, str) else dataset  # nothing is created before this
    plain = [plain_values(im, id_field, first.categories) for im in images]
    declare_plain(dataset, plain)   # first, while the schema is small: each declaration saves the dataset
    fields = prepare_schema(dataset, plan, label_types, use_polylines)
    batch, n_labels, n, done = [], 0, len(images), 0
    labelled, id_types = set(), set()   # fields that received labels; Python types of the annotation ids
    for k, im in enumerate(images):
        w, h = im.width, im.height
        values = dict(plain[k])
        for t in label_types:
            cls, _ = list_class(t, use_polylines)
            per_rater = {r: [] for r in im.raters}
            for a in by_id[t][im.id].annotations:
                attrs = {**(extra_attrs or {}).get(a.id, {}), rater_attribute: a.rater, ann_id_attr: a.id}
                label = first.categories.get(a.category, str(a.category))
                per_rater[a.rater].append(to_doc(t, a, w, h, label, attrs, use_polylines))
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
    # labels with the file's own attributes differ field by field: FiftyOne's scan of every field
    declare_label_attributes(dataset, [f for f in fields if f in labelled], id_types, scan_all=bool(extra_attrs))
    info = dataset.info.setdefault("kalos_import", {})
    for t in label_types:
        if layout == "rater_fields":
            info.setdefault("rater_fields", {}).update({f: r for r, f in plan[t].items()})
        else:
            info.setdefault("attribute_fields", {})[plan[t]] = rater_attribute
    dataset.save()
    return dataset, n, n_labels


def coco_steps(dataset_or_name, labels_path, data_path=None, layout="rater_fields", label_field="raters",
                label_types=("detections",), rater_attribute="rater_id", use_polylines=False, skip_invalid=False,
                on_existing="error", placeholders=True):
    label_types = check_options(layout, label_field, label_types, rater_attribute)
    yield 0.0, "reading the json"
    raw, source = _read_json(labels_path)
    yield 0.03, "validating"
    loaded = validate_coco(raw, source, label_types, skip_invalid)
    extra = annotation_attributes(raw, source, (rater_attribute, "coco_annotation_id"))
    stem = os.path.splitext(os.path.basename(source))[0]

    blank = None
    if not data_path and placeholders:
        blank = Placeholders(placeholders if isinstance(placeholders, str) else default_folder(stem))

    def filepath_of(im):
        # called while writing, after every check: placeholders are never made for a refused import
        name = im.file_name or f"{im.id}.jpg"
        if data_path:
            return os.path.join(data_path, name)
        return blank.path(name, im.width, im.height) if blank else os.path.join(stem, name)

    result = yield from _import_steps(dataset_or_name, loaded, layout, label_field, rater_attribute, use_polylines,
                                      filepath_of, "coco_id", "coco_annotation_id", on_existing=on_existing,
                                      extra_attrs=extra)
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
    steps = coco_steps(dataset_or_name, labels_path, data_path, layout, label_field, label_types, rater_attribute,
                        use_polylines, skip_invalid, on_existing, placeholders)
    return run_steps(steps, progress)[0]


def import_multirater_yolo(dataset_or_name, root, label_field="raters", layout="rater_fields", image_sizes=None,
                           data_path=None, class_names=None, rater_attribute="rater_id", skip_invalid=False,
                           on_existing="error", progress=None):
    """Import per-rater YOLO folders ``root/<rater>/<stem>.txt`` (see :func:`kalos_core.io.load_yolo`).

    Samples get ``yolo_stem``; ``metadata`` only when ``image_sizes`` ``{stem: (w, h)}``
    covers every image. ``data_path``: folder holding ``<stem>.<ext>`` images.
    """
    check_options(layout, label_field, ["detections"], rater_attribute)
    ds = load_yolo(root, image_sizes=image_sizes, class_names=class_names, skip_invalid=skip_invalid)
    check_shared({r: {im.id for im in ds.images if r in im.raters} for r in ds.raters},
                 fix="name each image's labels file alike in every rater's folder (<stem>.txt)")
    files = {os.path.splitext(f)[0]: os.path.join(data_path, f) for f in sorted(os.listdir(data_path or "."))
             if data_path}
    base = os.path.join(os.path.basename(os.path.normpath(str(root))))
    sized = bool(image_sizes) and all(im.id in image_sizes for im in ds.images)
    steps = _import_steps(dataset_or_name, {"detections": ds}, layout, label_field, rater_attribute, False,
                          lambda im: files.get(im.id) or os.path.join(base, f"{im.id}.jpg"), "yolo_stem",
                          "yolo_annotation_id", sized=sized, on_existing=on_existing)
    return run_steps(steps, progress)[0]


def check_coco_file(path, label_types, skip_invalid):
    """Form-time validation of small files (cached by path, mtime, size, options); error text or None."""
    st = os.stat(path)
    if st.st_size > VALIDATE_MAX_BYTES:
        return None
    key = (path, st.st_mtime_ns, st.st_size, tuple(label_types), bool(skip_invalid))
    if key not in _validated:
        _validated.clear()
        try:
            _validated[key] = validate_coco(*_read_json(path), label_types, skip_invalid) and None
        except (ValueError, KeyError, TypeError, OSError) as e:
            _validated[key] = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
    return _validated[key]
