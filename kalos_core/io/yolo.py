"""Per-rater YOLO folders: ``ROOT/<rater>/<image stem>.txt`` with ``class xc yc w h``.

A rater is assigned to an image when its folder holds a label file for it (an
empty file means "looked and drew nothing"). Coordinates are relative, so the
image size only matters for reporting; pass ``image_sizes`` to keep it.
Class ids are YOLO's 0-based ids; names come from ``class_names`` or a
``classes.txt`` / ``data.yaml``-style list file when present.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..data import Annotation, ImageRecord, MultiRaterDataset
from .validation import InvalidInputError, Problem


def _class_names(root: Path, class_names) -> dict[int, str]:
    if class_names is not None:
        return {i: str(n) for i, n in enumerate(class_names)}
    f = root / "classes.txt"
    if f.exists():
        return {i: line.strip() for i, line in enumerate(f.read_text().splitlines()) if line.strip()}
    return {}


def load_yolo(root: str | Path, image_sizes: dict[str, tuple[float, float]] | None = None,
              class_names=None, skip_invalid: bool = False) -> MultiRaterDataset:
    """Read per-rater YOLO label folders into a box :class:`MultiRaterDataset`."""
    root = Path(root)
    raters = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not raters:
        raise InvalidInputError([Problem(f"no rater folders under {root}")], str(root))
    stems = sorted({f.stem for r in raters for f in (root / r).glob("*.txt")})
    names = _class_names(root, class_names)
    problems, images = [], []
    for stem in stems:
        w, h = (image_sizes or {}).get(stem, (1.0, 1.0))
        assigned = tuple(r for r in raters if (root / r / f"{stem}.txt").exists())
        anns = []
        for r in assigned:
            path = root / r / f"{stem}.txt"
            for n, line in enumerate(path.read_text().splitlines()):
                parts = line.split()
                if not parts:
                    continue
                aid = f"{r}/{stem}:{n}"
                try:
                    cls, xc, yc, bw, bh = (float(v) for v in parts[:5])
                except ValueError:
                    problems.append(Problem(f"line {n + 1} of {path.name} is not 'class xc yc w h'", stem, aid, r))
                    continue
                bad = (not all(math.isfinite(v) for v in (xc, yc, bw, bh)) or bw <= 0 or bh <= 0
                       or cls != int(cls) or (names and int(cls) not in names))
                if bad:
                    problems.append(Problem(f"invalid box or class on line {n + 1}: {line.strip()!r}", stem, aid, r))
                    continue
                box = ((xc - bw / 2) * w, (yc - bh / 2) * h, bw * w, bh * h)
                anns.append(Annotation(aid, r, int(cls), box, box))
        images.append(ImageRecord(stem, float(w), float(h), assigned, anns, file_name=stem))
    if problems and not skip_invalid:
        raise InvalidInputError(problems, str(root))
    return MultiRaterDataset(images, names, "box", skipped=[p.to_dict() for p in problems])
