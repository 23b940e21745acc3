"""Semantic-mask agreement: α over pixels, Dice / Jaccard and boundary measures per class and
rater pair, and a STAPLE (or majority-vote) consensus with each rater's sensitivity / specificity.

The input is a :class:`kalos_core.data.MultiRaterDataset` of kind ``classmap`` (images and the
raters who drew each) and ``masks``: ``{rater: {image id: class map}}`` (arrays or .png / .npy
paths, read one image at a time). Per image, the raters' maps become their distinct value tuples
(:mod:`.pixels`), from which α, the pair confusions and STAPLE are exact and cheap; the boundary
measures (:mod:`.surface`) compute one distance map per rater and class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import MultiRaterDataset, order_key
from ..jsonsafe import json_safe
from ..params import Config, ParamError, param
from . import pixels, surface
from .reader import check_image, load_mask
from .staple import staple

CONSENSUS = ("staple", "majority", "none")
#: the most classes a run takes without declared class names (class values 0..255, as 8-bit maps hold)
MAX_CLASSES = 256
PAIR_KEYS = ("dice", "jaccard", *surface.KEYS)


@dataclass(frozen=True)
class MaskConfig(Config):
    """Settings of a semantic-mask run."""

    classes: tuple[str, ...] | None = param(
        None, "names", "class names in class-index order (value 0 = the first), comma-separated; a mask value "
        "beyond them is refused (default: every value the masks hold is a class, named by its index)",
        optional=True, label="Class names")
    ignore: int | None = param(
        None, "int", "the void value (e.g. 255): a pixel holding it is missing for that rater (default: none)",
        optional=True, lo=0, hi=65535)
    tolerance: float = param(2.0, "float", "boundary F-score and surface Dice: the distance (pixels) within "
                             "which a boundary pixel counts as matched", lo=0)
    boundary: bool = param(True, "bool", "compute the boundary measures (boundary F, surface Dice, HD95, "
                           "mean surface distance); pixel α, Dice and Jaccard are always computed")
    consensus: str = param("staple", "choice", "the consensus map: STAPLE (EM over the raters' confusion "
                           "matrices), majority vote, or none", choices=CONSENSUS)
    probabilities: bool = param(False, "bool", "keep each pixel's probability of its consensus class (STAPLE's "
                                "posterior; majority vote: the share of raters saying it), in percent")
    staple_tolerance: float = param(1e-7, "float", "STAPLE stops when no rater's confusion entry moves by more "
                                    "than this", lo=0, lo_open=True, advanced=True)
    max_iterations: int = param(1000, "int", "STAPLE's most EM iterations per image", lo=1, hi=100000,
                                advanced=True)

    def check(self) -> None:
        if self.classes is not None and self.ignore is not None and self.ignore < len(self.classes):
            raise ParamError("ignore", f"ignore: {self.ignore} is the index of class {self.classes[self.ignore]!r}; "
                             "the void value must lie beyond the classes")


@dataclass
class MaskResult:
    """α pooled and per class (``alpha``, ``alpha_per_class``, one coincidence matrix over every
    image's pixels), ``per_image`` (α, α per class, pixels, raters, STAPLE's iterations and rater
    performance; a volume's ``alpha_per_slice`` along its first axis and ``per_slice``: ``"a|b"`` -> class
    -> each slice's Dice and boundary measures), ``pairs`` (``"a|b"`` -> class -> pooled Dice / Jaccard over the images both drew
    and the boundary measures' means, with ``n_images`` and ``one_empty``), ``per_rater`` (rater ->
    class -> the mean over its pairs of Dice and of its STAPLE sensitivity / specificity). The
    consensus maps (``consensus``: image id -> array) and, where asked for, the pixel-disagreement
    maps (``disagreement``: image id -> uint8 percent of the pixel's raters outside its most frequent
    class) are not part of ``to_dict()``."""

    classes: dict
    raters: list
    alpha: float | None
    alpha_per_class: dict
    per_image: list
    pairs: dict
    per_rater: dict
    n_pixels: int = 0
    consensus_method: str = "staple"
    consensus: dict = field(default_factory=dict)
    disagreement: dict = field(default_factory=dict)   #: image id -> uint8 map (0-100), where asked for
    probability: dict = field(default_factory=dict)    #: image id -> uint8 map (0-100), with ``probabilities``
    staple: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe({"classes": self.classes, "raters": self.raters, "n_images": len(self.per_image),
                          "n_pixels": self.n_pixels, "alpha": self.alpha, "alpha_per_class": self.alpha_per_class,
                          "per_image": self.per_image, "pairs": self.pairs, "per_rater": self.per_rater,
                          "consensus": {"method": self.consensus_method, **self.staple}})


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def _image_maps(image, masks: dict, config: MaskConfig, declared: int | None) -> dict:
    maps = {}
    for r in sorted(image.raters):
        source = (masks.get(r) or {}).get(image.id)
        if source is None:
            continue
        maps[r] = load_mask(source, f"image {image.id!r}, rater {r!r}" if isinstance(source, np.ndarray) else None)
    check_image(image.id, maps, declared, config.ignore)
    return maps


class _Pair:
    """Running sums of one rater pair and class over images."""

    def __init__(self):
        self.inter = self.a = self.b = 0
        self.n = self.one_empty = 0
        self.sums = dict.fromkeys(surface.KEYS, 0.0)
        self.counts = dict.fromkeys(surface.KEYS, 0)


def mask_steps(dataset: MultiRaterDataset, masks: dict, config: MaskConfig, disagreement_maps: bool = False,
               value_names: dict | None = None):
    """Generator of ``(fraction, message)`` steps; returns a :class:`MaskResult` (with each image's
    pixel-disagreement map when ``disagreement_maps``). ``value_names`` (``{class value: name}``, e.g. a
    FiftyOne field's ``mask_targets``) names the classes found without declaring them; declared
    classes (``config.classes``, a labelmap) come first."""
    images = sorted(dataset.images, key=lambda im: order_key(im.id))
    class_names = config.classes or (tuple(dataset.categories[k] for k in sorted(dataset.categories))
                                     if dataset.categories else None)   # a CVAT labelmap's labels
    declared = len(class_names) if class_names else None
    n_classes = declared or 1
    counts = np.zeros((1, n_classes, n_classes), np.int64)
    pair_sums: dict[tuple, dict[int, _Pair]] = {}
    per_image, consensus, staple_rows, seen = [], {}, {}, np.zeros(n_classes, bool)
    disagreement, probability = {}, {}
    total_pixels = 0
    for step, image in enumerate(images):
        yield step / max(len(images), 1), f"image {step + 1}/{len(images)}"
        maps = _image_maps(image, masks, config, declared)
        names = list(maps)
        if len(names) < 1:
            continue
        shape = next(iter(maps.values())).shape
        values = np.stack([m.ravel().astype(np.int64) for m in maps.values()])
        if config.ignore is not None:
            values[values == config.ignore] = pixels.MISSING
        top = int(values.max()) + 1 if (values >= 0).any() else 1
        if declared is None and top > MAX_CLASSES:
            raise ValueError(f"image {image.id!r}: class value {top - 1} found; without declared classes the "
                             f"values must lie in 0..{MAX_CLASSES - 1}: declare the classes (--classes) or the "
                             "void value (--ignore)")
        if declared is None and top > n_classes:
            counts = np.pad(counts, ((0, 0), (0, top - n_classes), (0, top - n_classes)))
            seen = np.pad(seen, (0, top - n_classes))
            n_classes = top
        c = n_classes
        table, count, index = pixels.patterns(values, c)
        here = pixels.coincidence_counts(table, count, c)
        if len(here) > len(counts):
            counts = np.pad(counts, ((0, len(here) - len(counts)), (0, 0), (0, 0)))
        counts[:len(here)] += here
        o = pixels.coincidences(here)
        present_classes = np.flatnonzero(np.bincount(values[values >= 0], minlength=c))
        seen[present_classes] = True
        total_pixels += values.shape[1]
        row = {"image": image.id, "raters": names, "pixels": int(values.shape[1]),
               "pairable_pixels": int(count[(table >= 0).sum(1) >= 2].sum()),
               "alpha": pixels.alpha_of_coincidences(o),
               "alpha_per_class": {str(k): pixels.class_alpha(o, k) for k in present_classes.tolist()}}
        if len(shape) == 3:   # a volume: α, and each pair's Dice and boundary measures, of each slice too
            row["alpha_per_slice"] = [pixels.alpha_of_coincidences(pixels.coincidences(pixels.coincidence_counts(
                *pixels.patterns(part, c)[:2], c))) for part in np.split(values, shape[0], axis=1)]
            row["per_slice"] = _slice_pairs(values.reshape(len(names), *shape), names, present_classes, config)
        _add_pairs(pair_sums, names, table, count, values, shape, c, config)
        if disagreement_maps:
            disagreement[image.id] = pixels.disagreement(table, c)[index].reshape(shape)
        if config.consensus != "none" and names:
            if config.consensus == "staple":
                # over the image's own classes only: (patterns x classes) arrays stay small with many classes
                compact = np.full(c, -1, np.int64)
                compact[present_classes] = np.arange(len(present_classes))
                local = np.where(table >= 0, compact[np.maximum(table, 0)], pixels.MISSING)
                fit = staple(local, count, max(len(present_classes), 1), config.staple_tolerance,
                             config.max_iterations)
                labels = np.where((table >= 0).any(1), present_classes[fit.labels()] if len(present_classes)
                                  else 0, pixels.MISSING)   # no value: no class
                sens, spec = fit.sensitivity(), fit.specificity()
                share = fit.posterior.max(1)
                row["staple"] = {"iterations": fit.iterations, "converged": fit.converged,
                                 "raters": {r: {str(k): {"sensitivity": _num(sens[i, j]),
                                                         "specificity": _num(spec[i, j])}
                                                for j, k in enumerate(present_classes.tolist())}
                                            for i, r in enumerate(names)}}
                for i, r in enumerate(names):
                    for j, k in enumerate(present_classes.tolist()):
                        staple_rows.setdefault(r, {}).setdefault(k, []).append((sens[i, j], spec[i, j]))
            else:
                labels = pixels.majority(table, c)
                share = pixels.majority_share(table, c)
            if config.probabilities:
                percent = np.where(labels >= 0, np.rint(100 * share), 0).astype(np.uint8)
                probability[image.id] = percent[index].reshape(shape)
            fill = config.ignore if config.ignore is not None else 0
            out = np.where(labels >= 0, labels, fill)[index].reshape(shape)
            consensus[image.id] = out.astype(np.uint8 if out.max(initial=0) < 256 else np.uint16)
        per_image.append(row)
    yield 1.0, "summarising"
    o = pixels.coincidences(counts)
    classes = {str(k): (class_names[k] if class_names else str((value_names or {}).get(k, k))) for k in range(n_classes)
               if declared or seen[k]}
    pairs = {f"{a}|{b}": {str(k): _pair_row(s) for k, s in sorted(by_class.items()) if str(k) in classes}
             for (a, b), by_class in sorted(pair_sums.items())}
    raters = sorted({r for row in per_image for r in row["raters"]})
    per_rater = {}
    for r in raters:
        mine = {k: [] for k in classes}
        for key, by_class in pairs.items():
            if r in key.split("|"):
                for k, v in by_class.items():
                    if v["dice"] is not None:
                        mine[k].append(v["dice"])
        per_rater[r] = {k: {"dice": float(np.mean(v)) if v else None} for k, v in mine.items()}
        for k, rows in (staple_rows.get(r) or {}).items():
            arr = np.array(rows, float)
            per_rater[r][str(k)].update({"sensitivity": _num(np.nanmean(arr[:, 0])),
                                         "specificity": _num(np.nanmean(arr[:, 1])) if np.isfinite(arr[:, 1]).any()
                                         else None})
    staple_info = ({"tolerance": config.staple_tolerance, "max_iterations": config.max_iterations}
                   if config.consensus == "staple" else {})
    return MaskResult(classes, raters, pixels.alpha_of_coincidences(o),
                      {k: pixels.class_alpha(o, int(k)) for k in classes}, per_image, pairs, per_rater,
                      total_pixels, config.consensus, consensus, staple=staple_info, disagreement=disagreement,
                      probability=probability)


def _add_pairs(pair_sums, names, table, count, values, shape, c, config) -> None:
    """Add one image's Dice sizes and boundary measures to every rater pair's running sums."""
    present_classes = np.flatnonzero(np.bincount(values[values >= 0], minlength=c))
    distance = {}
    if config.boundary and len(names) >= 2:
        for k in present_classes.tolist():
            borders = [surface.boundary((values[i] == k).reshape(shape)) for i in range(len(names))]
            box = surface.bounding_box(borders)
            distance[k] = (borders, box, [surface.distance_to(b, box) if b.any() else None for b in borders]
                           if box is not None else None)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            conf = pixels.pair_confusion(table, count, i, j, c)
            _, _, sizes = pixels.dice_jaccard(conf)
            by_class = pair_sums.setdefault((names[i], names[j]), {})
            for k in present_classes.tolist():
                inter, a, b = sizes[:, k]
                s = by_class.setdefault(k, _Pair())
                s.inter, s.a, s.b = s.inter + int(inter), s.a + int(a), s.b + int(b)
                if a == 0 and b == 0:
                    continue
                s.n += 1
                s.one_empty += int(a == 0 or b == 0)
                if k in distance:
                    borders, box, dist = distance[k]
                    m = surface.measures(borders[i], borders[j], dist[i] if dist else None,
                                         dist[j] if dist else None, box, config.tolerance)
                    for key, v in m.items():
                        if v is not None:
                            s.sums[key] += v
                            s.counts[key] += 1


def _slice_pairs(vol: np.ndarray, names: list, present_classes, config: MaskConfig) -> dict:
    """A volume's (raters x slices x rows x columns) Dice per slice of each rater pair and class, over
    the pixels both labelled, and with ``config.boundary`` the 2D boundary measures of each slice;
    None where neither rater has the class on a slice."""
    out = {}
    valid = vol >= 0
    for k in present_classes.tolist():
        binary = vol == k
        borders = dist = None
        if config.boundary:
            borders = [[surface.boundary(binary[i, z]) for z in range(vol.shape[1])] for i in range(len(names))]
            boxes = [surface.bounding_box([b[z] for b in borders]) for z in range(vol.shape[1])]
            dist = [[surface.distance_to(b[z], boxes[z]) if b[z].any() else None for z in range(vol.shape[1])]
                    for b in borders]
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                both = valid[i] & valid[j]
                a, b = binary[i] & both, binary[j] & both
                inter, sa, sb = ((a & b).sum((1, 2)), a.sum((1, 2)), b.sum((1, 2)))
                row = {"dice": [2 * int(x) / int(y + w) if y + w else None for x, y, w in zip(inter, sa, sb)]}
                if config.boundary:
                    cells = [surface.measures(borders[i][z], borders[j][z], dist[i][z], dist[j][z], boxes[z],
                                              config.tolerance) for z in range(vol.shape[1])]
                    row.update({key: [m[key] for m in cells] for key in surface.KEYS})
                out.setdefault(f"{names[i]}|{names[j]}", {})[str(k)] = row
    return out


def _pair_row(s: _Pair) -> dict:
    both = s.a + s.b
    row = {"dice": 2 * s.inter / both if both else None,
           "jaccard": s.inter / (both - s.inter) if both else None,
           "n_images": s.n, "one_empty": s.one_empty}
    row.update({k: (s.sums[k] / s.counts[k] if s.counts[k] else None) for k in surface.KEYS})
    return row


def compute_masks(dataset: MultiRaterDataset, masks: dict, config: MaskConfig | None = None) -> MaskResult:
    """:func:`mask_steps` run to the end."""
    from ..progress import run_steps

    return run_steps(mask_steps(dataset, masks, config or MaskConfig()))


def masks_dataset(masks: dict[str, dict[Any, Any]]) -> MultiRaterDataset:
    """The images of ``{rater: {image id: mask}}`` as a ``classmap`` data set (a rater without an
    image's mask takes no part in it)."""
    from ..data import make_image

    ids = sorted({i for m in masks.values() for i in m}, key=order_key)
    return MultiRaterDataset([make_image(i, 0, 0, [r for r in masks if i in masks[r]]) for i in ids], {}, "classmap")
