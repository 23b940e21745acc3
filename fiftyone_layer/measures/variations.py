"""Python entries for variation-type runs (:mod:`kalos_core.variations`): compute, load, views.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.variations import variations_run
    result = variations_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="variations")

The run (``config.method == "kalos_variations"``) stores ``VariationResult.to_dict()``: counts
per threshold × type, per rater and per class, and the boundary-IoU histogram of the agreed
labels. On every rater label it writes, at the run's threshold, ``<run_key>_variation`` (the
type), ``<run_key>_partner`` (the partner label's id) and ``<run_key>_iou``.
"""

from __future__ import annotations

import fiftyone as fo

from kalos_core.measure import MeasureData
from kalos_core.variations import VariationResult, threshold_key

from .. import run_store
from ..adapter import SetupError, read_dataset
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered
from ..views import variation_attr as attr
from ..writeback import write_label_values

METHOD = "kalos_variations"
DEFAULT_KEY = "variations"
ATTRS = ("variation", "partner", "iou")


def owned_paths(source, run_key: str) -> list[str]:
    return [f"{f}.{source.list_name}.{attr(run_key, a)}" for f in source.fields for a in ATTRS]


def _read(collection, source, config, extras) -> MeasureData:
    data = read_dataset(collection, source)
    if config.reference is not None and config.reference not in data.raters:
        raise SetupError(f"reference {config.reference!r} is not a rater; choose among {data.raters}", "reference")
    return MeasureData(data)


def _write(collection, source, run_key: str, result: VariationResult, data: MeasureData) -> None:
    labels = result.labels
    values = {attr(run_key, "variation"): {str(k): v.type for k, v in labels.items()},
              attr(run_key, "partner"): {str(k): str(v.partner) for k, v in labels.items() if v.partner is not None},
              attr(run_key, "iou"): {str(k): float(v.iou) for k, v in labels.items() if v.iou is not None}}
    write_label_values(collection, source.fields, source.list_name, values,
                       {attr(run_key, "variation"): fo.StringField(), attr(run_key, "partner"): fo.StringField(),
                        attr(run_key, "iou"): fo.FloatField()})


def _counts(res: VariationResult) -> tuple[str, str]:
    """The run's threshold key and its labels per type, in words."""
    t = threshold_key(res.config["threshold"])
    return t, ", ".join(f"{k} {v}" for k, v in res.counts[t].items())


def _card(res: VariationResult, key: str) -> tuple:
    return "KaLOS: variation types", [
        ("IoU threshold of the per-label types", res.config["threshold"]), ("Labels per type", _counts(res)[1]),
        ("Labels", res.n_annotations)], "Open the panel 'KaLOS: Variation types'."


def _notice(res: VariationResult, key: str) -> str:
    t, text = _counts(res)
    return f"KaLOS variation types {key!r} at IoU {t}: {text}"


RUN = MeasureRun(
    "variations", "variation types", DEFAULT_KEY, ("box", "polygon", "keypoints"), owned_paths,
    write=_write, read=_read, config_key="variation_config",
    app=Offered(
        "KaLOS variation types", "compute_variations", "KaLOS: variation types",
        "What kind of disagreement: agreed, merged, wrong class, missed or additional labels per rater pair and IoU "
        "threshold; the type, partner and IoU on every label", operator_class="variations:ComputeVariations",
        key_help="stored as a custom run; <run_key>_variation, _partner, _iou go on every rater label",
        panels=("variations:VariationTypesPanel",), card=_card, notice=_notice))


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
