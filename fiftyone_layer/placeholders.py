"""Blank stand-in images for label files that arrive without their images.

Most multi-rater label sets (LVIS/COCO exports, vendor deliveries) come without the
pictures. FiftyOne draws labels only on an image it can load, so the importer gives
each such sample a plain grey PNG of the image's own size: the labels are then
visible and reviewable in the grid and the sample view (the App would otherwise
show a broken tile and log one 404 per sample). The images live in their own folder
(by default under FiftyOne's dataset directory), are never written over a file that
exists, and one encoding per image size is reused (a few microseconds per image).
"""

from __future__ import annotations

import io
import os

import fiftyone as fo
from PIL import Image

#: grey behind the labels: dark enough for FiftyOne's bright label colours
FILL = (58, 58, 58)


def default_folder(stem: str) -> str:
    """``<FiftyOne dataset dir>/kalos_placeholders/<labels file stem>``."""
    return os.path.join(fo.config.default_dataset_dir, "kalos_placeholders", stem)


class Placeholders:
    """Writes (once) and names the placeholder image of each sample."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._encoded: dict[tuple[int, int], bytes] = {}
        self.written = 0

    def path(self, name: str, width: float, height: float) -> str:
        """The placeholder for image ``name`` (its file name in the labels file), created if missing."""
        stem = os.path.splitext(name)[0] or "image"
        path = os.path.join(self.folder, f"{stem}.png")
        if not os.path.exists(path):
            size = (max(1, round(width)), max(1, round(height)))
            if size not in self._encoded:
                buf = io.BytesIO()
                Image.new("RGB", size, FILL).save(buf, format="PNG", compress_level=1)
                self._encoded[size] = buf.getvalue()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(self._encoded[size])
            self.written += 1
        return path
