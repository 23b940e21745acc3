"""The App's "import one export per rater" operator (:class:`ImportRaterExports`); the import itself
is :mod:`fiftyone_layer.imports` (Python: :func:`import_rater_exports`; command line:
``python -m fiftyone_layer.imports``, which ``python operators/rater_import.py`` still runs)."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and not __package__:   # `python operators/rater_import.py ...`: the import command line
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the clone, not operators/
    from fiftyone_layer.imports.cli import main as _cli

    sys.exit(_cli())

import fiftyone.operators as foo
from fiftyone.operators import types

from ..fiftyone_layer.imports import (
    ID_FIELD,
    LABEL_STUDIO,
    MASK_FORMATS,
    MATCH_BY,
    VIDEO_FORMATS,
    cvat_rater,
    exports_steps,
    image_types,
    import_cvat_replicas,
    import_label_studio,
    import_rater_exports,
    mask_import_steps,
    parse_rater_names,
    video_steps,
)
from ..fiftyone_layer.imports.masks import LABEL_STUDIO_BRUSH, MASK_FOLDERS
from .common import FIELD_NAME_RE, form_error
from .importing import import_card, import_target, imported, target_inputs
from .measure_operator import drive, report_errors


class ImportRaterExports(foo.Operator):
    """One export per rater (any format FiftyOne reads) into one field per rater."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="import_rater_exports", label="KaLOS: import one export per rater", icon="/assets/icon.svg",
            description="One label export per rater (COCO, CVAT, VOC, YOLO, ...; video: MOT, CVAT for video) into "
                        "one field per rater, matched by file name", dynamic=True, execute_as_generator=True, allow_delegated_execution=True)

    def resolve_input(self, ctx):
        inputs, p = types.Object(), ctx.params
        row = types.Object()
        row.str("rater", label="Rater", description="CVAT image XML: leave empty for the job's assignee or id "
                                                    "(a project export: one rater per task)")
        row.str("path", required=True, label="Export (labels file or folder)")
        formats = types.Dropdown()
        formats.add_choice(LABEL_STUDIO, label="Label Studio project export (JSON): every annotator")
        formats.add_choice(MASK_FOLDERS, label="Semantic masks: this rater's folder of class-map PNG / .npy, or a "
                                               "CVAT 'Segmentation mask' export")
        formats.add_choice(LABEL_STUDIO_BRUSH,
                           label="Semantic masks: Label Studio brush export (JSON), every annotator")
        for name in image_types():
            formats.add_choice(name, label=name)
        for name, (_, label) in VIDEO_FORMATS.items():
            formats.add_choice(name, label=label)
        row.enum("format", formats.values(), required=True, default="COCODetectionDataset", label="Format",
                 view=formats)
        row.str("data_path", label="Images (videos) folder (optional)")
        rows_prop = inputs.list("exports", row, required=True, label="Exports, one per rater",
                                description="Images missing on this machine get a blank image of their size")
        rows = [r for r in p.get("exports") or [] if isinstance(r, dict)]
        for r in rows:
            if r.get("path") and not os.path.exists(r["path"]):
                form_error(rows_prop, f"no export at {r['path']} (rater {r.get('rater')!r})")
            elif r.get("data_path") and not os.path.isdir(r["data_path"]):
                form_error(rows_prop, f"no folder at {r['data_path']} (rater {r.get('rater')!r})")
        names = [str(r.get("rater") or "").strip() for r in rows if r.get("rater")]
        if len(set(names)) < len(names):
            form_error(rows_prop, "give each export its own rater name")
        video = [r for r in rows if r.get("format") in VIDEO_FORMATS]
        if video and len(video) < len(rows):
            form_error(rows_prop, "video exports (MOT, CVAT for video) and image exports in one import: import the "
                                  "video exports alone")
        elif any(not str(r.get("rater") or "").strip() for r in video):
            form_error(rows_prop, "video exports name no rater: give each its rater")
        if video:
            inputs.str("frame_size", label="Frame size (videos, optional)",
                       description="WIDTHxHEIGHT of videos whose size FiftyOne's metadata does not give (CVAT "
                                   "exports give theirs); boxes become relative to it")
        masks = [r.get("format") in MASK_FORMATS for r in rows]
        if any(masks) and not all(masks):
            form_error(rows_prop, "import semantic masks on their own: every export a mask format, or none")
        if any(masks):
            return self._mask_inputs(ctx, inputs)
        target_inputs(ctx, inputs, ID_FIELD)
        inputs.enum("match_by", [*MATCH_BY, "task"], default="file_name", label="Match images by",
                    view=types.RadioGroup(), description="task: Label Studio's task id")
        inputs.bool("predictions", default=False, label="Label Studio predictions as raters (one per model version)")
        names_prop = inputs.str("rater_names", label="Rater names (optional)",
                                description="Rename the raters a Label Studio or CVAT project export names itself: "
                                            "1=alice,2=bob (Label Studio user ids or emails, CVAT raters)")
        try:
            parse_rater_names(p.get("rater_names"))
        except ValueError as e:
            form_error(names_prop, str(e))
        field_prop = inputs.str("label_field", default="raters", label="Label field (prefix)")
        if not FIELD_NAME_RE.match(p.get("label_field", "raters") or ""):
            form_error(field_prop, "start with a letter; letters, digits and _ only")
        inputs.str("label_key", label="Label kind (optional)",
                   description="Where a format gives several kinds of labels: detections, segmentations, "
                               "polylines, keypoints, ...")
        return types.Property(inputs, view=types.View(label="KaLOS: import one export per rater"))

    def _mask_inputs(self, ctx, inputs):
        """The rest of the form for semantic masks: one Segmentation field per rater."""
        p = ctx.params
        target_inputs(ctx, inputs, ID_FIELD)
        inputs.str("mask_dir", label="Folder for the class-map PNGs (optional)",
                   description="Default: under FiftyOne's dataset directory; never inside the exports")
        inputs.str("classes", label="Class names (optional)",
                   description="In index order, comma-separated (value 0 = the first); default: the export's "
                               "labels (CVAT labelmap, Label Studio brush labels), else each value found")
        inputs.int("ignore", label="Void value (optional)", description="e.g. 255: allowed beyond the classes")
        names_prop = inputs.str("rater_names", label="Rater names (optional)",
                                description="Rename Label Studio annotators: 1=alice,2=bob (user ids or emails)")
        try:
            parse_rater_names(p.get("rater_names"))
        except ValueError as e:
            form_error(names_prop, str(e))
        field_prop = inputs.str("label_field", default="masks", label="Mask field (prefix)")
        if not FIELD_NAME_RE.match(p.get("label_field", "masks") or ""):
            form_error(field_prop, "start with a letter; letters, digits and _ only")
        return types.Property(inputs, view=types.View(label="KaLOS: import one export per rater"))

    def _execute_masks(self, ctx, new, target, rows):
        p = ctx.params
        names = {os.path.basename(os.path.normpath(r["path"])): str(r["rater"]).strip() for r in rows
                 if r.get("format") == MASK_FOLDERS and str(r.get("rater") or "").strip()}
        names.update(parse_rater_names(p.get("rater_names")))
        steps = mask_import_steps(target, [r["path"] for r in rows], p.get("label_field") or "masks",
                                  p.get("mask_dir") or None, p.get("classes") or None, p.get("ignore"),
                                  next((r["data_path"] for r in rows if r.get("data_path")), None),
                                  rater_names={k: v for k, v in names.items() if k != v} or None)
        dataset, n, n_masks = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: import failed")
        yield from imported(ctx, dataset, new, n, n_masks)
        fields = sorted(dataset.info["kalos_import"]["mask_fields"])
        yield import_card(ctx, dataset, n, n_masks, [("Segmentation fields", ", ".join(fields))],
                          next_step="Run 'KaLOS: semantic masks' (compute_mask_agreement) on the Segmentation fields.")

    def execute(self, ctx):
        p = ctx.params
        new, target = import_target(ctx)
        if any(isinstance(r, dict) and r.get("format") in VIDEO_FORMATS for r in p.get("exports") or []):
            steps = video_steps(target, p.get("exports") or [], label_field=p.get("label_field", "raters"),
                                frame_size=p.get("frame_size") or None)
            dataset, n, n_labels = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: import failed")
            yield from imported(ctx, dataset, new, n, n_labels, what="videos")
            yield import_card(ctx, dataset, n, n_labels, what="Videos",
                              next_step="Run 'KaLOS: video agreement' on the frames.* rater fields.")
            return
        rows = [r for r in p.get("exports") or [] if isinstance(r, dict)]
        if rows and all(r.get("format") in MASK_FORMATS for r in rows):
            yield from self._execute_masks(ctx, new, target, rows)
            return
        options = {"label_types": p["label_key"]} if p.get("label_key") in ("segmentations", "keypoints") else {}
        steps = exports_steps(target, p.get("exports") or [], p.get("match_by", "file_name"),
                              p.get("label_field", "raters"), p.get("label_key") or None,
                              p.get("on_existing", "error"), predictions=p.get("predictions", False),
                              rater_names=p.get("rater_names"), **options)
        dataset, n, n_labels, left = yield from report_errors(ctx, drive(ctx, steps), "KaLOS: import failed")
        note = ", ".join(f"{v} {k}" for k, v in left.items() if v)
        yield from imported(ctx, dataset, new, n, n_labels, f"; left out {note}" if note else "")
        yield import_card(ctx, dataset, n, n_labels, [("Left out", note or "nothing")])
