"""One rater's label export, read by FiftyOne's own importer, with or without the images.

FiftyOne's image importers (COCO, CVAT image XML, VOC, KITTI, YOLO, Open Images, ...) look every
labelled file name up in a map of the files found in the data folder and fail with a bare
``KeyError: '<file name>'`` when the images are not on this machine (labels are often reviewed
away from the image store). :func:`read_export` hands the importer a map that answers every
name: a file present keeps its path, a missing one gets a path under a folder that does not
exist, and the import goes on with the sizes the export itself gives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from xml.parsers.expat import ExpatError

import fiftyone as fo

from .. import rawdocs
from .checks import check_export
from .errors import ImportRefused
from .yolov5 import yolov5_items

#: the label lists a rater field may hold (what the agreement reads)
LABEL_LISTS = (fo.Detections, fo.Polylines, fo.Keypoints)
MATCH_BY = ("file_name", "stem", "path")
#: parent of the paths given to images that are not on this machine (never created)
NO_IMAGES = os.path.join(os.sep, "__kalos_no_images__")
#: importer options used unless the caller gives that option: COCO's default also loads every mask
#: importer options by format: COCO's boxes only; KITTI's 2D boxes without its 3D fields (dimensions,
#: location, rotation_y), which would make the field read as 3D detections (and a 2D-only export
#: writes placeholders there)
DEFAULT_OPTIONS = {"COCODetectionDataset": {"label_types": "detections"},
                   "KITTIDetectionDataset": {"extra_attrs": ["truncated", "occluded", "alpha"]}}


@dataclass
class ExportImage:
    """One image of an export: its key, its file if on this machine, its size if known, its labels."""

    key: str
    path: str | None
    width: float | None
    height: float | None
    labels: object   # an fo.Detections / Polylines / Keypoints, or None (listed, nothing drawn)


class _AnyImage(dict):
    """An importer's name -> image path map that knows every name."""

    def __init__(self, found: dict, root: str) -> None:
        super().__init__(found)
        self.root = root

    def __contains__(self, key) -> bool:
        return True

    def __missing__(self, key) -> str:
        return os.path.join(self.root, key)


def image_types() -> list[str]:
    """Names of the ``fiftyone.types`` of labelled image exports (the formats offered)."""
    base = fo.types.LabeledImageDataset
    return sorted(n for n, c in vars(fo.types).items()
                  if isinstance(c, type) and issubclass(c, base) and c is not base and "Legacy" not in n)


def dataset_type(name):
    """A ``fiftyone.types`` dataset type from its name (``"COCODetectionDataset"``), class or instance."""
    if isinstance(name, str):
        cls = getattr(fo.types, name.rsplit(".", 1)[-1], None)
    else:
        cls = name if isinstance(name, type) else type(name)
    if not (isinstance(cls, type) and issubclass(cls, fo.types.LabeledImageDataset)):   # a name, mostly
        raise ImportRefused(f"format {name!r} is not a labelled image format FiftyOne reads; "
                         f"choose one of {', '.join(image_types())}")
    return cls()


def _key(image_path: str, data_path, match_by: str, root: str) -> str:
    """The image's key; ``root``: where the export's images that are not on this machine are named."""
    base = root if image_path.startswith(root + os.sep) else data_path
    if match_by == "path":
        return os.path.relpath(image_path, base) if base else os.path.basename(image_path)
    name = os.path.basename(image_path)
    return os.path.splitext(name)[0] if match_by == "stem" else name


def _label_list(label, where: str, label_key):
    """The importer's label for one image as one label list (a dict of several: the ``label_key`` one)."""
    if isinstance(label, dict):
        if label_key is None:
            kinds = sorted(k for k, v in label.items() if v is not None)
            if len(kinds) > 1:
                raise ImportRefused(f"{where} holds several kinds of labels ({', '.join(kinds)}); choose one as "
                                 "label_key")
            label = label[kinds[0]] if kinds else None
        else:
            label = label.get(label_key)
    if label is not None and not isinstance(label, LABEL_LISTS):
        raise ImportRefused(f"{where} holds {type(label).__name__} labels; agreement reads "
                         f"{', '.join(c.__name__ for c in LABEL_LISTS)} (choose another label_key or format)")
    return label


def read_export(path: str, format, data_path=None, match_by="file_name", label_key=None, **options) -> dict:
    """``{key: ExportImage}`` of one export: ``path`` a labels file or an export folder, ``format`` a
    ``fiftyone.types`` name; ``data_path`` the images folder if any. Keys are the file names
    (``match_by="stem"``: without extension, ``"path"``: relative to the data folder)."""
    if match_by not in MATCH_BY:
        raise ImportRefused(f"match_by must be one of {MATCH_BY}, got {match_by!r}")
    if not os.path.exists(path):
        raise ImportRefused("no export at this path", path)
    dtype = dataset_type(format)
    facts = check_export(path, type(dtype).__name__)
    if type(dtype).__name__ == "KITTIDetectionDataset" and not data_path:
        raise ImportRefused(f"{path}: KITTI labels hold pixel boxes but no image size: give the images folder "
                         "of this export (its boxes are placed with the images' own sizes)")
    options = {**DEFAULT_OPTIONS.get(type(dtype).__name__, {}), **options}
    # data_path {}: no images folder (not the importer's default <export>/data)
    paths = {"labels_path": path} if os.path.isfile(path) else {"dataset_dir": path}
    root = os.path.join(NO_IMAGES, os.path.splitext(os.path.basename(os.path.normpath(path)))[0])
    out: dict = {}
    try:
        for image_path, meta, label in _items(dtype, path, paths, data_path, root, match_by, options):
            key = _key(image_path, data_path, match_by, root)
            if key in out:
                raise ImportRefused(f"two images of {path} have the key {key!r}: match by "
                                 f"{'path' if match_by != 'path' else 'another key'} instead")
            labels = _label_list(label, f"image {key!r} of {path}", label_key)
            present = os.path.isfile(image_path)
            out[key] = ExportImage(key, image_path if present else None, getattr(meta, "width", None),
                                   getattr(meta, "height", None), labels)
    except ImportRefused:
        raise
    except (KeyError, TypeError, AttributeError, OSError, SyntaxError, ExpatError, ValueError) as e:
        raise ImportRefused(f"FiftyOne's {type(dtype).__name__} importer could not read it ({type(e).__name__}: "
                            f"{e})", path, fix="check that the format is the one the file was exported in") from None
    if facts.get("occluded"):
        _occluded_false(out)
    return out


def _occluded_false(images: dict) -> None:
    """CVAT writes ``occluded="0"`` or ``"1"`` on every shape; FiftyOne's importer keeps only the 1s
    (``occluded=True``): the 0s become ``occluded=False``, so that "not occluded" is a value."""
    for im in images.values():
        if im.labels is None:
            continue
        for label in getattr(im.labels, rawdocs.LIST_NAMES[type(im.labels)]):
            if label.get_field("occluded") is None if label.has_field("occluded") else True:
                label["occluded"] = False


def _items(dtype, path, paths, data_path, root, match_by, options):
    """(image path, metadata, label) of every image of an export, from FiftyOne's importer."""
    if type(dtype).__name__ == "YOLOv5Dataset":
        yield from yolov5_items(path, match_by, root, **options)
        return
    importer = dtype.get_dataset_importer_cls()(data_path=data_path or {}, **paths, **options)
    with importer:
        importer._image_paths_map = _AnyImage(importer._image_paths_map or {}, root)
        yield from importer

