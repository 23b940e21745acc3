"""Per-rater class maps from folders: one folder per rater, one file per image with the same name.

A class map is a 2D (or 3D, ``.npy``) integer array whose values are class indices, as FiftyOne's
segmentation masks are written (8-bit PNG, value = class index; 16-bit PNGs and ``.npy`` arrays
also read). A rater folder holding CVAT's "Segmentation mask" export (``labelmap.txt`` and
``SegmentationClass/*.png``, colour-coded) is read as class maps too: a pixel's class is the
line of ``labelmap.txt`` whose colour it has (the first line, usually ``background``, is 0). Refused, naming the file: an unreadable or empty file, a map that is
not integer-valued or has colour channels, and (:func:`check_image`) maps of one image with
different sizes or holding a value that is neither a declared class nor the ignore value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import MultiRaterDataset, make_image

SUFFIXES = (".png", ".npy")
LABELMAP = "labelmap.txt"


@dataclass(frozen=True)
class ColourMask:
    """A colour-coded mask file and its colours' classes (``(r, g, b)`` -> class index)."""

    path: Path
    colours: tuple    #: ((r, g, b), ...) in class-index order


def read_labelmap(path: Path) -> list[tuple[str, tuple]]:
    """CVAT's ``labelmap.txt``: ``[(label, (r, g, b)), ...]`` in file order ('#' lines skipped);
    ValueError naming the file and line."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(":")
        try:
            label, rgb = parts[0].strip(), tuple(int(v) for v in parts[1].split(","))
            if len(rgb) != 3 or not label:
                raise ValueError
        except (IndexError, ValueError):
            raise ValueError(f"{path}: line {n} is not label:r,g,b:parts:actions ({line.strip()[:60]!r})") from None
        out.append((label, rgb))
    if not out:
        raise ValueError(f"{path}: no label lines; CVAT writes one label:r,g,b:: line per label")
    return out


def _colour_classes(source: ColourMask, what: str) -> np.ndarray:
    from PIL import Image

    with Image.open(source.path) as im:
        rgb = np.asarray(im.convert("RGB")).astype(np.int64)
    code = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    known = np.array([(r << 16) | (g << 8) | b for r, g, b in source.colours], np.int64)
    order = np.argsort(known)
    pos = np.clip(np.searchsorted(known[order], code), 0, len(known) - 1)
    hit = known[order][pos] == code
    if not hit.all():
        c = int(code[~hit][0])
        raise ValueError(f"{what}: colour {(c >> 16, (c >> 8) & 255, c & 255)} at {int((~hit).sum())} pixel(s) is no "
                         f"label of {LABELMAP}; add it there or repaint those pixels")
    classes = order[pos]
    return classes.astype(np.uint8 if len(known) <= 256 else np.uint16)


def load_mask(source, what: str | None = None) -> np.ndarray:
    """The class map in ``source`` (an array, or a .png / .npy path); ValueError naming it."""
    if isinstance(source, ColourMask):
        what = what or str(source.path)
        try:
            if source.path.stat().st_size == 0:
                raise ValueError(f"{what}: empty file; write the rater's mask there or remove the file")
            return _colour_classes(source, what)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - any decoder error is the file's fault: named, one line
            raise ValueError(f"{what}: cannot be read as a colour mask ({type(e).__name__}: {str(e)[:80]})") from None
    if isinstance(source, np.ndarray):
        arr = source
        what = what or "mask"
    else:
        path = Path(source)
        what = what or str(path)
        try:
            if path.stat().st_size == 0:
                raise ValueError(f"{what}: empty file; write the rater's class map there or remove the file")
            if path.suffix.lower() == ".npy":
                arr = np.load(path, allow_pickle=False)
            else:
                from PIL import Image

                with Image.open(path) as im:
                    if im.mode not in ("L", "P", "I", "I;16", "1"):
                        raise ValueError(f"{what}: a {im.mode} image, not a class map; write one 8- or 16-bit "
                                         "channel whose values are class indices")
                    arr = np.asarray(im)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - any decoder error is the file's fault: named, one line
            raise ValueError(f"{what}: cannot be read as a class map ({type(e).__name__}: "
                             f"{str(e)[:80]}); re-export it as an 8-bit PNG or .npy") from None
    if arr.dtype.kind == "b":
        arr = arr.astype(np.uint8)
    if arr.dtype.kind not in "iu" or arr.ndim not in (2, 3) or arr.size == 0:
        raise ValueError(f"{what}: expected a 2D or 3D integer class map, got {arr.dtype} of shape {arr.shape}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise ValueError(f"{what}: negative class value {int(arr.min())}; class values are 0, 1, 2, ...")
    return arr


def check_image(image_id, maps: dict, classes: int | None, ignore: int | None) -> None:
    """Refuse ``maps`` (rater -> array) of one image of different sizes or with unknown values."""
    shapes = {r: m.shape for r, m in maps.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{r} {'x'.join(map(str, s))}" for r, s in shapes.items())
        raise ValueError(f"image {image_id!r}: the raters' masks differ in size ({listed}); "
                         "every rater's mask of an image must have the image's size")
    if classes is None:
        return
    for r, m in maps.items():
        seen = np.flatnonzero(np.bincount(m.ravel().astype(np.int64)))
        bad = [int(v) for v in seen if v >= classes and v != ignore]
        if bad:
            raise ValueError(f"image {image_id!r}, rater {r!r}: class value(s) {bad[:5]} not among the "
                             f"{classes} declared classes (0..{classes - 1})"
                             + ("" if ignore is None else f" nor the ignore value {ignore}")
                             + "; declare them in --classes or set --ignore")


def read_mask_folders(folders: list[Path]) -> tuple[MultiRaterDataset, dict]:
    """Raters' folders (the folder name is the rater) -> the images (every file name found in any
    folder; a rater without the file has no mask there) and ``{rater: {image: path}}``.
    Sizes are read when the masks are (:func:`load_mask`)."""
    masks: dict[str, dict] = {}
    labelmaps: dict[str, list] = {}
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"{folder}: not a folder; give one folder of class maps per rater")
        rater = folder.name
        if rater in masks:
            raise ValueError(f"{folder}: two rater folders named {rater!r}; rename one")
        colours = None
        if (folder / LABELMAP).is_file():     # CVAT's "Segmentation mask" export
            labelmaps[rater] = read_labelmap(folder / LABELMAP)
            colours = tuple(rgb for _, rgb in labelmaps[rater])
            folder = folder / "SegmentationClass"
            if not folder.is_dir():
                raise ValueError(f"{folder}: missing; CVAT's Segmentation mask export keeps the class masks there")
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file())
        if colours is not None:
            files = [p for p in files if p.suffix.lower() == ".png"]
        stems = [p.stem for p in files]
        twice = sorted({s for s in stems if stems.count(s) > 1})
        if twice:
            raise ValueError(f"{folder}: {twice[0]!r} is there as both .png and .npy; keep one")
        masks[rater] = {p.stem: (ColourMask(p, colours) if colours is not None else p) for p in files}
    if len(masks) < 2:
        raise ValueError(f"need at least two rater folders, got {len(masks)}")
    names = sorted({s for m in masks.values() for s in m})
    if not names:
        raise ValueError(f"no .png or .npy class maps in {', '.join(map(str, folders))}")
    images = [make_image(n, 0, 0, [r for r in masks if n in masks[r]], file_name=n) for n in names]
    labels = {tuple(label for label, _ in m) for m in labelmaps.values()}
    if len(labels) > 1 or (labelmaps and len(labelmaps) < len(masks)):
        listed = "; ".join(f"{r}: {', '.join(label for label, _ in m)}" for r, m in labelmaps.items())
        raise ValueError(f"the raters' {LABELMAP} files differ (or some folders have none): {listed}; export every "
                         "rater's masks with the same labels")
    categories = dict(enumerate(next(iter(labels)))) if labels else {}
    return MultiRaterDataset(images, categories, "classmap"), masks
