"""Import multi-rater COCO / per-rater YOLO labels into a FiftyOne dataset (the fields' schema
and the label documents: :mod:`operators.import_schema`).

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

import logging
import os

import fiftyone as fo
import fiftyone.operators as foo
from fiftyone.operators import types

from kalos_core.io import InvalidInputError, load_coco, load_yolo
from kalos_core.io.jsonfile import read_json

from ..fiftyone_layer import rawdocs
from ..fiftyone_layer.placeholders import Placeholders, default_folder
from .common import (
    form, FIELD_NAME_RE, drive, form_error, progress_op, report_errors, run_steps,
)
from .cards import show_card
from .import_schema import (
    LABEL_TYPES, LAYOUTS, MAX_RATER_FIELDS, _TASK, _already_imported, _check_options, _check_plain_fields,
    _declare_label_attributes, _declare_plain, _field_names, _list_class, _plain_values, _prepare_schema, _to_doc,
)

logger = logging.getLogger(__name__)
_PLACEHOLDER_DIR = os.path.join(os.sep, "__kalos_no_images__")
VALIDATE_MAX_BYTES = 50 * 2**20  # resolve_input validates files up to this size
_validated: dict = {}  # one-entry cache for resolve_input: key -> error message or None


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
        return blank.path(name, im.width, im.height) if blank else os.path.join(stem, name)

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
    base = os.path.join(os.path.basename(os.path.normpath(str(root))))
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
