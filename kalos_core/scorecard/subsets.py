"""The confusion cells and the subsets of a scorecard, as pure functions of its stored label outcomes
(no new matching).

``outcomes[rater]`` of a :class:`~kalos_core.scorecard.ScorecardResult` (its ``to_dict()``) is the
outcome table of that rater::

    {"rater":     {"id", "image", "class", "area",
                   "match": index of the reference label it matched at the IoU (its class), -1: an extra,
                   "blind": index of the reference label the class-blind matching paired it with, -1: none},
     "reference": {"ids": [the label's ids (a majority's: the labels it was made from)], "image", "class", "area"}}

A **subset** takes every outcome to the subsets it belongs to: a found pair (true positive) by its
*reference* label, an extra (false positive) by the rater's label, a miss (false negative) by the
reference label (as COCOeval's area ranges do: a detection matched to a ground truth counts in the
ground truth's range). So subsets that partition the labels partition TP, FP and FN: their counts sum
to the whole. Definitions (:func:`subset_keys`):

* ``size``: the label's box area in COCO's small / medium / large (:data:`SIZE_BUCKETS`);
* ``image``: ``values = {image id: [subsets]}``: a sample field's value, or the saved views holding
  the sample (views may overlap: then the subsets need not sum to the whole);
* ``label``: ``values = {label id: value}``: a label attribute; a reference made from several labels
  takes the value most of them hold (ties: the smallest as text); a label without a value is ``(none)``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .engine import ALL, NONE, SIZE_BUCKETS, _bucket, _ratio

OUTCOMES = ("tp", "fp", "fn")


def confusion_matrix(table: dict) -> dict:
    """The class-blind confusion matrix of one rater's outcome table: ``{"classes", "matrix"}``, rows the
    reference's class, columns the rater's, ``(none)`` last (as the scorecard's ``confusion``)."""
    return _cells(table)[0]


def confusion_cell_ids(table: dict, reference_class: str, rater_class: str) -> list:
    """The label ids behind the cell (``reference_class``, ``rater_class``): one per counted pair, the
    rater's label where the column is a rater class, else the missed reference label (a majority's:
    the first label it was made from), so as many ids as the cell counts."""
    return _cells(table)[1].get((reference_class, rater_class), [])


def _cells(table: dict) -> tuple[dict, dict]:
    dt, gt = table["rater"], table["reference"]
    ids: dict = {}
    found = np.zeros(len(gt["class"]), bool)
    for i, j in enumerate(dt["blind"]):
        ref = NONE if j < 0 else gt["class"][j]
        if j >= 0:
            found[j] = True
        ids.setdefault((ref, dt["class"][i]), []).append(dt["id"][i])
    for j in np.flatnonzero(~found).tolist():
        ids.setdefault((gt["class"][j], NONE), []).append(gt["ids"][j][0])
    used = sorted({c for pair in ids for c in pair if c != NONE})
    classes = used + [NONE]
    matrix = [[len(ids.get((a, b), ())) for b in classes] for a in classes]
    return {"classes": classes, "matrix": matrix}, ids


def subset_keys(table: dict, by: str, values: dict | None = None) -> dict:
    """Each outcome's subsets: ``{"rater": [[subsets] per rater label], "reference": [[...] per
    reference label]}`` for the definition ``by`` (``size``, ``image`` or ``label``, see the module)."""
    dt, gt = table["rater"], table["reference"]
    if by == "size":
        names = list(SIZE_BUCKETS)
        return {"rater": [[names[b]] for b in _bucket(np.asarray(dt["area"], float)).tolist()],
                "reference": [[names[b]] for b in _bucket(np.asarray(gt["area"], float)).tolist()]}
    values = values or {}
    if by == "image":
        of = lambda image: [str(v) for v in _listed(values.get(image))] or [NONE]
        return {"rater": [of(i) for i in dt["image"]], "reference": [of(i) for i in gt["image"]]}
    if by == "label":
        def majority(ids):
            held = Counter(str(values[i]) for i in ids if values.get(i) is not None)
            return [min(held, key=lambda v: (-held[v], v))] if held else [NONE]
        return {"rater": [[NONE if values.get(i) is None else str(values[i])] for i in dt["id"]],
                "reference": [majority(ids) for ids in gt["ids"]]}
    raise ValueError(f"subsets by {by!r}: choose size, image or label")


def _listed(v) -> list:
    return [] if v is None else list(v) if isinstance(v, (list, tuple, set)) else [v]


def subset_outcomes(table: dict, keys: dict) -> dict:
    """``{subset: {"tp": [(rater id, reference index)], "fp": [rater ids], "fn": [reference indices],
    "class": {...}}}``: the outcomes of one rater in each subset (a found pair by its reference label)."""
    dt, gt = table["rater"], table["reference"]
    out: dict = {}
    get = lambda s: out.setdefault(s, {o: [] for o in OUTCOMES})
    found = np.zeros(len(gt["class"]), bool)
    for i, j in enumerate(dt["match"]):
        if j >= 0:
            found[j] = True
            for s in keys["reference"][j]:
                get(s)["tp"].append(i)
        else:
            for s in keys["rater"][i]:
                get(s)["fp"].append(i)
    for j in np.flatnonzero(~found).tolist():
        for s in keys["reference"][j]:
            get(s)["fn"].append(j)
    return out


def subset_rows(result: dict, by: str, values: dict | None = None) -> dict:
    """The scorecard split by a subset definition: ``{subset: rows}``, a row per rater and class (and
    ``(all)``) with ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1``; subsets in sorted order
    (COCO's sizes in theirs). ``result``: a scorecard's ``to_dict()``."""
    per: dict = {}
    for rater in result.get("raters") or []:
        table = result["outcomes"][rater]
        dt, gt = table["rater"], table["reference"]
        for s, o in subset_outcomes(table, subset_keys(table, by, values)).items():
            counts: dict = {}
            for name, idx, classes in (("tp", o["tp"], dt["class"]), ("fp", o["fp"], dt["class"]),
                                       ("fn", o["fn"], gt["class"])):
                for i in idx:
                    for c in (ALL, classes[i]):
                        counts.setdefault(c, dict.fromkeys(OUTCOMES, 0))[name] += 1
            counts.setdefault(ALL, dict.fromkeys(OUTCOMES, 0))
            per.setdefault(s, []).extend(_row(rater, c, n) for c, n in sorted(counts.items(), key=lambda kv:
                                                                           (kv[0] != ALL, kv[0])))
    order = list(SIZE_BUCKETS) if by == "size" else sorted(per, key=lambda s: (s == NONE, s))
    return {s: per[s] for s in order if s in per}


def subset_ids(result: dict, rater: str, by: str, subset: str, values: dict | None = None) -> list:
    """The labels behind ``rater``'s counts in ``subset``: its found and extra labels, and the missed
    reference labels (a majority's: the first label it was made from)."""
    table = result["outcomes"][rater]
    o = subset_outcomes(table, subset_keys(table, by, values)).get(subset)
    if o is None:
        return []
    return ([table["rater"]["id"][i] for i in o["tp"] + o["fp"]] +
            [table["reference"]["ids"][j][0] for j in o["fn"]])


def _row(rater: str, cls: str, n: dict) -> dict:
    tp, fp, fn = n["tp"], n["fp"], n["fn"]
    return {"rater": rater, "class": cls, "tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn), "f1": _ratio(2 * tp, 2 * tp + fp + fn)}
