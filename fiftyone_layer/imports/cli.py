"""The import command line: one export per rater (any format FiftyOne reads), CVAT replica jobs or
project exports, a Label Studio project export, or a multi-rater COCO json, into a FiftyOne dataset.

From a clone: ``python -m fiftyone_layer.imports NEW_DATASET --rater alice alice.json
COCODetectionDataset --rater bob bob.json COCODetectionDataset`` (video: ``--rater alice alice/ MOT
VIDEOS`` or ``CVATVideoDataset``, ``--frame-size``; ``--cvat``, ``--label-studio``,
``--coco``, ``--yolo``; ``--rater-names "1=alice,2=bob"`` names Label Studio's users or CVAT's tasks).
Semantic masks: ``--masks RATER_DIR RATER_DIR ...`` (or ``--masks brush.json``, a Label Studio export),
one ``fo.Segmentation`` field per rater (:mod:`.masks`; ``--mask-dir``, ``--classes``, ``--ignore``,
``--images``). A refusal
is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from .exports import MATCH_BY
from .rater_exports import parse_rater_names

USAGE_ERROR = 2


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m fiftyone_layer.imports",
                                 description="Import annotation-tool exports into a FiftyOne dataset, one "
                                             "label field per rater.")
    ap.add_argument("dataset", help="dataset name (loaded if it exists, else created)")
    ap.add_argument("--rater", nargs="+", action="append", default=[], metavar="NAME PATH FORMAT [IMAGES]",
                    help="one export: rater name, labels file or folder, fiftyone.types name (video: MOT or "
                         "CVATVideoDataset), images (videos) folder")
    ap.add_argument("--frame-size", metavar="WxH", help="video exports: the frame size of videos whose size "
                                                        "FiftyOne's metadata does not give (e.g. 1920x1080)")
    ap.add_argument("--cvat", nargs="+", default=[], metavar="XML",
                    help="CVAT image XML exports, one per replica job (rater: the job's assignee, else its id), "
                         "or one project export whose tasks annotate the same frames (one rater per task)")
    ap.add_argument("--label-studio", metavar="JSON", help="a Label Studio project export: every annotator")
    ap.add_argument("--coco", metavar="JSON", help="a multi-rater COCO json (images[].rater_list, "
                                                   "annotations[].rater_id)")
    ap.add_argument("--yolo", metavar="FOLDER", help="per-rater YOLO folders FOLDER/<rater>/<stem>.txt (class names "
                                                     "in FOLDER/classes.txt)")
    ap.add_argument("--masks", nargs="+", metavar="PATH",
                    help="semantic masks: one folder per rater (PNG / .npy class maps, or CVAT 'Segmentation mask' "
                         "exports), or one Label Studio JSON export of brush masks; one Segmentation field per rater")
    ap.add_argument("--mask-dir", help="--masks: where the class-map PNGs are written (default: under FiftyOne's "
                                       "dataset directory; never inside the exports)")
    ap.add_argument("--classes", help="--masks: class names in index order, comma-separated (value 0 = the first)")
    ap.add_argument("--ignore", type=int, help="--masks: the void value (e.g. 255), allowed beyond the classes")
    ap.add_argument("--images", help="--masks into a new dataset: the images folder (matched by file name stem; "
                                     "without it, blank placeholders of the masks' size)")
    ap.add_argument("--skip-invalid", action="store_true",
                    help="--coco, --yolo: leave out invalid annotations (counted) instead of refusing the file")
    ap.add_argument("--rater-names", metavar="KEY=NAME,...",
                    help='rename the raters an export names itself: "1=alice,2=bob" (Label Studio user ids or '
                         "emails, CVAT raters)")
    ap.add_argument("--agreement", metavar="RUN_KEY", nargs="?", const="kalos",
                    help="then compute agreement on the imported rater fields (the plugin's compute_agreement; video: "
                         "compute_video_agreement "
                         "with its defaults, stored as run RUN_KEY, default kalos; the plugin installed in FiftyOne)")
    ap.add_argument("--match-by", choices=MATCH_BY + ("task",), default="file_name")
    ap.add_argument("--label-field", help="the rater fields' prefix (default: raters; masks with --masks)")
    ap.add_argument("--label-key")
    ap.add_argument("--traceback", action="store_true", help="show the Python traceback of a failure")
    return ap


def run(args) -> str:
    """Import as ``args`` say; the summary line."""
    from . import import_multirater_coco, import_multirater_yolo, import_rater_exports
    from .masks import import_masks
    from .rater_exports import LABEL_STUDIO
    from .video import VIDEO_FORMATS, import_video_exports

    if args.masks:
        ds = import_masks(args.dataset, args.masks, args.label_field or "masks", args.mask_dir, args.classes,
                          args.ignore, args.images, rater_names=parse_rater_names(args.rater_names))
        ds.persistent = True
        fields = sorted(ds.info["kalos_import"]["mask_fields"])
        return (f"{ds.name}: {len(ds)} samples; Segmentation fields {fields} (run the plugin's "
                "compute_mask_agreement on them)")
    args.label_field = args.label_field or "raters"
    video = [r for r in args.rater if r[2] in VIDEO_FORMATS]
    if video and (len(video) < len(args.rater) or args.cvat or args.label_studio):
        from .errors import ImportRefused

        raise ImportRefused("video exports (MOT, CVATVideoDataset) and image exports in one import",
                            fix="import the video exports alone")
    if video:
        ds = import_video_exports(args.dataset, [tuple(r) for r in video], label_field=args.label_field,
                                  frame_size=args.frame_size)
    elif args.yolo:
        ds = import_multirater_yolo(args.dataset, args.yolo, label_field=args.label_field, skip_invalid=args.skip_invalid)
    elif args.coco:
        ds = import_multirater_coco(args.dataset, args.coco, label_field=args.label_field,
                                    skip_invalid=args.skip_invalid)
    else:
        exports = [tuple(r) for r in args.rater] + [(None, x, "CVATImageDataset") for x in args.cvat]
        exports += [(None, args.label_studio, LABEL_STUDIO)] if args.label_studio else []
        ds = import_rater_exports(args.dataset, exports, args.match_by, args.label_field, args.label_key,
                                  rater_names=parse_rater_names(args.rater_names))
    ds.persistent = True
    info = ds.info["kalos_import"]
    left = ", ".join(f"{v} {k}" for k, v in info.get("left_out", {}).items() if v)
    fields = sorted(info.get("rater_fields") or info.get("attribute_fields") or {})
    if video:
        line = f"{ds.name}: {len(ds)} samples (videos); rater fields {fields}"
        return line + ("\n" + agreement(ds, fields, args.agreement, VIDEO_AGREEMENT_URI) if args.agreement else "")
    line = f"{ds.name}: {len(ds)} samples; rater fields {fields}" + (f"; left out {left}" if left else "")
    if args.agreement:
        line += "\n" + agreement(ds, sorted(info.get("rater_fields") or {}), args.agreement)
    return line


#: the plugin's agreement operator, as FiftyOne lists it once the plugin is installed
AGREEMENT_URI = "@kalos/agreement/compute_agreement"
VIDEO_AGREEMENT_URI = "@kalos/agreement/compute_video_agreement"


def agreement(ds, fields: list, run_key: str, uri: str = AGREEMENT_URI) -> str:
    """The agreement run on the imported fields through the installed plugin's operator; its summary."""
    import fiftyone.operators as foo

    from .errors import ImportRefused

    try:
        op = foo.get_operator(uri)
    except ValueError:
        raise ImportRefused(f"imported, but FiftyOne finds no {uri} operator for --agreement",
                            fix="install the plugin (FIFTYONE_PLUGINS_DIR: a folder holding this clone) and run "
                                "the agreement in the App or again with --agreement") from None
    if not fields:
        raise ImportRefused("imported into one field (rater_attribute layout): --agreement reads one field per "
                            "rater", fix="run the agreement in the App on that field")
    result = op(ds, rater_fields=fields, run_key=run_key)
    kind = "video agreement" if uri == VIDEO_AGREEMENT_URI else "agreement"
    return (f"{kind} run {run_key!r} on {len(fields)} rater fields: mean alpha {result.mean_alpha:.4f}, "
            f"global alpha {result.global_alpha:.4f} (open the App on {ds.name!r} to review)")


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if any(len(r) not in (3, 4) for r in args.rater) or not (args.rater or args.cvat or args.label_studio
                                                                 or args.coco or args.yolo or args.masks):
        ap.error("give --rater NAME PATH FORMAT [IMAGES] (once per rater), --cvat XML ..., --label-studio JSON, "
                 "--coco JSON, --yolo FOLDER or --masks PATH ...")
    if sum(map(bool, (args.coco, args.yolo, args.masks, args.rater or args.cvat or args.label_studio))) > 1:
        ap.error("--coco, --yolo and --masks are one input each: import each alone")
    if args.masks and args.agreement:
        ap.error("--agreement runs compute_agreement on label lists; run compute_mask_agreement on the mask fields")
    try:
        print(run(args))
    except Exception as e:   # one line, never a traceback (--traceback shows it)
        if args.traceback:
            raise
        message = str(e) if isinstance(e, (ValueError, OSError)) else f"{type(e).__name__}: {e}"
        print(f"error: {' '.join(message.split())}", file=sys.stderr)
        return USAGE_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
