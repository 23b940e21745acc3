"""A YOLOv5 export read with or without its images.

FiftyOne's YOLOv5 importer lists the images of the split named in ``dataset.yaml`` and finds each
labels file from an image's path (``images/`` -> ``labels/``, ``.txt``), so an export whose images
are not on this machine (or one written with ``export_media=False``, which writes no
``dataset.yaml``) reads as empty. Where the importer finds images it does the reading; otherwise
every labels file of the split is read with FiftyOne's own YOLO reader, its image named by the
labels file's stem (so such exports are matched by stem).
"""

from __future__ import annotations

import glob
import os

import yaml

from .errors import ImportRefused

_YAML_NAMES = ("dataset.yaml", "data.yaml")


def _yaml_path(path: str) -> str | None:
    if os.path.isfile(path):
        return path
    return next((p for n in _YAML_NAMES if os.path.isfile(p := os.path.join(path, n))), None)


def _classes(names):
    """dataset.yaml's ``names``: a list, or a {index: name} dict (YOLOv8 style)."""
    if isinstance(names, dict):
        return [names[k] for k in sorted(names)]
    return list(names) if names else None


def _labels_dirs(path: str, yaml_file: str | None, d: dict, split: str) -> list[str]:
    """The split's labels folders (``d``: dataset.yaml's content): its image folders with ``images``
    replaced by ``labels``."""
    if yaml_file is None:
        split_dir = os.path.join(path, "labels", split)
        return [split_dir if os.path.isdir(split_dir) else os.path.join(path, "labels")]
    if split not in d:
        raise ImportRefused(f"{yaml_file} names no split {split!r} (it has {sorted(k for k in d if k != 'names')})")
    base = os.path.join(os.path.dirname(yaml_file), d.get("path") or "")
    out = []
    for entry in [d[split]] if isinstance(d[split], str) else d[split]:
        parts = os.path.normpath(os.path.join(base, entry)).split(os.sep)
        if "images" in parts:
            parts[len(parts) - 1 - parts[::-1].index("images")] = "labels"
        out.append(os.sep.join(parts))
    return out


def yolov5_items(path: str, match_by: str, root: str, split: str = "val", classes=None, **options):
    """(image path, metadata, label) of every labelled image of a YOLOv5 export (folder or its YAML)."""
    from fiftyone.utils import yolo as fouy

    yaml_file = _yaml_path(path)
    folder = os.path.dirname(yaml_file) if os.path.isfile(path) else path
    d: dict = {}
    if yaml_file is not None:
        importer = fouy.YOLOv5DatasetImporter(yaml_path=yaml_file, split=split, **options)
        with importer:
            items = list(importer)
        if items:
            yield from items
            return
        with open(yaml_file) as f:
            d = yaml.safe_load(f) or {}
        classes = classes or _classes(d.get("names"))
    if match_by != "stem":
        raise ImportRefused(f"{path}: the images of this YOLOv5 export are not here, and its labels files do not "
                         "say the images' file names: match by stem")
    files = sorted(f for dirname in _labels_dirs(folder, yaml_file, d, split)
                   for f in glob.glob(os.path.join(dirname, "**", "*.txt"), recursive=True))
    if not files:
        raise ImportRefused(f"{path}: no YOLOv5 labels files (labels/{split}/*.txt) found")
    label_type = options.get("label_type", "detections")
    for f in files:
        stem = os.path.splitext(os.path.basename(f))[0]
        yield os.path.join(root, stem), None, fouy.load_yolo_annotations(f, classes, label_type=label_type)
