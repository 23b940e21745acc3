"""Which units fall apart at each localisation-sensitivity threshold: the drill-down behind a
point of the sensitivity curve (docs/method.md §6).

A unit of the run (labels matched together at its similarity threshold t) *falls apart* at
another threshold t' when, re-matched at t' with the run's distance, solver and cost, its labels
are no longer all in one unit (a stricter t' drops a link; a looser one can re-pair a label
elsewhere). Units of one label cannot fall apart. Not part of the CLI's JSON contract: the
FiftyOne run stores it beside the result.
"""

from __future__ import annotations

import numpy as np

from ..columns import ids_and_raters
from ..data import MultiRaterDataset
from ..matching.costs import get_cost
from ..matching.solvers import get_solver
from ..params import fraction_key
from .bulk_match import match_requests
from .problem import prepare_image


def split_units(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Per annotation: is its unit in ``base`` (2+ labels) split over several units of ``other``?"""
    if not len(base):
        return np.zeros(0, bool)
    n = int(base.max()) + 1
    lo, hi = np.full(n, np.iinfo(np.int64).max), np.full(n, -1)
    np.minimum.at(lo, base, other)
    np.maximum.at(hi, base, other)
    return (lo != hi)[base] & (np.bincount(base, minlength=n) >= 2)[base]


#: images matched together (every threshold of an image in one bulk pass; bounds the pass's arrays)
BATCH = 512


def falls_apart(dataset: MultiRaterDataset, config) -> dict[str, dict]:
    """``{threshold key: {"samples": [image ids], "labels": [annotation ids]}}`` for each of
    ``config.lsa_thresholds`` (keys as the result's ``lsa``): the images and the labels of the
    units of the run that fall apart there, in the data set's order. Images are matched in
    batches, every threshold at once (:func:`~kalos_core.agreement.bulk_match.match_requests`:
    the same units as matching each image alone)."""
    thresholds = list(dict.fromkeys(float(t) for t in config.lsa_thresholds))
    out = {fraction_key(t): {"samples": [], "labels": []} for t in thresholds}
    if not thresholds:
        return out
    spec = config.distance_spec(dataset.kind)
    solver, cost = get_solver(config.solver), get_cost(config.cost)
    floor = min((float(config.threshold), *thresholds))
    levels = [float(config.threshold), *thresholds]
    for b in range(0, len(dataset.images), BATCH):
        images = dataset.images[b:b + BATCH]
        ips = [prepare_image(image, spec, floor) for image in images]
        many = [k for k, ip in enumerate(ips) if len(ip.annotations) >= 2]
        units = match_requests(ips, [(k, t, None, None) for k in many for t in levels], solver, cost)
        for n, k in enumerate(many):
            base, *others = (u for u, _ in units[n * len(levels):(n + 1) * len(levels)])
            ids = None
            for t, other in zip(thresholds, others):
                apart = np.flatnonzero(split_units(base, other))
                if len(apart):
                    ids = ids_and_raters(ips[k].annotations)[0] if ids is None else ids
                    entry = out[fraction_key(t)]
                    entry["samples"].append(str(images[k].id))
                    entry["labels"] += [str(ids[j]) for j in apart.tolist()]
    return out
