"""Python entries for variation-type runs (:mod:`kalos_core.variations`): compute, load, views.

::

    from operators.variation_runs import variations_run
    result = variations_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="variations")

The run (``config.method == "kalos_variations"``) stores ``VariationResult.to_dict()``: counts
per threshold × type, per rater and per class, and the boundary-IoU histogram of the agreed
labels. On every rater label it writes, at the run's threshold, ``<run_key>_variation`` (the
type), ``<run_key>_partner`` (the partner label's id) and ``<run_key>_iou``.
"""

from __future__ import annotations

import fiftyone as fo
from fiftyone import ViewField as F

from kalos_core.progress import rescale, run_steps, steps_of
from kalos_core.variations import DEFAULT_THRESHOLDS, TYPES, VariationConfig, VariationResult, compute_variations

from . import run_store
from .adapter import SetupError, read_dataset, resolve_source
from .runs import parse_thresholds
from .view_rules import finish
from .writeback import write_label_values

METHOD = "kalos_variations"
DEFAULT_KEY = "variations"
ATTRS = ("variation", "partner", "iou")


def attr(run_key: str, name: str) -> str:
    return f"{run_key}_{name}"


def owned_paths(source, run_key: str) -> list[str]:
    return [f"{f}.{source.list_name}.{attr(run_key, a)}" for f in source.fields for a in ATTRS]


def check_variations(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                     run_key=DEFAULT_KEY, threshold=0.5, thresholds=DEFAULT_THRESHOLDS, reference=None, merge=True,
                     overwrite=False):
    """Every check before anything is read or written; returns ``(source, config)``."""
    source = resolve_source(collection, rater_fields, label_field, rater_attribute)
    run_store.validate_key(collection, run_key, METHOD, overwrite=overwrite)
    if source.kind not in ("box", "polygon", "keypoints"):
        raise SetupError(f"variation types need boxes, polygons or keypoints, not {source.label_cls.__name__}",
                         "rater_fields" if source.rater_attribute is None else "label_field")
    run_store.check_free_paths(collection, run_key, owned_paths(source, run_key), "run_key")
    if len(collection) == 0:
        raise SetupError("the view has no samples: nothing to compute (no run was written)", "run_key")
    try:
        ts = parse_thresholds(thresholds) if thresholds not in (None, "") else list(DEFAULT_THRESHOLDS)
    except SetupError:
        raise SetupError(f"thresholds must be IoU values within (0, 1] separated by commas, got {thresholds!r}",
                         "thresholds") from None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise SetupError(f"threshold must be a number within (0, 1], got {threshold!r}", "threshold")
    try:
        config = VariationConfig(thresholds=tuple(ts), threshold=float(threshold), reference=reference or None,
                                 merge=bool(merge))
    except ValueError as e:
        raise SetupError(str(e), "thresholds") from None
    return source, config


def variations_steps(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                     run_key=DEFAULT_KEY, threshold=0.5, thresholds=DEFAULT_THRESHOLDS, reference=None, merge=True,
                     overwrite=False):
    """:func:`variations_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    source, config = check_variations(collection, rater_fields, label_field, rater_attribute, run_key, threshold,
                                      thresholds, reference, merge, overwrite)
    yield 0.0, "reading labels"
    data = read_dataset(collection, source)
    if config.reference is not None and config.reference not in data.raters:
        raise SetupError(f"reference {config.reference!r} is not a rater; choose among {data.raters}", "reference")
    result: VariationResult = yield from rescale(
        steps_of(lambda progress: compute_variations(data, config, progress)), 0.05, 0.9)
    yield 0.92, "writing the results"
    store_variations(collection, source, run_key, result)
    yield 1.0, "done"
    return result


def variations_run(collection, progress=None, **params) -> VariationResult:
    """Variation types on ``collection`` stored under ``run_key`` (see :func:`check_variations`)."""
    return run_steps(variations_steps(collection, **params), progress)


def store_variations(collection, source, run_key, result: VariationResult) -> None:
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        run_store.delete_run(dataset, run_key)
    labels = result.labels
    values = {attr(run_key, "variation"): {str(k): v.type for k, v in labels.items()},
              attr(run_key, "partner"): {str(k): str(v.partner) for k, v in labels.items() if v.partner is not None},
              attr(run_key, "iou"): {str(k): float(v.iou) for k, v in labels.items() if v.iou is not None}}
    write_label_values(collection, source.fields, source.list_name, values,
                       {attr(run_key, "variation"): fo.StringField(), attr(run_key, "partner"): fo.StringField(),
                        attr(run_key, "iou"): fo.FloatField()})
    summary = result.to_dict()
    summary["variation_config"] = summary.pop("config")
    cfg = result.config
    run_store.save_run(
        collection, run_key, METHOD, summary, fields=owned_paths(source, run_key),
        **source.run_config(),
        list_name=source.list_name, threshold=cfg["threshold"], thresholds=list(cfg["thresholds"]),
        reference=cfg["reference"], merge=cfg["merge"])


def load_variations(dataset, run_key: str = DEFAULT_KEY) -> dict:
    return run_store.load_results(dataset, run_key, METHOD)


def _fields(dataset, run_key):
    cfg = run_store.get_run(dataset, run_key, METHOD).config
    return cfg.rater_fields or [cfg.label_field], cfg.list_name


def _finish(view, dataset, run_key, current):
    """The one click rule (:func:`operators.view_rules.finish`): the user's sort in ``current``
    is kept (a variation run has no per-sample α, so without one the order is the dataset's),
    only the run's rater fields and ``rater_list`` are shown."""
    fields, _ = _fields(dataset, run_key)
    return finish(view, dataset, list(fields) + ["rater_list"], current=current)


def label_count(view, dataset, run_key: str) -> int:
    """The rater labels ``view`` keeps (over the run's rater fields)."""
    fields, list_name = _fields(dataset, run_key)
    return sum(view.count(f"{f}.{list_name}") for f in fields)


def type_view(dataset, run_key: str, vtype: str, rater: str | None = None, current=None):
    """Samples with labels of type ``vtype`` at the run's threshold (only those labels; one
    rater's when ``rater`` is given); the click rule of :func:`_finish` with the App's ``current``."""
    if vtype not in TYPES:
        raise SetupError(f"unknown variation type {vtype!r}; choose among {list(TYPES)}", "type")
    fields, _ = _fields(dataset, run_key)
    cfg = dataset.get_run_info(run_key).config
    view = dataset.load_run_view(run_key)
    for f in fields:
        cond = F(attr(run_key, "variation")) == vtype
        if rater is not None and cfg.rater_attribute:
            cond = cond & (F(cfg.rater_attribute) == rater)
        elif rater is not None and (cfg.raters or {}).get(f) != rater:
            cond = F("_id") == None  # noqa: E711 - another rater's field: no label
        view = view.filter_labels(f, cond, only_matches=False)
    return _finish(view.match(_any_labels(fields, cfg.list_name)), dataset, run_key, current)


def iou_bin_view(dataset, run_key: str, low: float, high: float, current=None):
    """Samples with agreed labels whose IoU lies in ``[low, high)`` (``high`` = 1 included); the
    click rule of :func:`_finish` with the App's ``current``."""
    fields, list_name = _fields(dataset, run_key)
    view = dataset.load_run_view(run_key)
    iou = F(attr(run_key, "iou"))
    upper = iou <= high if high >= 1 else iou < high
    for f in fields:
        view = view.filter_labels(f, (F(attr(run_key, "variation")) == "agreed") & (iou >= low) & upper,
                                  only_matches=False)
    return _finish(view.match(_any_labels(fields, list_name)), dataset, run_key, current)


def _any_labels(fields, list_name):
    expr = None
    for f in fields:
        e = F(f"{f}.{list_name}").length() > 0
        expr = e if expr is None else expr | e
    return expr
