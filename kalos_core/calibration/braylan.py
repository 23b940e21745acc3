"""Braylan's item-level agreement measures (Braylan et al., WWW 2022, Sec. 3-4, Table 1).

Where :mod:`.engine` compares *annotations* (one box against the other rater's nearest box,
what τ* needs), this module compares whole *annotation sets*: the boxes one rater drew on one
image (an *item*). Two conventions (``BraylanConfig.convention``, docs/calibration.md):

* ``"braylan"`` (default) follows the paper's published code (github.com/Praznat/annotationmodeling,
  ``eval_functions._score_multi`` at the WWW 2022 commit 0e09f6a) and reproduces Table 1's four
  bounding-box rows within 0.007 (α, "KS", σ; 3 seeds): the nearest-neighbour *similarity* is floored
  at 0 (``max(scores + [0])``), so each nearest-neighbour ``giou`` distance is capped at 1 (no
  negative GIoU; a no-op for ``iou``); ``auc`` is the strict ``P(De > Do)``. ``l2`` and ``count``
  are not floored (a floored L2 similarity, 20 px, gives α 0.10 against the table's 0.69).
* ``"midrank"``: no floor (``giou`` in ``[0, 2]``) and ``auc = P(De > Do) + P(De = Do) / 2``,
  the Mann-Whitney AUC, unbiased where distances tie (count differences are integers).

Common to both:

* **multi-object distance** of two sets ``A``, ``B`` (Sec. 3.2): the **pooled** mean of all
  ``|A| + |B|`` nearest-neighbour distances (each box of ``A`` to its nearest box of ``B``,
  and each box of ``B`` to its nearest box of ``A``). One side empty: distance 1. Both sides
  empty: distance 0 (identical annotations; a distance is zero for identical inputs, Sec. 3.1).
* **single-box distances** on pixel corners ``(x0, y0) = (x, y)``, ``(x1, y1) = (x + w, y + h)``
  of the COCO box ``(x, y, w, h)``, read as inclusive pixel indices (areas ``(w + 1)(h + 1)``):

  - ``iou``: ``1 - IoU``, in ``[0, 1]``;
  - ``giou``: ``1 - GIoU`` (unrescaled), in ``[0, 2]`` before the floor; the enclosing box is inclusive too;
  - ``l2``: ``(RMSE(start corners) + RMSE(end corners)) / 20``, RMSE over the two coordinates,
    in pixels, unbounded (the appendix's ``1 - D_s``);
* **count**: ``| |A| - |B| |``, the appendix's Count Diff, not normalised and not a
  nearest-neighbour distance (an empty side scores ``|A|``, not 1).
* **items**: images with at least two raters (rows of different base raters: two sessions
  of one rater are not a pair). An assigned rater who drew nothing is an empty set.
* **Do**: every same-item pair of rater rows (unordered). **De**: as many pairs of sets of
  two *different* items, each set drawn uniformly among all sets of the counted items
  (``numpy.random.default_rng(seed)``, images in id order and rows in name order, so the draws
  do not depend on the file's order); the draws do not depend on the distance.
* ``alpha = 1 - mean(Do) / mean(De)`` (Krippendorff's general form, Sec. 3).
* ``ks = max_x (F_Do(x) - F_De(x))``, the one-sided KS *D statistic* (Sec. 4.3's formula).
* ``sigma = F_Do(d*)``, ``d*`` solving ``∫_0^{d*} KDE_De = p`` (p = 0.05; Gaussian KDE with
  Scott's bandwidth ``h = std(De, ddof=1) · n^(-1/5)``, scipy's default; kernel mass below 0
  is not counted): the share of Do values whose probability under chance is below ``p``.
  A constant De (no spread) is a point mass at its value ``c``: ``d* = c``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from ..arrays import ranges
from ..data import MultiRaterDataset, in_canonical_order, row_positions
from ..geometry.registry import columnar, take_rows
from .sampling import pair_blocks
from .separation import ks_statistic
from ..jsonsafe import json_safe
from ..params import Config, param
from ..progress import run_steps
from .types import DIGITS

BRAYLAN_DISTANCES = ("iou", "giou", "l2", "count")
#: "braylan": the paper's published code; "midrank": unfloored distances, AUC ties count half
CONVENTIONS = ("braylan", "midrank")
#: what each convention means, one sentence (the CLI summary and the Calibration panel)
#: distances whose nearest-neighbour similarity the "braylan" convention floors at 0 (distance capped at 1)
FLOORED = ("iou", "giou")
#: box pairs per block of the set distances: ~60 arrays of 8 bytes per pair live in a block; at 2^16 pairs
#: (~30 MB) glibc reuses the freed heap, at 2^18 it returns it and zero-fills fresh pages on every block (half
#: the run's time went to the kernel, 0.5 s of sys time per 10 M pairs)
SET_BLOCK = 1 << 16


@dataclass(frozen=True)
class BraylanConfig(Config):
    """Distances to compute, seed of the De draws, significance level of σ."""

    distances: tuple[str, ...] = param(BRAYLAN_DISTANCES, "names", "set distances to compute (default: "
                                       f"{','.join(BRAYLAN_DISTANCES)})", choices=BRAYLAN_DISTANCES)
    seed: int = param(0, "int", "seeds the random different-item (De) pairs", lo=0)
    p: float = param(0.05, "fraction", "significance level of σ", lo_open=True, hi_open=True, flag="--sigma-p")
    convention: str = param("braylan", "choice", "braylan: the paper's published code (nearest-neighbour similarity "
                            "floored at 0, AUC = strict P(De > Do)), reproduces Table 1; midrank: unfloored distances, "
                            "ties in the AUC count half (Mann-Whitney)", choices=CONVENTIONS)


@dataclass
class BraylanDistance:
    """Item-level agreement under one distance."""

    alpha: float
    auc: float
    sigma: float
    ks: float
    n_do: int
    n_de: int
    d_star: float
    mean_do: float
    mean_de: float


@dataclass
class BraylanResult:
    """Item-level agreement of a data set; ``to_dict()`` is the JSON contract."""

    distances: dict[str, BraylanDistance]
    n_items: int
    n_raters: int
    n_annotations: int
    n_annotation_sets: int
    seed: int
    p: float
    task: str = "bbox"
    convention: str = "braylan"

    def to_dict(self) -> dict:
        return json_safe({
            "distances": {name: vars(d).copy() for name, d in self.distances.items()},
            "n_items": self.n_items, "n_raters": self.n_raters, "n_annotations": self.n_annotations,
            "n_annotation_sets": self.n_annotation_sets, "seed": self.seed, "p": self.p, "task": self.task,
            "convention": self.convention,
        }, DIGITS)


@dataclass
class AnnotationSets:
    """The boxes of every (item, rater row), contiguous: set ``s`` is ``corners[start[s]:start[s]+count[s]]``."""

    corners: np.ndarray      #: (n_boxes, 4) x0, y0, x1, y1 in pixels (inclusive)
    start: np.ndarray        #: first box of each set
    count: np.ndarray        #: boxes of each set (0: an assigned rater who drew nothing)
    item: np.ndarray         #: item index of each set (sets of one item are contiguous)
    do_a: np.ndarray         #: the two sets of each Do pair
    do_b: np.ndarray
    n_raters: int

    @property
    def n_items(self) -> int:
        return int(self.item.max()) + 1 if len(self.item) else 0


def annotation_sets(dataset: MultiRaterDataset) -> AnnotationSets:
    """Group a box data set into per-(image, rater row) sets; keep images with two raters or more."""
    if dataset.kind != "box":
        raise ValueError(f"Braylan's item-level measures need boxes (task bbox), not {dataset.kind!r}")
    corners, start, count, item, do_a, do_b, raters = [], [], [], [], [], [], set()
    n_boxes = 0
    for image in in_canonical_order(dataset).images:      # the De draws follow ids, not the file's order
        rows = list(image.raters)
        base = [image.base_rater(r) for r in rows]
        pairs = [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows)) if base[i] != base[j]]
        if not pairs:
            continue
        first = len(start)
        k = int(item[-1]) + 1 if item else 0
        xywh, n = _boxes_by_row(image.annotations, rows)
        corners.append(np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1))
        start += (n_boxes + np.cumsum(n) - n).tolist()
        count += n.tolist()
        item += [k] * len(rows)
        n_boxes += int(n.sum())
        do_a += [first + i for i, _ in pairs]
        do_b += [first + j for _, j in pairs]
        raters.update(base)
    as_int = lambda v: np.asarray(v, np.int64)  # noqa: E731
    corners = columnar(np.concatenate(corners) if corners else np.zeros((0, 4)))   # pair formulas read columns
    return AnnotationSets(corners, as_int(start), as_int(count), as_int(item), as_int(do_a), as_int(do_b), len(raters))


def _boxes_by_row(anns, rows: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y, w, h)`` of the boxes of ``rows`` (sorted by row, as ``in_canonical_order`` left them) and
    each row's count; boxes of other raters are left out."""
    row = row_positions(anns, {r: k for k, r in enumerate(rows)})
    boxes = getattr(anns, "boxes", None)                  # columns: no Annotation objects
    xywh = np.asarray(boxes if boxes is not None else [a.geometry for a in anns], float).reshape(-1, 4)
    keep = row < len(rows)
    return xywh[keep], np.bincount(row[keep], minlength=len(rows))


def draw_de_pairs(sets: AnnotationSets, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` pairs of sets of different items, each set uniform among all sets."""
    n_sets = len(sets.item)
    if sets.n_items < 2:
        raise ValueError("Braylan's De needs at least two items (images with two raters)")
    item_start = np.searchsorted(sets.item, np.arange(sets.n_items), side="left")
    item_size = np.bincount(sets.item, minlength=sets.n_items)
    a = rng.integers(0, n_sets, n)
    lo, size = item_start[sets.item[a]], item_size[sets.item[a]]
    b = rng.integers(0, n_sets - size)         # uniform over the sets outside a's item ...
    b = b + size * (b >= lo)                   # ... skipping a's (contiguous) block
    return a, b


# -- distances --------------------------------------------------------------------------------

def box_distance(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Single-box distance of row-aligned corner arrays ``a``, ``b`` of shape (n, 4)."""
    return box_distances([name], a, b)[name]


def box_distances(names, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`box_distance` for each of ``names``; iou and giou share the intersection and union."""
    out = {}
    if "l2" in names:
        start = np.sqrt(_mean_square(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]))
        end = np.sqrt(_mean_square(a[:, 2] - b[:, 2], a[:, 3] - b[:, 3]))
        out["l2"] = (start + end) / 20.0
    unknown = set(names) - {"l2", "iou", "giou"}
    if unknown:
        raise ValueError(f"unknown box distance {min(unknown)!r}")
    if "iou" not in names and "giou" not in names:
        return out
    area_a = (a[:, 2] - a[:, 0] + 1) * (a[:, 3] - a[:, 1] + 1)
    area_b = (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)
    iw = np.maximum(0.0, np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]) + 1)
    ih = np.maximum(0.0, np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]) + 1)
    inter = iw * ih
    union = area_a + area_b - inter
    iou = inter / union
    if "iou" in names:
        out["iou"] = 1.0 - iou
    if "giou" in names:
        hull = ((np.maximum(a[:, 2], b[:, 2]) - np.minimum(a[:, 0], b[:, 0]) + 1)
                * (np.maximum(a[:, 3], b[:, 3]) - np.minimum(a[:, 1], b[:, 1]) + 1))
        out["giou"] = 1.0 - (iou - (hull - union) / hull)
    return out


def _mean_square(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``mean([dx, dy] ** 2)`` over the pair, the same bits as numpy's mean over a length-2 axis (one addition,
    then the division by 2) without its slow reduction."""
    return (dx * dx + dy * dy) / 2.0


def set_distances(sets: AnnotationSets, sa: np.ndarray, sb: np.ndarray, name: str,
                  floor: bool = False) -> np.ndarray:
    """Multi-object distance of each pair of sets ``(sa[k], sb[k])`` (vectorised over all pairs);
    ``floor``: each nearest-neighbour distance capped at 1 (its similarity floored at 0)."""
    return set_distances_by_name(sets, sa, sb, {name: floor})[name]


def set_distances_by_name(sets: AnnotationSets, sa: np.ndarray, sb: np.ndarray,
                          floors: dict[str, bool]) -> dict[str, np.ndarray]:
    """:func:`set_distances` for each distance name of ``floors`` (name -> floor), the box pairs of
    a block gathered once for all of them."""
    na, nb = sets.count[sa], sets.count[sb]
    out = {name: np.abs(na - nb).astype(float) if name == "count" else np.where((na == 0) & (nb == 0), 0.0, 1.0)
           for name in floors}                                  # set distances: an empty side
    boxed = {name: floor for name, floor in floors.items() if name != "count"}
    for block in pair_blocks(np.flatnonzero((na > 0) & (nb > 0)), na * nb, SET_BLOCK) if boxed else []:
        for name, values in _pooled_nearest(sets, sa[block], sb[block], boxed).items():
            out[name][block] = values
    return out


def _pooled_nearest(sets: AnnotationSets, sa: np.ndarray, sb: np.ndarray,
                    floors: dict[str, bool]) -> dict[str, np.ndarray]:
    """The pooled nearest-neighbour distance of each pair of non-empty sets ``(sa[k], sb[k])``, per name."""
    na, nb = sets.count[sa], sets.count[sb]
    sizes = na * nb
    pair, local = ranges(np.zeros(len(sa), np.int64), sizes)
    offset = np.cumsum(sizes) - sizes
    na_of, nb_of = na[pair], nb[pair]
    i, j = np.divmod(local, nb_of)                             # a-major: row i of A, column j of B
    distances = box_distances(list(floors), take_rows(sets.corners, sets.start[sa][pair] + i),
                              take_rows(sets.corners, sets.start[sb][pair] + j))
    a_starts = np.repeat(offset, na) + _ranks(na) * np.repeat(nb, na)
    q, r = np.divmod(local, na_of)
    by_b = offset[pair] + r * nb_of + q                        # b-major: (pair, j, i)
    b_starts = np.repeat(offset, nb) + _ranks(nb) * np.repeat(na, nb)
    a_owner, b_owner = np.repeat(np.arange(len(sa)), na), np.repeat(np.arange(len(sa)), nb)
    out = {}
    for name, d in distances.items():
        if floors[name]:
            d = np.minimum(d, 1.0)   # min over neighbours then cap = cap then min: the same
        total = (np.bincount(a_owner, np.minimum.reduceat(d, a_starts), len(sa))
                 + np.bincount(b_owner, np.minimum.reduceat(d[by_b], b_starts), len(sa)))
        out[name] = total / (na + nb)
    return out


def _ranks(counts: np.ndarray) -> np.ndarray:
    """``0 .. c-1`` for each count ``c``, concatenated."""
    return ranges(np.zeros(len(counts), np.int64), counts)[1]


# -- measures ---------------------------------------------------------------------------------

def alpha_from_samples(do: np.ndarray, de: np.ndarray) -> float:
    """``1 - mean(Do) / mean(De)``; NaN when De is empty or its mean is 0."""
    if len(do) == 0 or len(de) == 0 or np.mean(de) == 0:
        return float("nan")
    return float(1.0 - np.mean(do) / np.mean(de))


def auc_de_above_do(do: np.ndarray, de: np.ndarray, ties: float = 0.5) -> float:
    """``P(De > Do) + ties · P(De = Do)`` over all pairs: ``ties=0.5`` is the Mann-Whitney U of De,
    normalised (the unbiased AUC); ``ties=0`` the strict share the paper's Table 1 reports."""
    n_do, n_de = len(do), len(de)
    if n_do == 0 or n_de == 0:
        return float("nan")
    de = np.sort(np.asarray(de, float))
    below = np.searchsorted(de, do, side="left")          # De < Do
    not_above = np.searchsorted(de, do, side="right")     # De <= Do
    above, tied = n_de - not_above, not_above - below
    return float((above.sum() + ties * tied.sum()) / (n_do * n_de))


def kde_threshold(de: np.ndarray, p: float = 0.05) -> float:
    """``d*`` with ``∫_0^{d*} KDE_De = p`` (Gaussian kernels, Scott's bandwidth); ``inf`` if never reached."""
    de = np.asarray(de, float)
    if len(de) == 0:
        return float("nan")
    spread = np.std(de, ddof=1) if len(de) > 1 else 0.0
    if not spread > 0:
        return float(de[0]) if de[0] >= 0 else float("inf")   # a point mass
    h = spread * len(de) ** -0.2
    below_zero = ndtr(-de / h)

    def mass(d: float) -> float:
        return float(np.mean(ndtr((d - de) / h) - below_zero)) - p

    hi = float(de.max()) + 10.0 * h
    if mass(hi) < 0:
        return float("inf")
    return float(brentq(mass, 0.0, hi, xtol=1e-12))


def sigma_from_samples(do: np.ndarray, de: np.ndarray, p: float = 0.05) -> tuple[float, float]:
    """``(sigma, d*)``: the share of Do below ``d*`` (their chance probability is below ``p``)."""
    d_star = kde_threshold(de, p)
    if len(do) == 0 or np.isnan(d_star):
        return float("nan"), d_star
    return float(np.mean(np.asarray(do) < d_star)), d_star


def measure(do: np.ndarray, de: np.ndarray, p: float = 0.05, ties: float = 0.5) -> BraylanDistance:
    """α, AUC (ties in it counted ``ties``), σ and the KS D statistic of one pair of samples."""
    sigma, d_star = sigma_from_samples(do, de, p)
    ks = ks_statistic(do, de) if len(do) and len(de) else float("nan")
    return BraylanDistance(alpha=alpha_from_samples(do, de), auc=auc_de_above_do(do, de, ties), sigma=sigma, ks=ks,
                           n_do=len(do), n_de=len(de), d_star=d_star,
                           mean_do=float(np.mean(do)) if len(do) else float("nan"),
                           mean_de=float(np.mean(de)) if len(de) else float("nan"))


def braylan_agreement(dataset: MultiRaterDataset, config: BraylanConfig = BraylanConfig()) -> BraylanResult:
    """Braylan's item-level α, AUC, σ and KS of a box data set (pixel coordinates), per distance."""
    return run_steps(braylan_steps(dataset, config))


def braylan_steps(dataset: MultiRaterDataset, config: BraylanConfig = BraylanConfig()):
    """:func:`braylan_agreement` as ``(fraction, message)`` steps (:mod:`kalos_core.progress`); returns the result."""
    yield 0.0, "item-level agreement (Braylan): annotation sets"
    sets = annotation_sets(dataset)
    check_items(dataset, sets)
    de_a, de_b = draw_de_pairs(sets, len(sets.do_a), np.random.default_rng(config.seed))
    braylan = config.convention == "braylan"
    results = {}
    floors = {name: braylan and name in FLOORED for name in config.distances}
    yield 0.2, f"Do: {len(sets.do_a)} pairs of annotation sets"
    do = set_distances_by_name(sets, sets.do_a, sets.do_b, floors)
    yield 0.55, f"De: {len(de_a)} pairs of annotation sets"
    de = set_distances_by_name(sets, de_a, de_b, floors)
    yield 0.9, "alpha, AUC, sigma, KS per distance"
    for name in config.distances:
        results[name] = measure(do[name], de[name], config.p, ties=0.0 if braylan else 0.5)
    yield 1.0, "Braylan done"
    return BraylanResult(distances=results, n_items=sets.n_items, n_raters=sets.n_raters,
                         n_annotations=int(sets.count.sum()), n_annotation_sets=len(sets.count),
                         seed=config.seed, p=config.p, task=dataset.meta.get("task") or "bbox",
                         convention=config.convention)


def check_items(dataset: MultiRaterDataset, sets: AnnotationSets) -> None:
    """A clear error, naming the fix, where the data cannot give Do and De samples."""
    fix = "assign each image to at least two raters (the `raters` of its record) and label it twice"
    if not dataset.images:
        raise ValueError(f"Braylan's measures: the data set has no images; {fix}")
    if sets.n_items == 0:
        raters = dataset.raters
        who = (f"only one rater ({raters[0]!r})" if len(raters) == 1 else
               f"no image has two of its {len(raters)} raters (each image was labelled by one rater only)")
        raise ValueError(f"Braylan's measures need images labelled by two raters or more, but {who}; {fix}")
    if sets.n_items == 1:
        raise ValueError("Braylan's De compares annotation sets of different images, but only one image has two "
                         f"raters; {fix} on at least two images")
    if sets.count.sum() == 0:
        raise ValueError(f"Braylan's measures: no rater drew a box on the {sets.n_items} images with two raters "
                         "(every distance would be 0); check the label field holds the raters' boxes")
