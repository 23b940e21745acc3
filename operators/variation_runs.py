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

from kalos_core.measure import MeasureData
from kalos_core.variations import TYPES, VariationResult

from . import run_store
from .adapter import SetupError, read_dataset
from .measure_runs import MeasureRun, measure_run, measure_steps
from .view_rules import finish
from .writeback import write_label_values

METHOD = "kalos_variations"
DEFAULT_KEY = "variations"
ATTRS = ("variation", "partner", "iou")


def attr(run_key: str, name: str) -> str:
    return f"{run_key}_{name}"


def owned_paths(source, run_key: str) -> list[str]:
    return [f"{f}.{source.list_name}.{attr(run_key, a)}" for f in source.fields for a in ATTRS]


def _read(collection, source, config, extras) -> MeasureData:
    data = read_dataset(collection, source)
    if config.reference is not None and config.reference not in data.raters:
        raise SetupError(f"reference {config.reference!r} is not a rater; choose among {data.raters}", "reference")
    return MeasureData(data)


def _write(collection, source, run_key: str, result: VariationResult) -> None:
    labels = result.labels
    values = {attr(run_key, "variation"): {str(k): v.type for k, v in labels.items()},
              attr(run_key, "partner"): {str(k): str(v.partner) for k, v in labels.items() if v.partner is not None},
              attr(run_key, "iou"): {str(k): float(v.iou) for k, v in labels.items() if v.iou is not None}}
    write_label_values(collection, source.fields, source.list_name, values,
                       {attr(run_key, "variation"): fo.StringField(), attr(run_key, "partner"): fo.StringField(),
                        attr(run_key, "iou"): fo.FloatField()})


RUN = MeasureRun("variations", "variation types", DEFAULT_KEY, ("box", "polygon", "keypoints"), owned_paths,
                 write=_write, read=_read, config_key="variation_config")


def variations_steps(collection, **params):
    """:func:`variations_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def variations_run(collection, progress=None, **params) -> VariationResult:
    """Variation types on ``collection`` stored under ``run_key``: the rater source
    (``rater_fields`` or ``label_field`` + ``rater_attribute``), ``run_key``, ``overwrite`` and
    the parameters of :class:`kalos_core.variations.VariationConfig`."""
    return measure_run(RUN, collection, progress, **params)


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
