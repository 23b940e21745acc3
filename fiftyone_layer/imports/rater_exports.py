"""One export per rater, in any format FiftyOne reads, into one rater field per rater.

Python: :func:`import_rater_exports` (a list of (rater, export path, ``fiftyone.types`` name));
command line: :mod:`.cli`.

The exports are read by FiftyOne's importers (:mod:`.exports`, images optional)
and matched by file name (or stem, or relative path). A sample is one key: ``file_key``, the
raters whose export lists it in ``rater_list`` (an export that lists an image without labels:
an empty list), ``<label_field>_<rater>`` one label list per rater (None where the rater's
export does not list the image: *not assigned*, never "no object"), each label's rater in
``rater_id``. All raters' labels must be of one type (boxes, polylines or keypoints). The same
refusals as the COCO import: everything is checked before the first write, images already
imported (same ``file_key``) are an error or skipped, no field of another type is written over.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import fiftyone as fo

from kalos_core.progress import run_steps

from .. import rawdocs
from ..names import FIELD_NAME_RE
from ..placeholders import Placeholders, default_folder
from .cvat_project import cvat_rater, is_project_export, read_cvat_project
from .errors import ImportRefused
from .exports import read_export
from .label_studio import read_label_studio
from .schema import (
    MAX_RATER_FIELDS,
    RESERVED,
    already_imported,
    check_label_fields,
    check_plain_fields,
    check_shared,
    declare_label_fields,
    field_names,
)

ID_FIELD = "file_key"
#: the format name of a Label Studio project export (JSON) among FiftyOne's types
LABEL_STUDIO = "LabelStudioJSON"
#: a CVAT-for-images project export whose tasks are replicas (one rater per task; found, not chosen)
CVAT_PROJECT = "CVATImageDataset (project export)"
#: exports that name their raters themselves
SELF_NAMED = (LABEL_STUDIO, CVAT_PROJECT)


def _exports(exports) -> list[dict]:
    """``[{"rater", "path", "format", "data_path"}]`` from tuples or dicts, rater names checked."""
    rows = [dict(zip(("rater", "path", "format", "data_path"), e)) if isinstance(e, (tuple, list)) else dict(e)
            for e in exports]
    if not rows:
        raise ImportRefused("give at least one (rater, export path, format)")
    for i, row in enumerate(rows):
        folder_xml = os.path.join(str(row.get("path")), "annotations.xml")   # CVAT's export, unzipped
        if "CVATImage" in str(row.get("format")) and os.path.isfile(folder_xml):
            row["path"] = folder_xml
        cvat = "CVATImage" in str(row.get("format")) and os.path.isfile(str(row.get("path")))
        if cvat and is_project_export(row["path"]):   # several replica tasks: one rater per task
            if str(row.get("rater") or "").strip():
                raise ImportRefused(f"{row['path']} is a CVAT project export: its raters are its tasks' assignees "
                                 "(else the task names); leave its rater empty")
            row["format"] = CVAT_PROJECT
        elif cvat and not str(row.get("rater") or "").strip():
            row["rater"] = cvat_rater(row["path"])   # a replica job's export: its assignee or job id
        needed = ("path", "format") if row.get("format") in SELF_NAMED else ("rater", "path", "format")
        missing = [k for k in needed if not str(row.get(k) or "").strip()]
        if missing:
            raise ImportRefused(f"export {i + 1} lacks its {', '.join(missing)}")
    names = [str(r["rater"]).strip() for r in rows if r.get("format") not in SELF_NAMED]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ImportRefused(f"rater {twice[0]!r} is named for two exports; give each export its own rater name")
    return rows


def one_label_type(per_rater: dict):
    """The one label list class of all raters (fo.Detections when nobody drew anything)."""
    held: dict = {}
    for rater, images in per_rater.items():
        for im in images.values():
            if im.labels is not None:
                held.setdefault(type(im.labels), rater)
                break
    if len(held) > 1:
        raise ImportRefused("the raters' labels are of different types ("
                         + ", ".join(f"{r}: {c.__name__}" for c, r in held.items())
                         + "); import each type separately (label_key, or one format per type)")
    return next(iter(held), fo.Detections)


def _size(key, per_rater):
    """(width, height) of one image, the same in every export that gives one, else an error."""
    sizes = {(im.width, im.height): r for r, ims in per_rater.items()
             if (im := ims.get(key)) is not None and im.width and im.height}
    if len(sizes) > 1:
        raise ImportRefused(f"image {key!r} has different sizes in the raters' exports ("
                         + ", ".join(f"{r}: {w}x{h}" for (w, h), r in sizes.items()) + "); is it the same image?")
    return next(iter(sizes), (None, None))


def rater_label_steps(dataset_or_name, per_rater: dict, label_field="raters", on_existing="error",
                      placeholders=True, source="exports", extra_info=None):
    """Generator: writes ``{rater: {key: ExportImage}}`` as one field per rater; yields (fraction,
    message), returns (dataset, n_samples, n_labels). Shared by every per-rater reader."""
    if not isinstance(label_field, str) or not FIELD_NAME_RE.match(label_field):
        raise ImportRefused(f"label_field must start with a letter and hold only letters, digits and _: {label_field!r}")
    raters = list(per_rater)
    if len(raters) > MAX_RATER_FIELDS:
        raise ImportRefused(f"{len(raters)} raters: one label field per rater is limited to {MAX_RATER_FIELDS}")
    cls = one_label_type(per_rater)
    keys = list(dict.fromkeys(k for images in per_rater.values() for k in images))
    images = [SimpleNamespace(id=k, raters=[r for r in raters if k in per_rater[r]], rater_classes=None,
                              size=_size(k, per_rater)) for k in keys]
    dataset = dataset_or_name
    if isinstance(dataset, str) and fo.dataset_exists(dataset):
        dataset = fo.load_dataset(dataset)
    if not isinstance(dataset, str) and images:
        check_plain_fields(dataset, images, ID_FIELD)
        images = already_imported(dataset, images, ID_FIELD, on_existing)
    plan = field_names({} if isinstance(dataset, str) else dataset.info, label_field, ["labels"], "rater_fields",
                        raters)["labels"]
    if ID_FIELD in plan.values() or RESERVED & set(plan.values()):
        raise ImportRefused(f"a rater field would be named like a reserved field ({sorted(plan.values())})",
                            fix="choose another label_field")
    if not isinstance(dataset, str):
        check_label_fields(dataset, {plan[r]: cls for r in raters})
    dataset = fo.Dataset(dataset) if isinstance(dataset, str) else dataset   # nothing is created before this
    rawdocs.declare(dataset, {"rater_list": raters[:1], ID_FIELD: keys[0]} if keys else {})
    fields = declare_label_fields(dataset, {plan[r]: cls for r in raters})
    blank = Placeholders(placeholders if isinstance(placeholders, str) else default_folder(source)) \
        if placeholders else None
    docs, n_labels, labelled = [], 0, set()
    for im in images:
        values = {"rater_list": im.raters, ID_FIELD: im.id}
        found = [e.path for r in im.raters if (e := per_rater[r][im.id]).path]
        for r in im.raters:
            labels = getattr(per_rater[r][im.id].labels, rawdocs.LIST_NAMES[cls], None) or []
            for label in labels:
                label["rater_id"] = r
            values[plan[r]] = rawdocs.from_label(cls(**{rawdocs.LIST_NAMES[cls]: labels}))
            n_labels += len(labels)
            labelled.update([plan[r]] if labels else [])
        w, h = im.size
        path = found[0] if found else (blank.path(im.id, w, h) if blank and w else
                                       os.path.join(os.sep, "__kalos_no_images__", source, im.id))
        docs.append(rawdocs.sample(path, values, w, h))
    yield 0.8, f"writing {len(docs)} samples"
    rawdocs.insert(dataset, docs)
    if labelled:
        dataset.add_dynamic_sample_fields(fields=[f for f in fields if f in labelled])
    info = dataset.info.setdefault("kalos_import", {})
    info.setdefault("rater_fields", {}).update({f: r for r, f in plan.items()})
    info.update(extra_info or {})
    dataset.save()
    return dataset, len(docs), n_labels


def parse_rater_names(text: str | None) -> dict:
    """``"1=alice,2=bob"`` -> ``{"1": "alice", "2": "bob"}`` (the command line's and the form's ``rater_names``)."""
    out = {}
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ImportRefused(f"rater names entry {part!r} is not KEY=NAME",
                                fix='give e.g. "1=alice,2=bob" (Label Studio user ids or emails, CVAT raters)')
        out[key.strip()] = value.strip()
    return out


def _renamed(got: dict, names: dict, used: set) -> dict:
    """``got`` with its raters renamed by ``names`` (a Label Studio user's bare id ``"3"`` also names ``user 3``)."""
    out = {}
    for rater, images in got.items():
        key = next((k for k in (rater, rater[5:] if rater.startswith("user ") else None) if k in names), None)
        used.update([key] if key else [])
        out[names[key] if key else rater] = images
    return out


def exports_steps(dataset_or_name, exports, match_by="file_name", label_field="raters", label_key=None,
                  on_existing="error", placeholders=True, predictions=False, rater_names=None, **options):
    rows = _exports(exports)
    names = parse_rater_names(rater_names) if isinstance(rater_names, str) else dict(rater_names or {})
    per_rater, left, used = {}, {}, set()
    for i, row in enumerate(rows):
        yield 0.7 * i / len(rows), f"reading {row.get('rater') or row['path']}"
        if row["format"] == LABEL_STUDIO:   # every annotator of the project
            got, dropped = read_label_studio(row["path"], match_by, label_key, predictions=predictions)
            left.update((k, left.get(k, 0) + v) for k, v in dropped.items())
        elif row["format"] == CVAT_PROJECT:
            got = read_cvat_project(row["path"], row.get("data_path") or None, match_by, label_key, **options)
        else:
            got = {str(row["rater"]).strip(): read_export(row["path"], row["format"], row.get("data_path") or None,
                                                          match_by, label_key, **options)}
        if row["format"] in SELF_NAMED and names:
            got = _renamed(got, names, used)
        twice = sorted(set(got) & set(per_rater))
        if twice:
            raise ImportRefused(f"rater {twice[0]!r} has labels in two exports ({row['path']} and an earlier one); "
                             "give each export its own rater name")
        per_rater.update(got)
    if not per_rater:
        raise ImportRefused("the exports hold no annotations")
    unused = sorted(set(names) - used)
    if unused:
        raise ImportRefused(f"rater_names names {unused[0]!r}, which no export holds (raters read: "
                            f"{', '.join(sorted(per_rater))})", fix="give the Label Studio user id or email, or "
                            "the CVAT rater, as read")
    check_shared({r: set(images) for r, images in per_rater.items()})
    record = {"exports": [{k: str(r.get(k) or "") for k in ("rater", "path", "format")} for r in rows],
              "left_out": left}
    result = yield from rater_label_steps(dataset_or_name, per_rater, label_field, on_existing, placeholders,
                                          f"exports_{label_field}", record)
    return (*result, left)


def import_rater_exports(dataset_or_name, exports, match_by="file_name", label_field="raters", label_key=None,
                         on_existing="error", placeholders=True, predictions=False, progress=None, rater_names=None,
                         **importer_options):
    """Import one export per rater into a dataset (a Dataset, or a name: loaded or created).

    ``exports``: ``(rater, path, format[, images folder])`` tuples or dicts with those keys (rater ``None``
    for a CVAT image XML: its job's assignee, else ``job <id>``, else the file name; a CVAT project
    export whose tasks are replicas gives one rater per task, :mod:`.cvat_project`); ``format`` a
    ``fiftyone.types`` name (``"COCODetectionDataset"``, ``"CVATImageDataset"``, ``"VOCDetectionDataset"``,
    ...) or ``"LabelStudioJSON"`` (a Label Studio project export: every annotator, rater left empty;
    ``predictions``: its model predictions too); ``path`` the labels file or the export folder;
    ``rater_names`` renames the raters an export names itself (``{"user 3": "alice"}``, ``{"3": "alice"}``,
    a CVAT task's rater, or the text ``"3=alice,4=bob"``). ``label_key`` picks one kind of labels where the format gives several (COCO: ``detections`` unless ``label_types`` says otherwise); other keywords go
    to FiftyOne's importer. Without images each sample gets a blank image of its size when the export
    gives one (``placeholders``). Returns the dataset; see the module docstring for what is written.
    """
    steps = exports_steps(dataset_or_name, exports, match_by, label_field, label_key, on_existing, placeholders,
                          predictions, rater_names, **importer_options)
    return run_steps(steps, progress)[0]


def import_label_studio(dataset_or_name, export_path, rater_names=None, **kwargs):
    """A Label Studio project export (JSON): one rater field per annotator (see
    :mod:`.label_studio`); ``match_by`` ``"file_name"`` or ``"task"``; ``rater_names``
    maps ``completed_by`` values (``"user 3"``, an email) to rater names. What was left out
    (drafts, cancelled annotations) is in ``dataset.info["kalos_import"]["left_out"]``."""
    export = {"rater": None, "path": export_path, "format": LABEL_STUDIO}
    return import_rater_exports(dataset_or_name, [export], rater_names=rater_names, **kwargs)


def import_cvat_replicas(dataset_or_name, xml_paths, **kwargs):
    """CVAT consensus replicas, one CVAT-for-images 1.1 XML per job (each job's assignee, else its id,
    else the file name, is the rater), or one project export whose tasks annotate the same frames
    (one rater per task): :func:`import_rater_exports`."""
    return import_rater_exports(dataset_or_name, [(None, p, "CVATImageDataset") for p in xml_paths], **kwargs)
