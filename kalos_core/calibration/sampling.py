"""Do and De distance samples (docs/method.md §5), for any registered distance.

* **Do** - for every annotation ``a`` and every *other* rater row ``q`` assigned
  to the same image (rows of the same base rater, i.e. sessions of one rater,
  are not "other"), the distance from ``a`` to ``q``'s nearest annotation on the
  image; 1.0 if ``q`` drew nothing there.
* **De** - for each Do observation, the same quantity against a rater row drawn
  at random (uniformly among the rows assigned to it) on an image drawn at
  random (uniformly among the *other* images with at least one assigned row).

The distances are localisation only: classes are ignored. The draws depend on
the data's structure and the seed only, not on the distance, so every distance
is calibrated on the same pairs (and its KS values are comparable).

Both are "the nearest annotation of a target (image, row) group": an observation is a
query annotation and a target group (for Do the other row of its own image, for De the
drawn one). Vectorisation: where the distance has an element-wise form
(``DistanceSpec.pairs``: boxes, centroids) every (query, target annotation) pair of a
block of observations is computed as one array and the nearest taken by a segmented
maximum, with no loop over images or groups; otherwise (polygon and mask IoU, keypoints)
each image is prepared once per ``prepare`` function (shared by the distances of a
kind) and its similarity matrix computed once, and De pairs are grouped by their target
group, one similarity call per group. Both give the same values (tests/core/test_calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import MultiRaterDataset, row_positions
from ..geometry import DistanceSpec, Prepared, get_distance
from ..geometry.boxes import box_array, image_sides, prepare_box_columns, prepare_boxes
from ..geometry.registry import GroupRows, columnar
from .types import SIZE_CUTOFFS


@dataclass
class SamplePlan:
    """Which pairs are compared: the same for every distance of a calibration.

    Annotations are indexed globally in (image, row) order, so the annotations of
    one (image, row) *group* are the slice ``group_start[g]:group_end[g]``.
    """

    dataset: MultiRaterDataset
    order: list[list]                 #: per image, its annotations sorted by row
    eligible: list[np.ndarray]        #: per image, bool ``(n_annotations, n_rows)``: is row q "other" for a
    ann_offset: np.ndarray            #: first global annotation index of each image
    group_offset: np.ndarray          #: first group id of each image
    group_start: np.ndarray
    group_end: np.ndarray
    obs_image: np.ndarray             #: image index of each Do/De observation (its query's image)
    obs_query: np.ndarray             #: global annotation index of each observation's query
    do_group: np.ndarray              #: target group of each Do observation (a row of its own image)
    de_group: np.ndarray              #: target group of each De observation

    @property
    def n_observations(self) -> int:
        return len(self.obs_query)


def build_plan(dataset: MultiRaterDataset, rng: np.random.Generator) -> SamplePlan:
    """Order the annotations, list the Do observations and draw their De partners."""
    order, eligible, n_rows, group_sizes = [], [], [], []
    obs_image, obs_query, obs_row, n_ann = [], [], [], 0
    ann_offset = np.zeros(len(dataset.images), np.int64)
    for i, image in enumerate(dataset.images):
        rows = {r: k for k, r in enumerate(image.raters)}
        row = row_positions(image.annotations, rows)
        if not len(row) or (row[-1] < len(rows) and (row[1:] >= row[:-1]).all()):
            keep, in_order = np.arange(len(row)), True         # by row already, every rater assigned
        else:
            keep = np.flatnonzero(row < len(rows))
            keep = keep[np.argsort(row[keep], kind="stable")]  # by row, in the given order within a row
            in_order = len(keep) == len(row) and (np.diff(keep) > 0).all()
        take = getattr(image.annotations, "take", None)
        if take is not None and in_order:
            anns = image.annotations                           # already by row (in_canonical_order's columns)
        else:
            anns = take(keep) if take is not None else [image.annotations[k] for k in keep.tolist()]
        first_of = {}        # each row's base rater as the first row of that rater: integer, not string, compares
        base = np.array([first_of.setdefault(image.base_rater(r), k) for k, r in enumerate(image.raters)], np.int64)
        row_of = row if in_order else row[keep]
        elig = base[row_of][:, None] != base[None, :] if len(anns) else np.zeros((0, len(rows)), bool)
        order.append(anns)
        eligible.append(np.asarray(elig, bool))
        n_rows.append(len(rows))
        group_sizes.append(np.bincount(row_of, minlength=len(rows)))
        a_idx, q_idx = np.nonzero(elig)
        obs_image.append(len(a_idx))
        obs_query.append(n_ann + a_idx)
        obs_row.append(q_idx)
        ann_offset[i] = n_ann
        n_ann += len(anns)
    n_rows = np.asarray(n_rows, np.int64)
    sizes = np.concatenate(group_sizes) if group_sizes else np.zeros(0, np.int64)
    group_end = np.cumsum(sizes)
    group_start = group_end - sizes
    group_offset = np.concatenate([[0], np.cumsum(n_rows)[:-1]]).astype(np.int64)
    obs_image = np.repeat(np.arange(len(obs_image), dtype=np.int64), obs_image)
    obs_query = np.concatenate(obs_query) if obs_query else np.zeros(0, np.int64)
    do_group = group_offset[obs_image] + (np.concatenate(obs_row) if obs_row else np.zeros(0, np.int64))
    de_group = _draw_partners(obs_image, n_rows, group_offset, rng)
    return SamplePlan(dataset, order, eligible, ann_offset, group_offset, group_start, group_end,
                      obs_image, obs_query, do_group, de_group)


def _draw_partners(obs_image, n_rows, group_offset, rng) -> np.ndarray:
    """A random (other image, row) group for each observation."""
    candidates = np.flatnonzero(n_rows > 0)
    if len(obs_image) == 0:
        return np.zeros(0, np.int64)
    if len(candidates) < 2:
        raise ValueError("calibration needs at least two images with assigned raters (De compares across images)")
    position = np.searchsorted(candidates, obs_image)
    pick = rng.integers(0, len(candidates) - 1, len(obs_image))
    pick += pick >= position                       # skip the query's own image
    image = candidates[pick]
    row = np.minimum((rng.random(len(obs_image)) * n_rows[image]).astype(np.int64), n_rows[image] - 1)
    return group_offset[image] + row


class PreparedCache:
    """Each image prepared once per ``prepare`` function (distances of a kind share one)."""

    def __init__(self, plan: SamplePlan) -> None:
        self.plan = plan
        self._cache: dict = {}

    def get(self, spec: DistanceSpec) -> tuple[list[Prepared], Prepared]:
        if spec.prepare not in self._cache:
            if spec.prepare is prepare_boxes and self.plan.order:
                per_image, everything = _boxes_at_once(self.plan)
            else:
                per_image = [spec.prepare(im, anns) for im, anns in zip(self.plan.dataset.images, self.plan.order)]
                everything = concat_prepared(per_image)
            if spec.kind == "box":   # column-major: the box pair formulas read a coordinate of every pair at once
                everything = Prepared(len(everything), **{k: columnar(v) for k, v in everything.arrays.items()})
            self._cache[spec.prepare] = (per_image, everything)
        return self._cache[spec.prepare]


def _boxes_at_once(plan: SamplePlan) -> tuple[list[Prepared], Prepared]:
    """:func:`prepare_boxes` of every image in one call (it works row by row: the same values), each image's
    rows a slice of the whole."""
    counts = [len(anns) for anns in plan.order]
    sides = np.repeat(image_sides(plan.dataset.images), counts, axis=0)
    everything = prepare_box_columns(np.concatenate([box_array(anns) for anns in plan.order]).reshape(-1, 4), sides)
    ends = np.cumsum(counts)
    per_image = [Prepared(b - a, **{k: v[a:b] for k, v in everything.arrays.items()})
                 for a, b in zip((ends - counts).tolist(), ends.tolist())]
    return per_image, everything


def concat_prepared(parts: list[Prepared]) -> Prepared:
    """One ``Prepared`` holding the annotations of all parts, in order (empty parts skipped)."""
    full = [p for p in parts if len(p)]
    if not full:
        return parts[0] if parts else Prepared(0)
    return Prepared(sum(len(p) for p in full), **{k: np.concatenate([p[k] for p in full]) for k in full[0].arrays})


#: pairs of one block of the element-wise path (every distance of a kind reads the block's arrays: about
#: 400 bytes per pair for the four box distances). At 2^16 a block's arrays (512 kB each) stay in the cache
#: and glibc keeps reusing the same heap pages; at 2^18 (~100 MB a block) the heap top was given back and
#: faulted in again (docs/benchmarks.md, "Calibrate and Braylan")
PAIR_BLOCK = 1 << 16


def observe(plan: SamplePlan, spec: DistanceSpec, cache: PreparedCache) -> tuple[np.ndarray, np.ndarray]:
    """``(do, de)`` distances, one of each per observation, in the plan's order."""
    return observe_many(plan, [spec], cache)[spec.name]


def observe_many(plan: SamplePlan, specs: list[DistanceSpec], cache: PreparedCache) -> dict[str, tuple]:
    """:func:`observe` of each distance; those with a ``pairs`` form and the same ``prepare`` walk the pairs
    together (:func:`observe_pairs`)."""
    out = {spec.name: observe_per_image(plan, spec, *cache.get(spec)) for spec in specs if spec.pairs is None}
    for group in pair_groups(specs):
        out.update(observe_pairs(plan, group, cache))
    return {spec.name: out[spec.name] for spec in specs}


def pair_groups(specs: list[DistanceSpec]) -> list[list[DistanceSpec]]:
    """The distances with a ``pairs`` form, grouped by their ``prepare`` (a group walks the pairs together)."""
    together: dict = {}
    for spec in specs:
        if spec.pairs is not None:
            together.setdefault(spec.prepare, []).append(spec)
    return list(together.values())


def observe_pairs(plan: SamplePlan, group: list[DistanceSpec], cache: PreparedCache, lo: int = 0,
                  hi: int | None = None) -> dict[str, tuple]:
    """``(do, de)`` of the observations ``lo:hi`` (whole images: :func:`observation_span`) for each distance of
    ``group`` (one ``prepare``), each block's gathers (and what the distances share, e.g. GIoU's IoU) read once
    for all. The values of an observation do not depend on the span."""
    hi = plan.n_observations if hi is None else hi
    prep = cache.get(group[0])[1]
    do = nearest_do(plan, group, prep, cache, lo, hi)
    de = nearest_distance(plan, group, prep, plan.de_group, lo, hi)
    return {spec.name: pair for spec, pair in zip(group, zip(do, de))}


def observation_span(plan: SamplePlan, first: int, stop: int) -> tuple[int, int]:
    """The observations ``lo:hi`` whose query is on the images ``first:stop`` (they are in image order)."""
    lo, hi = np.searchsorted(plan.obs_image, [first, stop], side="left")
    return int(lo), int(hi)


def nearest_do(plan: SamplePlan, specs: list[DistanceSpec], prep: Prepared, cache: PreparedCache,
               lo: int = 0, hi: int | None = None) -> list[np.ndarray]:
    """The Do values of :func:`nearest_distance` for the observations ``lo:hi`` (whole images), each unordered
    pair of annotations computed once.

    ``pairs`` forms are symmetric bit for bit (``s(a, b) == s(b, a)``, tests/core/test_calibration_paths.py),
    so the pairs of the observations whose query's row comes before the target row serve both
    ``(a, row of b)`` (a segmented maximum) and ``(b, row of a)`` (``np.maximum.at``; on the same image).
    """
    hi = plan.n_observations if hi is None else hi
    best = [np.full(hi - lo, -np.inf) for _ in specs]
    query, do_group = plan.obs_query[lo:hi], plan.do_group[lo:hi]
    own_group = np.searchsorted(plan.group_end, query, side="right")            # the (non-empty) group of each query
    size = (plan.group_end - plan.group_start)[do_group]
    forward = np.flatnonzero((own_group < do_group) & (size > 0))
    if len(forward):
        # observation of (annotation b, row r of its image): lo + the rank of the cell among the span's eligible cells
        first, stop = int(plan.obs_image[lo]), int(plan.obs_image[hi - 1]) + 1      # the span's images
        elig = plan.eligible[first:stop]
        n_rows = np.repeat([e.shape[1] for e in elig], [len(e) for e in elig])
        cell_start = np.cumsum(n_rows, dtype=np.int64) - n_rows      # by annotation, from the span's first one
        obs_at = np.cumsum(np.concatenate([e.ravel() for e in elig])) - 1
        row_of = own_group - plan.group_offset[plan.obs_image[lo:hi]]
    for k, rows, obs, at in _by_target_size(plan, do_group, forward):
        reverse = obs_at[cell_start[rows.cells[at] - plan.ann_offset[first]] + row_of[obs][:, None]].ravel()
        for out, s in zip(best, pair_values(specs, prep.take_repeated(query[obs], k), prep.take_group_rows(rows, at),
                                            keys=True)):
            out[obs] = _run_max(s, k)
            np.maximum.at(out, reverse, s)
    empty = plan.group_end[do_group] == plan.group_start[do_group]
    return [np.where(empty, 1.0, 1.0 - _of_keys(spec, out)) for spec, out in zip(specs, best)]


def nearest_distance(plan: SamplePlan, specs: list[DistanceSpec], prep: Prepared,
                     target: np.ndarray, lo: int = 0, hi: int | None = None) -> list[np.ndarray]:
    """``1 - max`` similarity of each observation ``lo:hi``'s query to the annotations of its ``target`` group
    (1 where the group is empty), per distance, with ``spec.pairs`` over blocks of about ``PAIR_BLOCK`` pairs."""
    hi = len(target) if hi is None else hi
    out = [np.ones(hi - lo) for _ in specs]
    target, query = target[lo:hi], plan.obs_query[lo:hi]
    size = plan.group_end[target] - plan.group_start[target]
    for k, rows, obs, at in _by_target_size(plan, target, np.flatnonzero(size > 0)):
        a, b = prep.take_repeated(query[obs], k), prep.take_group_rows(rows, at)
        for spec, values, s in zip(specs, out, pair_values(specs, a, b, keys=True)):
            values[obs] = 1.0 - _of_keys(spec, _run_max(s, k))
    return out


def _by_target_size(plan: SamplePlan, target: np.ndarray, obs: np.ndarray):
    """Blocks ``(k, rows, obs, at)`` of about ``PAIR_BLOCK`` pairs of the observations ``obs`` whose target group
    (``target[obs]``, non-empty) holds ``k`` annotations: ``rows`` (:class:`GroupRows`) the groups of ``k``
    annotations from the lowest to the highest target, ``at`` the position of each observation's target in it.
    Each pair block is then the query repeated ``k`` times against whole table rows (no per-pair index arrays)."""
    if not len(obs):
        return
    first, last = int(target[obs].min()), int(target[obs].max()) + 1
    size = (plan.group_end - plan.group_start)[first:last]
    by_size = np.argsort(size, kind="stable")                   # the span's groups by size, in order within a size
    class_start = np.cumsum(np.bincount(size)) - np.bincount(size)
    rank = np.empty(len(size), np.int64)
    rank[by_size] = np.arange(len(size)) - class_start[size[by_size]]     # position among the groups of its size
    of_obs = size[target[obs] - first]
    order = np.argsort(of_obs, kind="stable")
    cuts = np.flatnonzero(np.diff(of_obs[order])) + 1
    for part in np.split(order, cuts):
        k, mine = int(of_obs[part[0]]), obs[part]
        groups = first + by_size[class_start[k]: class_start[k] + np.count_nonzero(size == k)]
        rows = GroupRows(plan.group_start[groups][:, None] + np.arange(k))
        at = rank[target[mine] - first]
        step = max(1, PAIR_BLOCK // k)
        for s in range(0, len(mine), step):
            yield k, rows, mine[s: s + step], at[s: s + step]


def _run_max(s: np.ndarray, k: int) -> np.ndarray:
    """``np.maximum.reduceat(s, np.arange(0, len(s), k))``, the maximum of each run of ``k`` values, in the same
    order; short runs column by column (``reduceat`` is slow on short segments)."""
    if k > 24:
        return np.maximum.reduceat(s, np.arange(0, len(s), k))
    runs = s.reshape(-1, k)
    out = runs[:, 0].copy()
    for j in range(1, k):
        np.maximum(out, runs[:, j], out=out)
    return out


def _of_keys(spec: DistanceSpec, nearest: np.ndarray) -> np.ndarray:
    """The similarities of the nearest pairs from what :func:`similarities` gave with ``keys=True``."""
    if spec.nearest_key is None:
        return nearest
    with np.errstate(invalid="ignore"):       # -inf: no pair (the caller sets those)
        return spec.nearest_key[1](nearest)


def pair_similarity(spec: DistanceSpec, prep: Prepared, query: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """``spec.pairs`` of annotations ``query[k]`` and ``partner[k]``."""
    return similarities([spec], prep, query, partner)[0]


def similarities(specs: list[DistanceSpec], prep: Prepared, query: np.ndarray, partner: np.ndarray,
                 keys: bool = False) -> list:
    """``spec.pairs`` of annotations ``query[k]`` and ``partner[k]`` for each distance, the pairs' arrays gathered
    once (``keys``: a distance with a ``nearest_key`` gives its keys instead, whose maximum is the nearest pair's).
    An ``at_most_iou`` distance is computed only for the pairs whose boxes overlap along x (positive width of the
    intersection): the others are exactly 0, as the formula gives them (the IoU of boxes that do not overlap);
    unless another distance (GIoU) computed the IoU of every pair, which it then reads."""
    return pair_values(specs, prep.take_on_use(query), prep.take_on_use(partner), keys)


def pair_values(specs: list[DistanceSpec], a: Prepared, b: Prepared, keys: bool = False) -> list:
    """:func:`similarities` of the pairs ``(a[k], b[k])`` (gathered on use)."""
    values = {}
    for spec in sorted(specs, key=lambda spec: spec.at_most_iou):
        if keys and spec.nearest_key is not None:
            values[spec.name] = spec.nearest_key[0](a, b)
            continue
        if not spec.at_most_iou or a.has_paired(b, "iou"):
            values[spec.name] = spec.pairs(a, b)
            continue
        xa, xb = a["xyxy"], b["xyxy"]
        keep = np.flatnonzero(np.minimum(xa[:, 2], xb[:, 2]) - np.maximum(xa[:, 0], xb[:, 0]) > 0)
        values[spec.name] = np.zeros(len(a))
        values[spec.name][keep] = spec.pairs(a.take_on_use(keep), b.take_on_use(keep))
    return [values[spec.name] for spec in specs]


def pair_blocks(index: np.ndarray, size: np.ndarray, limit: int | None = None) -> list[np.ndarray]:
    """``index`` cut into consecutive blocks of about ``limit`` (default ``PAIR_BLOCK``) pairs, ``size[k]``
    pairs for item k."""
    limit = limit or PAIR_BLOCK
    if not len(index):
        return []
    ends = np.cumsum(size[index])
    cuts = np.unique(np.searchsorted(ends, np.arange(limit, ends[-1], limit), side="left") + 1)
    return [block for block in np.split(index, cuts) if len(block)]


def observe_per_image(plan: SamplePlan, spec: DistanceSpec, per_image: list[Prepared],
                      everything: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """:func:`observe` with whole similarity matrices: per image for Do, per target group for De."""
    do = np.empty(plan.n_observations)
    at = 0
    for i, prep in enumerate(per_image):
        elig = plan.eligible[i]
        if not elig.any():
            continue
        nearest = _nearest_per_row(plan, i, prep, spec)
        values = 1.0 - nearest[elig]
        do[at: at + len(values)] = values
        at += len(values)
    de = np.ones(plan.n_observations)
    order = np.argsort(plan.de_group, kind="stable")
    groups = plan.de_group[order]
    cuts = np.flatnonzero(np.diff(groups)) + 1
    for chunk in np.split(order, cuts) if len(order) else []:
        g = plan.de_group[chunk[0]]
        start, end = plan.group_start[g], plan.group_end[g]
        if end == start:
            continue                                     # the drawn rater drew nothing: distance 1
        s = spec.similarity(everything.take(plan.obs_query[chunk]), everything.take(np.arange(start, end)))
        de[chunk] = 1.0 - s.max(axis=1)
    return do, de


def _nearest_per_row(plan: SamplePlan, i: int, prep: Prepared, spec: DistanceSpec) -> np.ndarray:
    """``(n, n_rows)`` highest similarity of each annotation to each row's annotations (0 if none)."""
    elig = plan.eligible[i]
    n, n_rows = elig.shape
    g0 = plan.group_offset[i]
    starts = plan.group_start[g0: g0 + n_rows] - plan.ann_offset[i]
    ends = plan.group_end[g0: g0 + n_rows] - plan.ann_offset[i]
    row_of = np.repeat(np.arange(n_rows), ends - starts)
    need = elig[:, row_of]
    s = spec.similarity(prep, prep, need=need)
    best = np.zeros((n, n_rows))
    for q in range(n_rows):
        if ends[q] > starts[q]:
            best[:, q] = np.where(need[:, starts[q]:ends[q]], s[:, starts[q]:ends[q]], 0.0).max(axis=1)
    return best


def relative_areas(plan: SamplePlan, cache: PreparedCache) -> np.ndarray | None:
    """Image-relative area of every annotation (global order), or None for voxels and cuboids
    (3D shapes in scene units: no image area to be relative to)."""
    kind = plan.dataset.kind
    if kind in ("voxels", "cuboids"):
        return None
    _, prep = cache.get(get_distance(kind))
    if len(prep) == 0:
        return np.zeros(0)
    if kind == "rle":
        from pycocotools import mask as mask_utils

        size = prep["size"].astype(float)
        return np.asarray(mask_utils.area(list(prep["rle"])), float) / (size[:, 0] * size[:, 1])
    if "area" in prep.arrays:
        return np.asarray(prep["area"], float)
    xyxy = prep["xyxy"]
    return (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1])


def size_strata(areas: np.ndarray) -> np.ndarray:
    """0 = small, 1 = medium, 2 = large (COCO cut-offs scaled to the image area)."""
    return np.searchsorted(np.asarray(SIZE_CUTOFFS), areas, side="right")
