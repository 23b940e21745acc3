"""Per-rater semantic masks into a FiftyOne image dataset: one ``fo.Segmentation`` field per rater.

Python: :func:`import_masks`; command line: ``python -m fiftyone_layer.imports DATASET --masks ...``.

The input is what ``python -m kalos_core masks`` reads, through the engine's own readers
(:mod:`kalos_core.masks.reader`, :mod:`kalos_core.masks.label_studio`): two or more folders, one per
rater (the folder name is the rater), of class maps (8/16-bit PNG or ``.npy``, value = class index)
or CVAT "Segmentation mask" exports (``labelmap.txt`` + colour-coded ``SegmentationClass/*.png``);
or one Label Studio JSON export of brush masks (one rater per annotator).

What is written: ``<label_field>_<rater>`` per rater, an ``fo.Segmentation`` whose ``mask_path`` is
a class-map PNG (8-bit, 16-bit past 256 classes; value = class index, CVAT's colours turned into
their indices) written under ``mask_dir`` (default ``<FiftyOne dataset dir>/kalos_masks/<dataset>``),
never into the export folders and never over a file that exists; None where the rater has no mask
of the image (missing, not "background"). Masks are stored as files rather than in the database
(``Segmentation.mask``) because a megapixel map per rater per image would fill the sample
document (MongoDB's 16 MB limit) and slow every query. The class names go into the dataset's
``mask_targets`` for each field (CVAT's labelmap, Label Studio's brush labels, ``classes`` where
given, else each value found, named by itself). ``dataset.info["kalos_import"]["mask_fields"]``
maps each field to its rater.

Matching: into a dataset that has samples, each mask image is the sample whose file name has the
same stem (``img1.png`` -> the sample ``/data/img1.jpg``); into a new or empty dataset, one sample
per image: the file of that stem in ``images_dir`` where given, else a blank placeholder of the
mask's size. Refused before anything is written (files or database), naming the file, image or
annotator and the fix: whatever the engine's readers refuse, masks of an image of different sizes,
values beyond the classes (other than ``ignore``), volumes (3D ``.npy``), an image stem matching no
sample or two, a mask whose size differs from its sample's metadata, a field that exists already,
a mask file that exists already, and a ``mask_dir`` inside an export folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import fiftyone as fo
import numpy as np

from kalos_core.masks.label_studio import read_label_studio_brush
from kalos_core.masks.reader import check_image, load_mask, read_mask_folders
from kalos_core.progress import run_steps

from ..names import FIELD_NAME_RE
from ..placeholders import Placeholders, default_folder
from .errors import ImportRefused
from .schema import RESERVED, field_names

#: the format names the App's import form offers for masks
MASK_FOLDERS = "KalosMaskFolders"
LABEL_STUDIO_BRUSH = "LabelStudioBrushJSON"
MASK_FORMATS = (MASK_FOLDERS, LABEL_STUDIO_BRUSH)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".webp")


def default_mask_dir(dataset_name: str) -> str:
    """``<FiftyOne dataset dir>/kalos_masks/<dataset name>``."""
    return os.path.join(fo.config.default_dataset_dir, "kalos_masks", dataset_name)


def _read(paths, classes):
    """(categories, ``{rater: {image: array or path}}``) through the engine's readers; refusals as ImportRefused."""
    paths = [Path(p) for p in paths]
    try:
        if len(paths) == 1 and paths[0].suffix.lower() == ".json":
            data, masks = read_label_studio_brush(paths[0], classes)
        else:
            data, masks = read_mask_folders(paths)
    except ValueError as e:
        raise ImportRefused(" ".join(str(e).split())) from None
    return data.categories, masks


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _samples_by_stem(dataset) -> dict:
    """Existing samples: stem -> (id, width, height); two samples of one stem refused."""
    ids, paths, widths, heights = dataset.values(["id", "filepath", "metadata.width", "metadata.height"])
    out: dict = {}
    for sid, path, w, h in zip(ids, paths, widths, heights):
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in out:
            raise ImportRefused(f"two samples of dataset {dataset.name!r} have the file name stem {stem!r}: a mask "
                                f"{stem}.png cannot tell them apart", fix="import into a new dataset, or rename one "
                                "of the images")
        out[stem] = (sid, w, h)
    return out


def _check_masks(masks: dict, names: dict, declared, ignore):
    """Load every mask once (the engine's checks); ``{image: (height, width)}`` and the values seen."""
    shapes, seen = {}, set()
    for image in sorted({i for m in masks.values() for i in m}):
        maps = {}
        for rater, by_image in masks.items():
            if image not in by_image:
                continue
            source = by_image[image]
            what = f"image {image!r}, rater {rater!r}" if isinstance(source, np.ndarray) else None
            try:
                maps[rater] = load_mask(source, what)
            except ValueError as e:
                raise ImportRefused(" ".join(str(e).split())) from None
            if maps[rater].ndim != 2:
                raise ImportRefused(f"a volume of shape {maps[rater].shape}; a Segmentation field holds 2D class maps",
                                    getattr(source, "path", source) if what is None else None, what,
                                    fix="measure volumes with python -m kalos_core masks, or import them as slices")
        try:
            check_image(image, maps, declared, ignore)
        except ValueError as e:
            raise ImportRefused(" ".join(str(e).split())) from None
        shapes[image] = next(iter(maps.values())).shape
        for m in maps.values():
            seen.update(np.flatnonzero(np.bincount(m.ravel().astype(np.int64))).tolist())
    return shapes, seen


def mask_import_steps(dataset_or_name, paths, label_field="masks", mask_dir=None, classes=None, ignore=None,
                      images_dir=None, placeholders=True, rater_names=None):
    """Generator of ``(fraction, message)`` steps of :func:`import_masks`; returns (dataset, n images, n masks)."""
    if not isinstance(label_field, str) or not FIELD_NAME_RE.match(label_field):
        raise ImportRefused(f"label_field must start with a letter and hold only letters, digits and _: "
                            f"{label_field!r}")
    classes = [c.strip() for c in classes.split(",")] if isinstance(classes, str) else classes
    classes = tuple(classes) if classes else None
    if classes and ignore is not None and int(ignore) < len(classes):
        raise ImportRefused(f"ignore {ignore} is the index of class {classes[int(ignore)]!r}",
                            fix="give a void value beyond the classes (e.g. 255)")
    paths = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    yield 0.0, f"reading {len(paths)} export(s)"
    categories, masks = _read(paths, classes)
    if rater_names:   # a Label Studio user's bare id "3" also names "user 3"
        names = {(k if k in masks or f"user {k}" not in masks else f"user {k}"): v for k, v in rater_names.items()}
        unknown = sorted(set(names) - set(masks))
        if unknown:
            raise ImportRefused(f"rater_names names {unknown[0]!r}, which no export holds (raters read: "
                                f"{', '.join(sorted(masks))})", fix="give the folder name or Label Studio annotator")
        renamed = [names.get(r, r) for r in masks]
        twice = sorted({n for n in renamed if renamed.count(n) > 1})
        if twice:
            raise ImportRefused(f"rater_names gives two raters the name {twice[0]!r}", fix="give each rater its own name")
        masks = dict(zip(renamed, masks.values()))
    names = dict(enumerate(classes)) if classes else categories
    yield 0.1, "checking the masks"
    shapes, seen = _check_masks(masks, names, len(names) or None, ignore)
    targets = {int(k): str(v) for k, v in names.items()} if names else \
        {v: str(v) for v in sorted(seen) if v != ignore}

    dataset = dataset_or_name
    if isinstance(dataset, str) and fo.dataset_exists(dataset):
        dataset = fo.load_dataset(dataset)
    name = dataset if isinstance(dataset, str) else dataset.name
    plan = field_names({}, label_field, ["masks"], "rater_fields", list(masks))["masks"]
    if RESERVED & set(plan.values()):
        raise ImportRefused(f"a rater field would be named like a reserved field ({sorted(plan.values())})",
                            fix="choose another label_field")
    existing = {} if isinstance(dataset, str) else _samples_by_stem(dataset)
    if not isinstance(dataset, str):
        taken = [f for f in plan.values() if dataset.has_sample_field(f)]
        if taken:
            raise ImportRefused(f"field {taken[0]!r} exists in dataset {name!r}; an import never writes over a field",
                                fix="choose another label_field, or delete that field first")
    if existing:
        unmatched = sorted(set(shapes) - set(existing))
        if unmatched:
            raise ImportRefused(f"{len(unmatched)} mask image(s) match no sample of dataset {name!r} by file name stem "
                                f"(e.g. {unmatched[:3]})", fix="import those images first, leave their masks out, or "
                                "import into a new dataset")
        for image, (h, w) in shapes.items():
            _, sw, sh = existing[image]
            if sw and sh and (sw, sh) != (w, h):
                raise ImportRefused(f"the masks of image {image!r} are {w}x{h} but its sample's image is {sw}x{sh}",
                                    fix="export the masks at the images' size")
    folder = os.path.abspath(mask_dir or default_mask_dir(name))
    sources = [p for p in paths if os.path.isdir(p)]   # a Label Studio export is one file, never written
    inside = next((s for s in sources if _inside(folder, s)), None)
    if inside:
        raise ImportRefused(f"mask_dir {folder} is inside the export folder {inside}; the import never writes there",
                            fix="choose a mask_dir outside the exports")
    out = {r: {i: os.path.join(folder, plan[r], f"{i}.png") for i in m} for r, m in masks.items()}
    there = next((p for by in out.values() for p in by.values() if os.path.exists(p)), None)
    if there:
        raise ImportRefused(f"mask file {there} exists already; an import never writes over a file",
                            fix="choose another mask_dir or label_field, or remove the old masks")
    found = {}
    if images_dir and not existing:
        if not os.path.isdir(images_dir):
            raise ImportRefused("no folder at this path", images_dir, fix="give the images folder, or none for "
                                                                          "placeholder images")
        found = {os.path.splitext(f)[0]: os.path.join(images_dir, f) for f in sorted(os.listdir(images_dir))
                 if os.path.splitext(f)[1].lower() in IMAGE_SUFFIXES}

    # every check passed: write the PNGs, then the samples and fields
    from PIL import Image

    total, done = sum(map(len, out.values())), 0
    for rater, by_image in out.items():
        for image, target in by_image.items():
            if done % 50 == 0:
                yield 0.2 + 0.6 * done / max(total, 1), f"writing mask {done + 1}/{total}"
            arr = load_mask(masks[rater][image])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            Image.fromarray(arr.astype(np.uint8 if arr.max(initial=0) < 256 else np.uint16)).save(target)
            done += 1
    yield 0.85, f"writing {len(shapes)} samples"
    dataset = fo.Dataset(dataset) if isinstance(dataset, str) else dataset
    for f in plan.values():
        dataset.add_sample_field(f, fo.EmbeddedDocumentField, embedded_doc_type=fo.Segmentation)
    if existing:
        for r, f in plan.items():
            values = {existing[i][0]: fo.Segmentation(mask_path=p) for i, p in out[r].items()}
            dataset.set_values(f, values, key_field="id")
    else:
        blank = Placeholders(placeholders if isinstance(placeholders, str) else default_folder(f"masks_{name}")) \
            if placeholders else None
        samples = []
        for image, (h, w) in shapes.items():
            path = found.get(image) or (blank.path(image, w, h) if blank else
                                        os.path.join(os.sep, "__kalos_no_images__", "masks", f"{image}.png"))
            fields = {plan[r]: fo.Segmentation(mask_path=out[r][image]) for r in masks if image in out[r]}
            samples.append(fo.Sample(filepath=path, **fields))
        dataset.add_samples(samples, progress=False)
    dataset.mask_targets = {**dataset.mask_targets, **{f: targets for f in plan.values()}}
    info = dataset.info.setdefault("kalos_import", {})
    info.setdefault("mask_fields", {}).update({f: r for r, f in plan.items()})
    info["mask_exports"] = [str(p) for p in paths]
    dataset.save()
    return dataset, len(shapes), total


def import_masks(dataset_or_name, paths, label_field="masks", mask_dir=None, classes=None, ignore=None,
                 images_dir=None, placeholders=True, rater_names=None, progress=None):
    """Import per-rater masks (``paths``: two or more rater folders, or one Label Studio JSON export of
    brush masks) into a dataset (a Dataset, or a name: loaded or created), one ``fo.Segmentation``
    field ``<label_field>_<rater>`` per rater; ``classes``: the class names in index order (a list or
    ``"bg,road,car"``), ``ignore`` the void value, ``rater_names`` renames raters (``{"user 3": "alice"}``).
    See the module docstring for what is written and refused. Returns the dataset."""
    steps = mask_import_steps(dataset_or_name, paths, label_field, mask_dir, classes, ignore, images_dir,
                              placeholders, rater_names)
    return run_steps(steps, progress)[0]
