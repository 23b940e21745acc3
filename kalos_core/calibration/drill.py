"""Which pairs fall in each bin of the Do / De histograms: the drill-down behind a histogram bar.

A Do / De observation (:mod:`.sampling`) is a query annotation and a target (image, row) group;
its pair is the query and the group's *nearest* annotation (the one its distance was measured
to), or no partner when the group is empty (distance 1). :func:`bin_pairs` lists, per bin of
each distance's stored histogram, every pair of the bin, by ids; a bin holding more than ``cap``
pairs (:data:`DRILL_CAP`, far above a bar of a few thousand labels; :data:`SLOW_CAP` for a distance
without a vectorised pair path) keeps an even spread of that many over the plan's order, so its
samples are not only the first few (``caps``: the cap of each distance):

``{"cap": cap, "caps": {name: cap}, "samples": [image ids], "labels": [annotation ids], "label_sample": [index in
"samples" of each label's image], "distances": {name: {"do": [[q, p, q, p, ...] per bin], "de": [...]}}}``

where ``q`` / ``p`` index ``labels`` (``p = -1``: no partner). A Do pair lies on one image; a De
pair joins two images. Not part of the CLI's JSON contract: the FiftyOne run stores it beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import ranges
from ..columns import ids_and_raters
from ..geometry import DistanceSpec
from .sampling import PreparedCache, SamplePlan, pair_similarity

#: the most pairs kept per histogram bin (the demo's fullest bin holds 2,760; a bin holds tens of
#: thousands on a large data set, which the drill-down then says it left out)
DRILL_CAP = 5_000
#: the most pairs kept per bin of a distance without a vectorised pair path (exact polygon IoU: each
#: pair's partner is found one query at a time, ~0.5 ms; 1,000 demo images: 5,000 per bin took 58 s)
SLOW_CAP = 300


@dataclass
class Observations:
    """What a calibration measured, kept beside its result for :func:`bin_pairs` (not serialised)."""

    plan: SamplePlan
    cache: PreparedCache
    specs: dict            #: distance name -> DistanceSpec
    values: dict           #: distance name -> (do, de) arrays, one value per observation


def bin_of(values: np.ndarray, edges) -> np.ndarray:
    """The histogram bin of each value as ``np.histogram`` counts it (the last bin closed), -1 outside."""
    edges = np.asarray(edges, float)
    k = np.searchsorted(edges, values, side="right") - 1
    k[values == edges[-1]] = len(edges) - 2
    k[(values < edges[0]) | (values > edges[-1])] = -1
    return k


def nearest_partner(plan: SamplePlan, spec: DistanceSpec, cache: PreparedCache, obs: np.ndarray,
                    target: np.ndarray) -> np.ndarray:
    """Global index of the annotation of group ``target[obs]`` nearest to each observation's query
    (first of ties), -1 where the group is empty."""
    _, everything = cache.get(spec)
    out = np.full(len(obs), -1, np.int64)
    start, size = plan.group_start[target[obs]], plan.group_end[target[obs]] - plan.group_start[target[obs]]
    full = np.flatnonzero(size > 0)
    if not len(full):
        return out
    if spec.pairs is not None:
        owner, partner = ranges(start[full], size[full])
        s = pair_similarity(spec, everything, plan.obs_query[obs[full]][owner], partner)
        best = np.maximum.reduceat(s, np.cumsum(size[full]) - size[full])
        hit = np.flatnonzero(s == best[owner])
        _, first = np.unique(owner[hit], return_index=True)
        out[full] = partner[hit[first]]
        return out
    for k in full.tolist():
        s = spec.similarity(everything.take(plan.obs_query[obs[k:k + 1]]),
                            everything.take(np.arange(start[k], start[k] + size[k])))
        out[k] = start[k] + int(np.argmax(np.asarray(s)[0]))
    return out


def spread(items: np.ndarray, cap: int) -> np.ndarray:
    """``items`` when there are at most ``cap``, else ``cap`` of them evenly spaced (first and last kept)."""
    if len(items) <= cap:
        return items
    return items[np.linspace(0, len(items) - 1, cap).round().astype(np.int64)]


def bin_pairs(obs: Observations, histograms: dict, cap: int = DRILL_CAP) -> dict:
    """The pairs of each bin of ``histograms`` (distance name -> ``{"edges": ...}``), see the module doc."""
    plan = obs.plan
    ids = [a for anns in plan.order for a in ids_and_raters(anns)[0]]
    image_of = np.repeat(np.arange(len(plan.order)), [len(anns) for anns in plan.order])
    labels: dict[int, int] = {}                      # global annotation index -> position in "labels"

    def code(k: int) -> int:
        return labels.setdefault(k, len(labels)) if k >= 0 else -1

    out = {}
    caps = {}
    for name, (do, de) in obs.values.items():
        edges = histograms[name]["edges"]
        caps[name] = keep = cap if obs.specs[name].pairs is not None else min(cap, SLOW_CAP)
        per = {}
        for key, values, target in (("do", do, plan.do_group), ("de", de, plan.de_group)):
            b = bin_of(values, edges)
            order = np.argsort(b, kind="stable")
            order = order[b[order] >= 0]
            cuts = np.searchsorted(b[order], np.arange(len(edges)))
            chosen = [spread(order[cuts[i]: cuts[i + 1]], keep) for i in range(len(edges) - 1)]
            flat = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
            partner = nearest_partner(plan, obs.specs[name], obs.cache, flat, target).tolist()
            query = plan.obs_query[flat].tolist()
            pairs, at = [], 0
            for c in chosen:
                pairs.append([code(x) for q, p in zip(query[at: at + len(c)], partner[at: at + len(c)])
                              for x in (q, p)])
                at += len(c)
            per[key] = pairs
        out[name] = per
    used = np.array(sorted(labels, key=labels.get), np.int64)
    images, at_image = np.unique(image_of[used], return_inverse=True)
    return {"cap": cap, "caps": caps, "samples": [str(plan.dataset.images[i].id) for i in images.tolist()],
            "labels": [str(ids[k]) for k in used.tolist()], "label_sample": at_image.ravel().tolist(),
            "distances": out}
