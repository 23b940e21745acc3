"""Variation types of a multi-rater data set: every pair of raters, every threshold.

``compute_variations(dataset, VariationConfig(...)) -> VariationResult``; the step
generator :func:`variation_steps` is the same with progress (for the FiftyOne operators).

Direction of unmatched labels (step 5): with two raters on an image, the reference
rater's unmatched labels are ``missed`` (the other rater missed them) and the other's are
``additional``. With three or more, the agreement units at the same threshold (greedy,
ψsoft, as :func:`kalos_core.agreement.compute_agreement`) decide: a label whose unit holds
more than half of the image's raters is ``missed`` by the pair partner, otherwise it is
``additional``. A label's type is the most frequent of its pairwise types (ties: the
earlier type in ``TYPES``); its partner and IoU come from the best pair of that type.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict
from functools import partial
from itertools import combinations
from typing import Callable, Generator

import numpy as np

from ..executors import map_images
from ..data import MultiRaterDataset
from ..geometry import get_distance
from ..io.records import check_measurable
from ..matching.costs import get_cost
from ..matching.problem import MatchProblem
from ..matching.solvers import get_solver
from ..progress import run_steps
from .kernel import applies as kernel_applies, classify_chunk
from .geometry import ImageGeometry, MergeCandidates, image_geometry, merge_candidates
from .pair import classify_pair
from .types import IOU_BINS, TYPES, LabelTable, LabelVariation, VariationConfig, VariationResult, threshold_key

_RANK = {name: k for k, name in enumerate(TYPES)}


def _pair_merges(g: ImageGeometry, a: np.ndarray, b: np.ndarray, floor: float, on: bool) -> MergeCandidates:
    if not on:
        return MergeCandidates.empty()
    m1, m2 = merge_candidates(g, a, b, floor), merge_candidates(g, b, a, floor)
    return MergeCandidates(*(np.concatenate([getattr(m1, f), getattr(m2, f)]) for f in ("i", "j", "k", "iou")))


def _majority_rows(g: ImageGeometry, t: float) -> np.ndarray:
    """Per label: does its agreement unit at ``t`` hold more than half of the image's rows?"""
    units = get_solver("greedy")(MatchProblem(g.sim, g.rater, g.category), t, get_cost("soft"))
    size = np.bincount(units)[units]
    return size * 2 > len(g.rows)


def _label_type(outcomes: list) -> tuple:
    counts = Counter(o[0] for o in outcomes)
    best = min(counts, key=lambda name: (-counts[name], _RANK[name]))
    same = [o for o in outcomes if o[0] == best]
    return max(same, key=lambda o: -1.0 if o[2] is None else o[2])


def pair_outcomes(g: ImageGeometry, t: float, merges: dict, reference: str | None) -> dict[tuple, dict]:
    """Per pair of rows ``(p, q)``: per label index ``(type, partner indices, IoU)`` at ``t``,
    with the direction of unmatched labels decided (reference rater or unit majority)."""
    majority = _majority_rows(g, t) if len(g.rows) >= 3 else None
    ref = reference if reference in g.rows else g.rows[0]
    out = {}
    for (p, q), m in merges.items():
        a, b = np.flatnonzero(g.rater == p), np.flatnonzero(g.rater == q)
        outcomes = classify_pair(g.sim, g.category, a, b, m, t)
        for k, (name, partners, iou) in outcomes.items():
            if name is None:
                real = majority[k] if majority is not None else g.rows[g.rater[k]] == ref
                outcomes[k] = ("missed" if real else "additional", partners, iou)
        out[(p, q)] = outcomes
    return out


def classify_image(g: ImageGeometry, t: float, merges: dict, reference: str | None) -> dict[int, tuple]:
    """Per label index: ``(type, partner indices, IoU)`` at threshold ``t`` (over all its pairs)."""
    return label_types(pair_outcomes(g, t, merges, reference))


def label_types(pairs: dict[tuple, dict]) -> dict[int, tuple]:
    """Per label index: its type over all its pairs (:func:`pair_outcomes`), the most frequent."""
    per_label: dict[int, list] = defaultdict(list)
    for outcomes in pairs.values():
        for k, o in outcomes.items():
            per_label[k].append(o)
    return {k: _label_type(v) for k, v in per_label.items()}


def count_pairs(into: dict, g: ImageGeometry, pairs: dict[tuple, dict]) -> None:
    """``into[a][b][type] += 1`` for each label of rater ``a`` by its type in the pair with rater ``b``
    (the per-pair convention: ``into[a][b]["missed"]`` are the labels of ``a`` that ``b`` missed)."""
    for (p, q), outcomes in pairs.items():
        for k, (name, _, _) in outcomes.items():
            other = q if g.rater[k] == p else p
            into[g.rows[g.rater[k]]][g.rows[other]][name] += 1


def image_merges(g: ImageGeometry, floor: float, on: bool = True) -> dict[tuple, MergeCandidates]:
    """Merge candidates of every pair of rows ``(p, q)``, ``p < q`` (both directions)."""
    out = {}
    for p, q in combinations(range(len(g.rows)), 2):
        a, b = np.flatnonzero(g.rater == p), np.flatnonzero(g.rater == q)
        out[(p, q)] = _pair_merges(g, a, b, floor, on)
    return out


def _empty_counts() -> dict[str, int]:
    return {name: 0 for name in TYPES}


def _pair_counts() -> defaultdict:
    return defaultdict(_empty_counts)


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for name, n in counts.items():
        into[name] += n


def _fill(labels: dict, into: dict) -> None:
    into.update(labels)


class Tally:
    """The counts of a run as the images are classified (the per-image path and the kernel add to it)."""

    def __init__(self, thresholds: tuple) -> None:
        keys = [threshold_key(t) for t in thresholds]
        self.counts = {k: _empty_counts() for k in keys}
        self.by_rater = {k: defaultdict(_empty_counts) for k in keys}
        self.by_class = {k: defaultdict(_empty_counts) for k in keys}
        self.by_pair = {k: defaultdict(_pair_counts) for k in keys}
        self.hist = {k: np.zeros(len(IOU_BINS) - 1, np.int64) for k in keys}
        self.labels = LabelTable()

    def add_image(self, g: ImageGeometry, config: VariationConfig, names: dict) -> None:
        """Classify one image at every threshold (the per-image path)."""
        merges = image_merges(g, min(config.thresholds), config.merge)
        labels: dict = {}
        self.labels.add(partial(_fill, labels))
        for t in config.thresholds:
            key = threshold_key(t)
            pairs = pair_outcomes(g, t, merges, config.reference)
            types = label_types(pairs)
            count_pairs(self.by_pair[key], g, pairs)
            agreed_iou = []
            for k, (name, partners, iou) in types.items():
                ann = g.annotations[k]
                self.counts[key][name] += 1
                self.by_rater[key][ann.rater][name] += 1
                self.by_class[key][names.get(ann.category, str(ann.category))][name] += 1
                if name == "agreed":
                    agreed_iou.append(iou)
                if t == config.threshold:
                    labels[ann.id] = LabelVariation(name, tuple(g.annotations[p].id for p in partners),
                                                    iou, ann.rater, ann.category)
            self.hist[key] += np.histogram(np.clip(agreed_iou, 0, 1), bins=IOU_BINS)[0]

    def merge(self, other: Tally) -> None:
        """Add the counts of ``other`` (the tally of later images); its labels follow these."""
        for key in self.counts:
            _add_counts(self.counts[key], other.counts[key])
            for mine, theirs in ((self.by_rater[key], other.by_rater[key]), (self.by_class[key], other.by_class[key])):
                for name, counts in theirs.items():
                    _add_counts(mine[name], counts)
            for a, row in other.by_pair[key].items():
                for b, counts in row.items():
                    _add_counts(self.by_pair[key][a][b], counts)
            self.hist[key] += other.hist[key]
        self.labels.extend(other.labels)

    def result(self, config: dict, dataset: MultiRaterDataset) -> VariationResult:
        return VariationResult(
            config=config, n_images=len(dataset.images), n_annotations=dataset.n_annotations, counts=self.counts,
            by_rater={k: dict(sorted(v.items())) for k, v in self.by_rater.items()},
            by_class={k: dict(sorted(v.items())) for k, v in self.by_class.items()},
            by_pair={k: {a: dict(sorted(row.items())) for a, row in sorted(v.items())}
                     for k, v in self.by_pair.items()},
            boundary_iou={k: v.tolist() for k, v in self.hist.items()}, labels=self.labels)


#: images classified together (the kernel's chunk; one progress step each)
CHUNK_IMAGES = 256


def variation_steps(dataset: MultiRaterDataset, config: VariationConfig = VariationConfig(), kernel: bool = True,
                    workers: int = 1, executor: str | None = None, chunk_size: int = CHUNK_IMAGES,
                    ) -> Generator[tuple[float, str], None, VariationResult]:
    """:func:`compute_variations` as a step generator (see :mod:`kalos_core.progress`); ``kernel=False``
    classifies every chunk image by image (the reference the kernel is tested against). The chunks run
    on ``executor`` with ``workers`` (:mod:`kalos_core.executors`); the result does not depend on them."""
    check_measurable(dataset)   # as agreement and consensus: no image, or no image with two raters
    if config.reference is not None:   # a name that is no rater would silently fall back to the first row
        dataset.check_raters(config.reference, "reference")
    spec = get_distance(dataset.kind, config.distance)
    tally = Tally(config.thresholds)
    total = len(dataset.images)
    job = (config, dataset.categories, kernel)
    for done, part in map_images(classify_images, dataset, job, chunk_size, workers, executor):
        tally.merge(part)
        yield done / total, f"{done}/{total} images"
    return tally.result({**asdict(config), "distance": spec.name, "kind": dataset.kind}, dataset)


def classify_images(images: list, first: int, kind: str, job: tuple, n_rows: int) -> Tally:
    """The map step (:func:`kalos_core.executors.map_images`): the tally of ``images`` alone;
    ``job`` = (config, the data set's class names, whether the kernel may run)."""
    config, names, kernel = job
    spec = get_distance(kind, config.distance)
    tally = Tally(config.thresholds)
    if kernel and kernel_applies(images, spec):
        classify_chunk(images, spec, config, names, tally)
    else:
        for image in images:
            g = image_geometry(image, spec, min(config.thresholds))
            if len(g.rows) >= 2 and g.annotations:
                tally.add_image(g, config, names)
    return tally


def compute_variations(dataset: MultiRaterDataset, config: VariationConfig = VariationConfig(),
                       progress: Callable[[float, str], None] | None = None) -> VariationResult:
    """Classify every label's disagreement type for every pair of raters and threshold.

    Parameters
    ----------
    dataset : images with assigned raters and annotations (boxes, polygons or masks; other
        kinds run without the merge steps).
    config : thresholds to count at, the run's threshold for the per-label types, distance.
    progress : optional ``progress(fraction, message)``.
    """
    return run_steps(variation_steps(dataset, config), progress)
