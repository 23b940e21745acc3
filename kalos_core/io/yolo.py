"""Per-rater YOLO folders: ``ROOT/<rater>/<image stem>.txt`` with ``class xc yc w h``.

A rater is assigned to an image when its folder holds a label file for it (an
empty file means "looked and drew nothing"). Coordinates are relative (each in
[0, 1], as YOLO writes them), so the image size only matters for reporting;
pass ``image_sizes`` to keep it. Class ids are YOLO's 0-based ids; names come
from ``class_names`` or a ``classes.txt`` list file when present. Lines that
are not exactly ``class xc yc w h`` (five numbers) are refused, naming the
file and line (docs/input.md).
"""

from __future__ import annotations

import math
from pathlib import Path

from ..data import Annotation, ImageRecord, MultiRaterDataset
from .records import check_records
from .validation import InvalidInputError, Problem
from .values import side

#: slack allowed around [0, 1] for relative coordinates written with rounding
TOLERANCE = 1e-6


def _class_names(root: Path, class_names) -> dict[int, str]:
    if class_names is not None:
        return {i: str(n) for i, n in enumerate(class_names)}
    f = root / "classes.txt"
    if f.exists():
        return {i: line.strip() for i, line in enumerate(_read(f).splitlines()) if line.strip()}
    return {}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInputError([Problem(f"not UTF-8 text (offset {e.start}); save it as UTF-8")], str(path),
                                hint=False) from None


def _line_problem(parts: list[str], names: dict) -> tuple[tuple | None, str | None]:
    if len(parts) != 5:
        return None, f"expected 'class xc yc w h' (5 numbers), got {len(parts)} fields"
    try:
        cls, xc, yc, bw, bh = (float(v) for v in parts)
    except ValueError:
        return None, "expected 'class xc yc w h' (5 numbers)"
    if not math.isfinite(cls) or cls != int(cls) or cls < 0:
        return None, f"class id must be a non-negative integer, got {parts[0]!r}"
    if names and int(cls) not in names:
        return None, f"class id {int(cls)} is not in the class list (0..{max(names)})"
    if not all(math.isfinite(v) and -TOLERANCE <= v <= 1 + TOLERANCE for v in (xc, yc, bw, bh)):
        return None, "coordinates must be relative, each in [0, 1]"
    if bw <= 0 or bh <= 0:
        return None, "box has non-positive size"
    return (int(cls), xc, yc, bw, bh), None


def load_yolo(root: str | Path, image_sizes: dict[str, tuple[float, float]] | None = None,
              class_names=None, skip_invalid: bool = False) -> MultiRaterDataset:
    """Read per-rater YOLO label folders into a box :class:`MultiRaterDataset`."""
    root = Path(root)
    if not root.is_dir():
        raise InvalidInputError([Problem(f"{root} is not a folder of per-rater label folders")], str(root), hint=False)
    raters = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not raters:
        raise InvalidInputError([Problem(f"no rater folders under {root}")], str(root), hint=False)
    stems = sorted({f.stem for r in raters for f in (root / r).glob("*.txt")})
    names = _class_names(root, class_names)
    problems, images = [], []
    for stem in stems:
        w, h = (image_sizes or {}).get(stem, (1.0, 1.0))
        size_err = side(w, "width")[1] or side(h, "height")[1]
        if size_err:
            problems.append(Problem(f"image_sizes: {size_err}", stem))
            continue
        assigned = tuple(r for r in raters if (root / r / f"{stem}.txt").exists())
        anns = []
        for r in assigned:
            path = root / r / f"{stem}.txt"
            for n, line in enumerate(_read(path).splitlines()):
                parts = line.split()
                if not parts:
                    continue
                aid = f"{r}/{stem}:{n}"
                box, msg = _line_problem(parts, names)
                if msg:
                    problems.append(Problem(f"line {n + 1} of {r}/{path.name}: {msg}: {line.strip()!r}"[:200],
                                            stem, aid, r))
                    continue
                cls, xc, yc, bw, bh = box
                box = ((xc - bw / 2) * w, (yc - bh / 2) * h, bw * w, bh * h)
                anns.append(Annotation(aid, r, cls, box, box))
        images.append(ImageRecord(stem, float(w), float(h), assigned, anns, file_name=stem))
    ds, more = check_records(MultiRaterDataset(images, names, "box"))
    problems += more
    if problems and not skip_invalid:
        raise InvalidInputError(problems, str(root))
    ds.skipped = [p.to_dict() for p in problems]
    return ds
