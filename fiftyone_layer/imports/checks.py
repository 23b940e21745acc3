"""Checks of an export's own files before FiftyOne's importer reads them.

FiftyOne's importers stop on a bad file with the parser's bare error (``ExpatError``, ``not enough
values to unpack``, ``UnicodeDecodeError``), or read it wrongly without a word: a YOLO class index
outside the names list becomes the label ``"5"`` (``-1`` the last name), two COCO images sharing an
id give one image both images' boxes, a CVAT video export reads as no labels. :func:`check_export`
reads the files of the formats where that happens and raises :class:`ImportRefused` naming the
file, the image / element / line and the fix; other formats go to the importer as they are.
"""

from __future__ import annotations

import glob
import math
import os
import xml.etree.ElementTree as ET

from kalos_core.io import InvalidInputError
from kalos_core.io.jsonfile import read_json

from .errors import ImportRefused

#: CVAT shapes with their coordinates in ``points`` (x,y;x,y;...) and the fewest points each needs
_POINT_SHAPES = {"polygon": 3, "polyline": 2, "points": 1}
_BOX_KEYS = ("xtl", "ytl", "xbr", "ybr")


def read_text(path: str) -> str:
    """A labels file as text: UTF-8 (a byte-order mark allowed), else refused naming the file and offset."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ImportRefused(f"is not UTF-8 text (byte {e.start}: {e.object[e.start:e.start + 1]!r})", path,
                            fix="save it as UTF-8 (the tools' own exports are)") from None


def load_json(path: str):
    """A JSON labels file, refused with the parser's line and column (or the encoding) in one line."""
    try:
        return read_json(path)
    except InvalidInputError as e:
        raise ImportRefused(" ".join(str(e).split())) from None


def _numbers(values, count=None) -> list[float] | None:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    if (count is not None and len(out) != count) or not all(map(math.isfinite, out)):
        return None
    return out


def check_cvat_xml(path: str) -> dict:
    """A CVAT for images 1.1 XML: well-formed, not a video export, every shape's numbers whole;
    ``{"occluded": whether its shapes say occluded="0" or "1"}`` (CVAT's own exports do)."""
    read_text(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ImportRefused(f"is not complete XML ({e})", path,
                            fix="the file is cut short, damaged or not a CVAT export: export it from CVAT again") \
            from None
    tracks = root.findall("track")
    if tracks:
        raise ImportRefused(f"is a CVAT video export ({len(tracks)} <track> elements, e.g. track "
                            f"{tracks[0].get('id')!r} labelled {tracks[0].get('label')!r}); an image import reads no tracks",
                            path, fix="import it as CVATVideoDataset into a video dataset (one frame field per rater), "
                                      "or export the task as 'CVAT for images 1.1'")
    occluded, names = False, {}
    for image in root.iter("image"):
        where = f"image {image.get('name')!r}"
        first = names.setdefault(image.get("name"), image.get("id"))
        if first != image.get("id") and image.get("task_id") is None:   # a project export: after its renaming
            raise ImportRefused(f"images {first!r} and {image.get('id')!r} have the same name {image.get('name')!r}: "
                                "their labels cannot be told apart", path,
                                fix="give every image its own file name (rename one and export again)")
        if _numbers([image.get("width"), image.get("height")], 2) is None:
            raise ImportRefused(f"has no numeric width/height ({image.get('width')!r} x {image.get('height')!r})",
                                path, where, fix="export the file from CVAT again")
        for shape in image:
            label = f"{where}, <{shape.tag}> labelled {shape.get('label')!r}"
            occluded = occluded or shape.get("occluded") is not None
            if shape.tag == "box" and _numbers([shape.get(k) for k in _BOX_KEYS], 4) is None:
                got = ", ".join(f"{k}={shape.get(k)!r}" for k in _BOX_KEYS)
                raise ImportRefused(f"a box corner is missing or not a number ({got})", path, label,
                                    fix="draw the box again in CVAT, or remove it")
            if shape.tag in _POINT_SHAPES:
                pairs = [p.split(",") for p in (shape.get("points") or "").split(";") if p.strip()]
                bad = next((p for p in pairs if _numbers(p, 2) is None), None)
                if bad is not None or len(pairs) < _POINT_SHAPES[shape.tag]:
                    what = f"the point {','.join(bad)!r} is not two numbers" if bad is not None else \
                        f"{len(pairs)} point(s), fewer than a {shape.tag} has"
                    raise ImportRefused(f"{what} (points={shape.get('points')!r})", path, label,
                                        fix=f"draw the {shape.tag} again in CVAT, or remove it")
    return {"occluded": occluded}


def check_coco_json(path: str) -> None:
    """A per-rater COCO export: readable JSON, one image per id, boxes of four numbers."""
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise ImportRefused("is not a COCO export (a JSON object with an images list)", path,
                            fix="give the COCO json the tool exported")
    seen: dict = {}
    for im in data["images"]:
        if not isinstance(im, dict):
            continue
        first = seen.setdefault(im.get("id"), im)
        if first is not im:
            raise ImportRefused(f"images {first.get('file_name')!r} and {im.get('file_name')!r} share the id "
                                f"{im.get('id')!r}: the annotations of that id cannot be told apart", path,
                                fix="give every image its own id (export the file again)")
    categories = {c.get("id") for c in data.get("categories") or [] if isinstance(c, dict)}
    for a in data.get("annotations") or []:
        if isinstance(a, dict) and a.get("category_id") not in categories:
            raise ImportRefused(f"its category_id {a.get('category_id')!r} is not among the file's categories "
                                f"({', '.join(map(str, sorted(categories, key=str))) or 'none'})", path,
                                f"annotation {a.get('id')!r} of image {a.get('image_id')!r}",
                                fix="add that category to the file's categories, or correct the annotation")
        if isinstance(a, dict) and "bbox" in a and _numbers(a["bbox"] or (), 4) is None:
            raise ImportRefused(f"its bbox {a['bbox']!r} is not four numbers (x, y, width, height)", path,
                                f"annotation {a.get('id')!r} of image {a.get('image_id')!r}",
                                fix="correct or remove that annotation")


def _yolo_classes(path: str, format_name: str) -> list | None:
    """The class names of a YOLO export (None when it names none: indices are then the labels)."""
    if format_name == "YOLOv4Dataset":
        names = os.path.join(path, "obj.names")
        return [n.strip() for n in read_text(names).splitlines() if n.strip()] if os.path.isfile(names) else None
    from .yolov5 import _classes, _yaml_path

    yaml_file = _yaml_path(path)
    if yaml_file is None:
        return None
    import yaml

    return _classes((yaml.safe_load(read_text(yaml_file)) or {}).get("names"))


def check_yolo_line(parts: list[str], classes) -> str | None:
    """Why one YOLO label line cannot be read (None when it can): a class index and 4 numbers
    (a 5th, a confidence, allowed; polygons: pairs of numbers)."""
    if len(parts) < 5 or (len(parts) > 6 and len(parts) % 2 == 0):
        return f"{len(parts)} fields, not 'class x_center y_center width height' (or a class and point pairs)"
    if _numbers(parts[1:]) is None:
        return "a coordinate is not a number"
    try:
        index = int(parts[0])
    except ValueError:
        return f"class {parts[0]!r} is not a whole number"
    if index < 0 or (classes is not None and index >= len(classes)):
        known = f"0..{len(classes) - 1}" if classes else "none"
        return f"class index {index} is outside the export's class names ({known})"
    return None


def check_yolo(path: str, format_name: str) -> None:
    """Every labels file of a YOLO export (folder or YAML): UTF-8, each line readable, each class named."""
    classes = _yolo_classes(path, format_name)
    root = os.path.dirname(path) if os.path.isfile(path) else path
    files = [f for f in glob.glob(os.path.join(root, "**", "*.txt"), recursive=True)
             if os.path.dirname(f) != os.path.normpath(root)   # top-level .txt: YOLOv4's image lists
             and (format_name != "YOLOv5Dataset" or "labels" in os.path.relpath(f, root).split(os.sep))]
    for f in sorted(files):
        for n, line in enumerate(read_text(f).splitlines(), 1):
            why = check_yolo_line(line.split(), classes) if line.strip() else None
            if why:
                raise ImportRefused(f"{why}: {line.strip()[:80]!r}", f, f"line {n}",
                                    fix="correct the line, or give the export's class names (dataset.yaml names / "
                                        "obj.names)")


def check_export(path: str, format_name: str) -> dict:
    """Refuse an export FiftyOne's importer would read wrongly or stop on with a bare error; what the
    checks learnt of it (CVAT: ``occluded``, see :func:`check_cvat_xml`)."""
    labels = path if os.path.isfile(path) else None
    if format_name == "CVATImageDataset":
        labels = labels or os.path.join(path, "labels.xml")
        return check_cvat_xml(labels) if os.path.isfile(labels) else {}
    elif format_name == "COCODetectionDataset":
        labels = labels or os.path.join(path, "labels.json")
        if os.path.isfile(labels):
            check_coco_json(labels)
    elif format_name in ("YOLOv4Dataset", "YOLOv5Dataset"):
        check_yolo(path, format_name)
    return {}
