"""Label Studio brush masks: its RLE decoded, and a JSON export read as one class map per annotator.

Label Studio stores a brush region (``"type": "brushlabels"``, ``value.format == "rle"``) as a run-length
code of the image's RGBA pixels, row by row: a bit stream (most significant bit first) holding the
number of values (32 bits), the word size less one (5 bits) and four run-length field sizes less one
(4 bits each), then blocks of: one flag bit (1: one value repeated, 0: literal values), two bits picking
a field size, the block's length less one in that many bits, and the value (repeated) or the values
(literal), each ``word size`` bits wide. A pixel is painted where its alpha (fourth value) is non-zero.

A project's JSON export (Label Studio 1.x: a list of tasks, each with ``annotations``) becomes one class
map per task and annotator (``completed_by``: the email where the export gives it, else ``user <id>``):
unpainted pixels are class 0, a region painted with a label is that label's class. Where two regions
overlap, the later region in the annotation's results wins (Label Studio draws it on top). The classes
are the declared ones (``--classes``: the first is the unpainted background) or, without them,
``background`` and then every brush label of the export in alphabetical order. A skipped (cancelled)
annotation leaves its annotator without a map of that task; an annotation painting nothing is all
background (sized as the task's other maps); results of other types are not read. The
image is the stem of the task's file name (``/data/upload/1/img1.jpg`` -> ``img1``), as a folder of
class maps names it. Refused, naming the task and annotator: a label not among the declared classes,
a brush region stored other than as RLE, a region whose code does not hold ``original_width`` x
``original_height`` pixels, and regions of one annotation of different sizes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np

from ..data import MultiRaterDataset, make_image

BACKGROUND = "background"


def decode_brush_rle(rle, width: int, height: int) -> np.ndarray:
    """The painted pixels (bool, ``height`` x ``width``) of one Label Studio brush RLE; ValueError
    where the code is damaged or does not hold ``width`` x ``height`` RGBA pixels. The blocks are
    read as runs (value, length) and laid out with one ``np.repeat``."""
    try:
        data = bytes(rle) + bytes(8)     # zero padding: a read never runs off the end
    except (TypeError, ValueError):
        raise ValueError("the rle is not a list of byte values (0..255)") from None
    total, pos, take = 8 * (len(data) - 8), 0, int.from_bytes

    def read(n: int) -> int:           # n <= 32 bits: within the 8 bytes from pos // 8
        nonlocal pos
        value = (take(data[pos >> 3:(pos >> 3) + 8], "big") >> (64 - (pos & 7) - n)) & ((1 << n) - 1)
        pos += n
        return value

    if total < 53:
        raise ValueError("the rle is too short to hold Label Studio's header")
    num = read(32)
    if num != 4 * width * height:
        raise ValueError(f"the rle holds {num // 4} pixels, not original_width x original_height = "
                         f"{width} x {height} = {width * height}")
    word = read(5) + 1
    sizes = [read(4) + 1 for _ in range(4)]
    values, lengths, i = [], [], 0
    while i < num:
        repeat = read(1)
        n = min(num - i, 1 + read(sizes[read(2)]))
        if repeat:
            values.append(read(word))
            lengths.append(n)
        else:
            values.extend(read(word) for _ in range(n))
            lengths.extend([1] * n)
        i += n
        if pos > total:
            raise ValueError("the code ends early")
    out = np.repeat(np.asarray(values, np.int64), lengths)
    return out.reshape(height, width, 4)[:, :, 3] > 0


def _rater(annotation) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or f"user {who.get('id')}")
    return f"user {who}"


def _image(task) -> str:
    value = next((v for v in (task.get("data") or {}).values() if isinstance(v, str)), "")
    url = urlparse(value)
    path = parse_qs(url.query).get("d", [url.path])[0]   # local files: /data/local-files/?d=folder/name.jpg
    return Path(os.path.basename(path)).stem or f"task {task.get('id')}"


def _brushes(results) -> list[dict]:
    return [r for r in results or [] if r.get("type") == "brushlabels"]


def read_label_studio_brush(path: Path, classes=None) -> tuple[MultiRaterDataset, dict]:
    """A Label Studio JSON export's brush regions -> the images and ``{rater: {image: class map}}``
    (uint8, uint16 past 256 classes); ``classes``: the declared class names (the first unpainted)."""
    path = Path(path)
    try:
        tasks = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot be read as a Label Studio JSON export ({type(e).__name__}: "
                         f"{str(e)[:80]})") from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "annotations" in t for t in tasks):
        raise ValueError(f"{path}: not Label Studio's JSON export (a list of tasks with their annotations); "
                         "export the project as JSON, not JSON-MIN or CSV")
    labels = sorted({name for t in tasks for a in t["annotations"] for r in _brushes(a.get("result"))
                     for name in (r.get("value") or {}).get("brushlabels") or []})
    if not labels:
        raise ValueError(f"{path}: no brush regions (brushlabels); this reader takes brush masks")
    names = tuple(classes) if classes else (BACKGROUND, *[n for n in labels if n != BACKGROUND])
    index = {n: k for k, n in enumerate(names)}
    dtype = np.uint8 if len(names) <= 256 else np.uint16
    masks: dict[str, dict] = {}
    owner: dict[str, object] = {}
    for task in tasks:
        image = _image(task)
        if owner.setdefault(image, task.get("id")) != task.get("id"):
            raise ValueError(f"{path}: tasks {owner[image]} and {task.get('id')} are both image {image!r}; "
                             "give each image one task")
        for ann in task["annotations"]:
            if ann.get("was_cancelled"):
                continue
            rater = _rater(ann)
            where = f"{path}: task {task.get('id')}, annotator {rater}"
            if image in masks.get(rater, {}):
                raise ValueError(f"{where}: two annotations of this task by this annotator; keep one")
            out, size = None, None
            for r in _brushes(ann.get("result")):
                v = r.get("value") or {}
                if v.get("format", "rle") != "rle":
                    raise ValueError(f"{where}: region {r.get('id')!r} is stored as {v.get('format')!r}, not rle; "
                                     "this reader takes Label Studio's brush RLE")
                name = (v.get("brushlabels") or [""])[0]
                if name not in index:
                    raise ValueError(f"{where}: brush label {name!r} is not among the classes "
                                     f"{', '.join(names[1:])}; add it to --classes or relabel the region")
                try:
                    w, h = int(r["original_width"]), int(r["original_height"])
                except (KeyError, TypeError, ValueError):
                    raise ValueError(f"{where}: a brush region without original_width / original_height; "
                                     "re-export the project from Label Studio") from None
                if size is not None and size != (w, h):
                    raise ValueError(f"{where}: brush regions of sizes {size[0]}x{size[1]} and {w}x{h}; "
                                     "all of an annotation's regions cover the same image")
                try:
                    painted = decode_brush_rle(v.get("rle"), w, h)
                except ValueError as e:
                    raise ValueError(f"{where}: region {r.get('id')!r}: {e}; re-export the project") from None
                if out is None:
                    size, out = (w, h), np.zeros((h, w), dtype)
                out[painted] = index[name]    # a later region is drawn over an earlier one
            masks.setdefault(rater, {})[image] = out    # None: painted nothing, sized below
    for rater, by_image in masks.items():
        for image, out in by_image.items():
            if out is None:
                shape = next((m[image].shape for m in masks.values() if m.get(image) is not None), None)
                by_image[image] = None if shape is None else np.zeros(shape, dtype)
        for image in [i for i, m in by_image.items() if m is None]:   # nobody painted it: no size to give
            del by_image[image]
    masks = {r: m for r, m in masks.items() if m}
    if len(masks) < 2:
        raise ValueError(f"{path}: brush masks of {len(masks)} annotator(s); agreement needs at least two")
    found = sorted({i for m in masks.values() for i in m})
    images = [make_image(i, 0, 0, [r for r in masks if i in masks[r]], file_name=i) for i in found]
    return MultiRaterDataset(images, dict(enumerate(names)), "classmap"), masks
