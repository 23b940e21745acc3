"""The import operators' App side: :class:`ImportMultiraterCoco` and the import forms' shared
parts (destination, result card). The import itself is :mod:`fiftyone_layer.imports`."""

from __future__ import annotations

import os

import fiftyone as fo
import fiftyone.operators as foo
from fiftyone.operators import types

from ..fiftyone_layer.imports import (
    LABEL_TYPES,
    LAYOUTS,
    check_coco_file,
    coco_steps,
    import_multirater_coco,
)
from .cards import show_card
from .common import FIELD_NAME_RE, form, form_error
from .measure_operator import drive, progress_op, report_errors


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
                next_step: str = "Run 'KaLOS: compute agreement' (or 'KaLOS: calibrate threshold') on the rater fields.",
                what: str = "Images"):
    """An import's result card: the counts (and ``more`` rows), the data set and its rater fields."""
    fields = sorted((dataset.info.get("kalos_import") or {}).get("rater_fields") or {})
    return show_card(ctx, "KaLOS: imported", [(f"{what} imported", n), ("Labels", n_labels), *more],
                     f"data set {dataset.name!r}" + (": fields " + ", ".join(fields) if fields else ""), None,
                     next_step, dataset=dataset.name)


def imported(ctx, dataset, new: bool, n: int, n_labels: int, note: str = "", what: str = "images"):
    """Generator of the operations after an import: progress, open or reload, a notice."""
    if new:
        dataset.persistent = True
    done = progress_op(ctx, 1.0, f"imported {n} {what}")
    if done is not None:
        yield done
    if not ctx.delegated:
        yield ctx.ops.open_dataset(dataset.name) if new else ctx.ops.reload_dataset()
        yield ctx.ops.notify(f"Imported {n} {what} with {n_labels} labels into {dataset.name!r}{note}",
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
        elif path and types_ok and (error := check_coco_file(path, label_types, p.get("skip_invalid", False))):
            form_error(path_prop, error)
        return form(inputs, "KaLOS: import multi-rater COCO")

    def execute(self, ctx):
        p = ctx.params
        new, target = import_target(ctx)
        steps = coco_steps(target, p["labels_path"], p.get("data_path") or None,
                            p.get("layout", "rater_fields"), p.get("label_field", "raters"),
                            p.get("label_types") or ["detections"], use_polylines=p.get("use_polylines", False),
                            skip_invalid=p.get("skip_invalid", False), on_existing=p.get("on_existing", "error"))
        dataset, n, n_labels, skipped = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: import failed")
        yield from imported(ctx, dataset, new, n, n_labels, f"; skipped {skipped} invalid item(s)" if skipped else "")
        yield import_card(ctx, dataset, n, n_labels, [("Invalid items skipped", skipped)])

    def __call__(self, sample_collection, labels_path, **kwargs):
        """Python entry with the operator's defaults; same as :func:`import_multirater_coco`."""
        return import_multirater_coco(sample_collection._dataset, labels_path, **kwargs)
