"""Attribute agreement: do raters who drew the same object agree on its attributes?

The units are an agreement run's (docs/method.md §3): given (``units``: label id -> unit id, as a
stored run's ``<key>_unit``), or matched here with the agreement's threshold, distance, solver
and cost. Each attribute (``occluded``, ``pose``, a plate number, ...) is one variable: a
reliability matrix of raters x units whose cells are the values of the raters' labels in the
unit. A label without the attribute (absent or None, or NaN) is missing data, not disagreement;
a unit with fewer than two values is not pairable. Per attribute, Krippendorff's α under its
metric (:mod:`.alpha`): nominal for text and true/false, interval for numbers, or as declared
(``metrics``: ``"pose:ordinal"``, ``"plate:levenshtein"``); and the same per class, a unit's class
being its labels' most frequent one (a tie: the lowest class id).
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np

from ..agreement.config import DIAGNOSTICS, AgreementConfig
from ..agreement.pipeline import agreement_steps
from ..columns import AnnotationColumns
from ..data import MultiRaterDataset
from ..jsonsafe import json_safe
from ..matching.params import MATCHING_PARAMS, MatchingConfig
from ..params import Config, ParamError, param, same_param
from ..progress import rescale, run_steps
from .alpha import MAX_TEXTS, METRICS, NUMERIC, forget_texts, group_alpha

NO_PAIRS = "fewer than 2 pairable values: no unit holds two raters' values of it"


def _metric_of(item: str) -> tuple[str, str]:
    name, sep, metric = item.rpartition(":")
    if not sep or not name:
        raise ParamError("metrics", f"metrics: {item!r} is not attribute:metric (e.g. pose:ordinal)")
    if metric not in METRICS:
        raise ParamError("metrics", f"metrics: unknown metric {metric!r} in {item!r}; known: {', '.join(METRICS)}")
    return name, metric


@dataclass(frozen=True)
class AttributeConfig(Config):
    """Settings of an attribute run: the matching that makes the units (the agreement's own
    parameters, used when no units are given), which attributes, and their metrics."""

    threshold: float = same_param(MatchingConfig, "threshold")
    distance: str | None = same_param(MatchingConfig, "distance")
    solver: str = same_param(MatchingConfig, "solver")
    cost: str = same_param(MatchingConfig, "cost")
    names: tuple[str, ...] | None = param(
        None, "names", "the attributes to compare, comma-separated (default: every attribute the labels carry)",
        optional=True, flag="--attributes", label="Attributes")
    metrics: tuple[str, ...] | None = param(
        None, "names", "metric per attribute as attribute:metric, comma-separated, e.g. "
        f"pose:ordinal,plate:levenshtein ({', '.join(METRICS)}; default: nominal for text and true/false, "
        "interval for numbers)", optional=True)

    def check(self) -> None:
        names = [_metric_of(m)[0] for m in self.metrics or ()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ParamError("metrics", f"metrics: {', '.join(twice)} given more than one metric")

    def metric_map(self) -> dict[str, str]:
        return dict(_metric_of(m) for m in self.metrics or ())


@dataclass
class AttributeResult:
    """Per attribute (``per_attribute[name]``): ``metric``, ``value_type``, ``alpha`` (None with a
    ``reason`` where nothing is pairable), ``n_labels`` (labels in the units with a value),
    ``n_units`` (pairable units), ``n_values`` (pairable values), ``n_disagreeing`` and
    ``disagreeing_units`` (pairable units whose values are not all equal, sorted), and the same
    per class under ``per_class``."""

    per_attribute: dict
    n_images: int = 0
    n_annotations: int = 0
    n_units: int = 0                      #: units holding two or more labels
    units_from: str = "matched"           #: "matched" here, or "given" (a stored agreement run's)
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe(asdict(self))


def _kind(t: type) -> str | None:
    """The value type of values of Python type ``t``: boolean, number or text (None: not compared)."""
    if issubclass(t, (bool, np.bool_)):
        return "boolean"
    return "number" if issubclass(t, numbers.Real) else "text" if issubclass(t, str) else None


def attribute_names(attributes: Mapping[Any, Mapping], config: AttributeConfig) -> list[str]:
    """The attributes to compare: ``config.names`` or every one found; a ValueError names one
    that no label carries (or a metric's attribute that is not compared)."""
    found = sorted({k for d in attributes.values() if d for k in d})
    if not found:
        raise ValueError("no label carries attributes: nothing to compare (each label needs 'attributes': "
                         "{name: value})")
    names = list(config.names or found)
    missing = [n for n in names + list(config.metric_map()) if n not in found]
    if missing:
        raise ValueError(f"no label carries the attribute {', '.join(map(repr, dict.fromkeys(missing)))}; "
                         f"the labels carry: {', '.join(found)}")
    idle = [n for n in config.metric_map() if n not in names]
    if idle:
        raise ValueError(f"metrics: {', '.join(map(repr, idle))} is not among the attributes compared "
                         f"({', '.join(names)})")
    return names


def _column(name: str, ids: list, attributes: Mapping, metric: str | None) -> dict:
    """One attribute over the labels ``ids``: value codes (-1 missing), its type, metric and domain.
    A value that is neither text, a number nor true/false is refused, naming the label."""
    empty: dict = {}
    raw = [(attributes.get(i) or empty).get(name) for i in ids]
    present = [k for k, v in enumerate(raw) if v is not None and v == v]      # None and NaN: missing
    kinds = {t: _kind(t) for t in {type(raw[k]) for k in present}}
    if None in kinds.values():
        k = next(k for k in present if kinds[type(raw[k])] is None)
        raise ValueError(f"attribute {name!r} of label {ids[k]!r} holds {raw[k]!r}: only text, numbers and "
                         "true/false are compared (leave it out with --attributes)")
    found = set(kinds.values())
    value_type = found.pop() if len(found) == 1 else "mixed" if found else "none"
    metric = metric or ("interval" if value_type == "number" else "nominal")
    values = [raw[k] for k in present]
    if metric in NUMERIC:
        values = [_number(name, ids[k], raw[k], metric) for k in present] if value_type != "number" else values
        _check_numbers(name, [ids[k] for k in present], np.asarray(values, float), metric)
    elif metric == "levenshtein" and value_type not in ("text", "none"):
        k = next(k for k in present if not isinstance(raw[k], str))
        raise ValueError(f"attribute {name!r} (levenshtein) compares text; label {ids[k]!r} holds {raw[k]!r}")
    elif value_type == "mixed":   # nominal: true and 1 are two values
        values = [(isinstance(v, (bool, np.bool_)), v) for v in values]
    index: dict = {}
    codes = np.full(len(ids), -1, np.int64)
    codes[present] = [index.setdefault(v, len(index)) for v in values]
    domain = list(index)
    if metric in NUMERIC:   # codes in the values' order (ordinal ranks them)
        order = np.argsort(domain, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        codes[present] = rank[codes[present]]
        domain = np.asarray(domain, float)[order]
    return {"codes": codes, "value_type": value_type, "metric": metric, "domain": domain}


def _check_numbers(name: str, ids: list, x: np.ndarray, metric: str) -> None:
    bad = ~np.isfinite(x) | ((x < 0) if metric == "ratio" else False)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"attribute {name!r} ({metric}) needs {'non-negative ' if metric == 'ratio' else ''}"
                         f"finite numbers; label {ids[k]!r} holds {x[k]!r}")


def _number(name: str, lid: Any, v: Any, metric: str) -> float:
    """``v`` as a number (true/false as 1/0, a number written as text read); a ValueError names the label."""
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError(f"attribute {name!r} ({metric}) needs numbers; label {lid!r} holds {v!r}") from None



def _labels(dataset: MultiRaterDataset, units: Mapping) -> tuple[list, np.ndarray, np.ndarray]:
    """``(label ids, unit ids, class ids)`` of the labels that belong to a unit."""
    ids, cats = [], []
    for im in dataset.images:
        anns = im.annotations
        if isinstance(anns, AnnotationColumns):
            ids += anns.ids
            cats.append(np.asarray(anns.category, np.int64))
        else:
            ids += [a.id for a in anns]
            cats.append(np.array([a.category for a in anns], np.int64))
    cat = np.concatenate(cats) if cats else np.empty(0, np.int64)
    keep = [k for k, i in enumerate(ids) if i in units]
    return [ids[k] for k in keep], np.array([units[ids[k]] for k in keep], dtype=object), cat[keep]


def _unit_classes(unit: np.ndarray, cat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's most frequent class (a tie: the lowest class id), and the classes' ids."""
    classes, code = np.unique(cat, return_inverse=True)
    width = max(len(classes), 1)
    key, count = np.unique(unit * width + code.reshape(-1), return_counts=True)
    key_unit, key_class = key // width, key % width
    order = np.lexsort((key_class, -count, key_unit))
    first = order[np.r_[True, key_unit[order][1:] != key_unit[order][:-1]]] if len(order) else order
    return key_class[first], classes


def _counts(unit: np.ndarray, codes: np.ndarray, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: values present, and whether they are not all equal."""
    m = np.bincount(unit, minlength=n_units)
    lo, hi = np.full(n_units, np.iinfo(np.int64).max), np.full(n_units, -1)
    np.minimum.at(lo, unit, codes)
    np.maximum.at(hi, unit, codes)
    return m, (m >= 2) & (lo != hi)


def _entry(alpha: float, n: int, m: np.ndarray, disagree: np.ndarray, names: np.ndarray, reason: str | None) -> dict:
    return {"alpha": None if reason or n == 0 else float(alpha), "reason": reason or (None if n else NO_PAIRS),
            "n_units": int((m >= 2).sum()), "n_values": int(n), "n_disagreeing": int(disagree.sum()),
            "disagreeing_units": names[disagree].tolist()}


def compare_attributes(dataset: MultiRaterDataset, attributes: Mapping[Any, Mapping], units: Mapping,
                       config: AttributeConfig = AttributeConfig(), names: list[str] | None = None
                       ) -> tuple[dict, int]:
    """``({attribute: entry}, units holding two or more labels)`` (entries: see
    :class:`AttributeResult`) on the units ``units`` (label id -> unit id)."""
    names = names or attribute_names(attributes, config)
    metrics = config.metric_map()
    ids, unit_ids, cat = _labels(dataset, units)
    unit_names, unit = np.unique(unit_ids.astype(str), return_inverse=True)   # names sorted
    unit = np.asarray(unit, np.int64).reshape(-1)
    n_units = len(unit_names)
    unit_class, classes = _unit_classes(unit, cat)
    class_names = [dataset.categories.get(int(c), str(c)) for c in classes.tolist()]
    by = np.argsort(unit_class, kind="stable")                  # units class by class, names still sorted
    bounds = np.searchsorted(unit_class[by], np.arange(len(classes) + 1))
    out = {}
    for name in names:
        col = _column(name, ids, attributes, metrics.get(name))
        has = col["codes"] >= 0
        u, codes = unit[has], col["codes"][has]
        m, disagree = _counts(u, codes, n_units)
        reason = None
        if col["metric"] == "levenshtein" and len(col["domain"]) > MAX_TEXTS:
            reason = f"{len(col['domain'])} distinct texts; levenshtein compares at most {MAX_TEXTS} (use nominal)"
            pairable = np.where(m >= 2, m, 0)
            alpha, n = np.full(1, np.nan), np.array([pairable.sum()])
            by_class, n_class = np.full(len(classes), np.nan), np.bincount(unit_class, pairable, len(classes))
        else:
            alpha, n = group_alpha(u, codes, np.zeros(n_units, np.int64), 1, col["metric"], col["domain"])
            by_class, n_class = group_alpha(u, codes, unit_class, len(classes), col["metric"], col["domain"])
            forget_texts()
        per_class = {}
        for c in np.unique(unit_class[u]).tolist():
            at = by[bounds[c]:bounds[c + 1]]
            per_class[class_names[c]] = _entry(by_class[c], n_class[c], m[at], disagree[at], unit_names[at], reason)
        out[name] = {"metric": col["metric"], "value_type": col["value_type"], "n_labels": int(has.sum()),
                     **_entry(alpha[0], n[0], m, disagree, unit_names, reason), "per_class": per_class}
    return out, int((np.bincount(unit, minlength=n_units) >= 2).sum())


def attribute_steps(dataset: MultiRaterDataset, attributes: Mapping[Any, Mapping],
                    config: AttributeConfig = AttributeConfig(), units: Mapping | None = None):
    """:func:`compute_attributes` as a generator of ``(fraction, message)`` steps; returns the result."""
    names = attribute_names(attributes, config)
    given = units is not None
    if not given:
        for name in names:   # every value readable under its metric before the matching
            _column(name, list(attributes), attributes, config.metric_map().get(name))
        agreement = AgreementConfig(**{n: getattr(config, n) for n in MATCHING_PARAMS}, bootstrap=0,
                                    **dict.fromkeys(DIAGNOSTICS, False))
        result = yield from rescale(agreement_steps(dataset, agreement), 0.0, 0.8)
        units = result.unit_of.as_dict() if hasattr(result.unit_of, "as_dict") else result.unit_of
    yield 0.8, "comparing attributes"
    entries, n_units = compare_attributes(dataset, attributes, units, config, names)
    yield 1.0, "attributes compared"
    return AttributeResult(entries, len(dataset.images), dataset.n_annotations, n_units,
                           "given" if given else "matched", config.to_dict())


def compute_attributes(dataset: MultiRaterDataset, attributes: Mapping[Any, Mapping],
                       config: AttributeConfig = AttributeConfig(), units: Mapping | None = None) -> AttributeResult:
    """Krippendorff's α of each attribute over the raters' matched units.

    Parameters
    ----------
    dataset : the raters' labels.
    attributes : label id -> ``{attribute: value}`` (a COCO annotation's ``"attributes"``).
    config : the matching (used when ``units`` is None), the attributes and their metrics.
    units : label id -> unit id (a stored agreement run's); None: matched here.
    """
    return run_steps(attribute_steps(dataset, attributes, config, units))
