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


def falls_apart(dataset: MultiRaterDataset, config) -> dict[str, dict]:
    """``{threshold key: {"samples": [image ids], "labels": [annotation ids]}}`` for each of
    ``config.lsa_thresholds`` (keys as the result's ``lsa``): the images and the labels of the
    units of the run that fall apart there, in the data set's order."""
    thresholds = list(dict.fromkeys(float(t) for t in config.lsa_thresholds))
    out = {fraction_key(t): {"samples": [], "labels": []} for t in thresholds}
    if not thresholds:
        return out
    spec = config.distance_spec(dataset.kind)
    solver, cost = get_solver(config.solver), get_cost(config.cost)
    floor = min((float(config.threshold), *thresholds))
    for image in dataset.images:
        ip = prepare_image(image, spec, floor)
        if len(ip.annotations) < 2:
            continue
        base, _ = ip.match(float(config.threshold), solver, cost)
        ids = ids_and_raters(ip.annotations)[0]
        for t in thresholds:
            apart = np.flatnonzero(split_units(base, ip.match(t, solver, cost)[0]))
            if len(apart):
                entry = out[fraction_key(t)]
                entry["samples"].append(str(image.id))
                entry["labels"] += [str(ids[k]) for k in apart.tolist()]
    return out
