"""The FiftyOne side of rater scorecards (:mod:`kalos_core.scorecard`), and its Python entries.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run
    result = scorecard_run(dataset, rater_fields=["raters_a", "raters_b", "expert"], reference="expert")

Each rater's boxes against the reference (a rater, by name or by its field; default: the majority of
the other raters, leave-one-out): per rater and class precision, recall and F1 at ``iou`` and over
COCO's thresholds, localisation error, misses and extras by size, and the confusion matrix. The
numbers are those of FiftyOne's ``evaluate_detections(method="coco", classwise=True)`` of the rater
field against the reference field. The run (``config.method == "kalos_scorecard"``) stores
``ScorecardResult.to_dict()``; it writes nothing on the labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalos_core.measure import MeasureData
from kalos_core.params import Config, param
from kalos_core.scorecard import ScorecardResult

from ..adapter import SetupError, read_dataset
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered
from ..subsets import VIEWS, sample_choices, sample_values

DEFAULT_KEY = "scorecard"


@dataclass(frozen=True)
class Inputs(Config):
    """The plugin-only input of a scorecard run."""

    reference_field: str | None = param(
        None, "str", "a label field to score every rater against that is no rater's (a consensus run's field, "
        "e.g. kalos_consensus); it replaces the reference rater", optional=True, label="Reference field", flag="")


def _read(collection, source, config, extras) -> MeasureData:
    """The raters' labels, and the reference field's as one more rater named after it."""
    from .agreement import add_models

    data = read_dataset(collection, source)
    field = extras.get("reference_field")
    return MeasureData(add_models(collection, source, data, [field], score_threshold=0.0) if field else data)


def _raters(collection, source) -> list[str]:
    if source.rater_attribute is None:
        return list(source.raters.values())
    return sorted(map(str, collection.distinct(f"{source.fields[0]}.{source.list_name}.{source.rater_attribute}")))


def _prepare(collection, source, values: dict, extras: dict) -> dict:
    """A reference given as a rater field is that field's rater; one that is neither is refused."""
    field = extras.get("reference_field")
    if field:
        if field in source.fields:
            raise SetupError(f"{field!r} is one of the rater fields: name it as the reference instead, or leave it "
                             "out of the rater fields", "reference_field")
        if not collection._dataset.has_sample_field(field):
            raise SetupError(f"no field {field!r} on the dataset; give a label field such as a consensus run's",
                             "reference_field")
        return {**values, "reference": field}
    ref = values.get("reference")
    if ref in (None, ""):
        return values
    if ref in source.raters:
        return {**values, "reference": source.raters[ref]}
    names = _raters(collection, source)
    if ref not in names:
        raise SetupError(f"reference {ref!r} is none of the raters ({', '.join(names)}); choose one of them, or "
                         "leave it empty to score each rater against the others' majority", "reference")
    return values


def _card(res: ScorecardResult, key: str) -> tuple:
    totals = [r for r in res.rows if r["class"] == "(all)"]
    fmt = lambda v: "—" if v is None else f"{v:.3f}"
    return "KaLOS: rater scorecards", [
        ("Reference", res.reference), ("IoU", res.iou), ("Images", res.n_images),
        *((f"{r['rater']}: P / R / F1", f"{fmt(r['precision'])} / {fmt(r['recall'])} / {fmt(r['f1'])}")
          for r in totals)], "Open the panel 'KaLOS: Rater scorecards'."


RUN = MeasureRun(
    "scorecard", "rater scorecards", DEFAULT_KEY, ("box",),
    owned_paths=lambda source, run_key: [], prepare=_prepare, read=_read, inputs=Inputs,
    config_key="scorecard_config",
    app=Offered(
        "KaLOS rater scorecards", "compute_scorecards", "KaLOS: rater scorecards",
        "Each rater's precision, recall, F1, localisation error, class confusion and misses / extras by size "
        "against a reference rater or the other raters' majority (FiftyOne's COCO evaluation, per rater)",
        key_help="stored as a custom run; nothing is written on the labels", card=_card, also=("gate:RunGate",),
        panels=("scorecard:ScorecardPanel",),
        notice=lambda res, key: f"KaLOS scorecards {key!r}: {len(res.raters)} raters against {res.reference}"))


def scorecard_steps(collection, **params):
    """:func:`scorecard_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def scorecard_run(collection, progress=None, **params) -> ScorecardResult:
    """Scorecards on ``collection`` stored under ``run_key``: the rater source (``rater_fields`` or
    ``label_field`` + ``rater_attribute``), ``run_key``, ``overwrite`` and the parameters of
    :class:`kalos_core.scorecard.ScorecardConfig` (``reference``: a rater's name or field)."""
    return measure_run(RUN, collection, progress, **params)


def scorecard_trend(dataset) -> dict:
    """Each rater's scorecard across the dataset's scorecard runs, oldest first: ``{"runs": [(run
    key, round)], "rows": {rater: [its (all) row in each run, or None]}}``; a run's round is the
    loaded round its rater fields belong to (:func:`..round_fields.round_of`), else ``round 1``."""
    from ..measure_runs import label_source_values
    from ..round_fields import round_of
    from ..run_store import load_results, runs_of

    runs, rows = [], {}
    keys = runs_of(dataset, "kalos_scorecard")
    for n, key in enumerate(keys):
        src = label_source_values(dataset.get_run_info(key).config)
        runs.append((key, round_of(dataset, src.get("rater_fields") or [src.get("label_field")])))
        for r in load_results(dataset, key).get("rows") or []:
            if r["class"] == "(all)":
                rows.setdefault(r["rater"], [None] * len(keys))[n] = r
    return {"runs": runs, "rows": rows}


# -- subsets: what a scorecard can be split by, read from the dataset ---------------------------------

SIZE = "size"
_SKIPPED_ATTRS = {"id", "label", "tags", "index", "confidence", "attributes", "mask", "mask_path", "bounding_box",
                  "rater_id", "coco_annotation_id"}


def label_fields(collection, cfg) -> list[str]:
    """The label fields of a stored scorecard run: its rater fields (or label field), and its
    reference field if it has one."""
    from ..measure_runs import label_source_values

    src = label_source_values(cfg)
    ref = getattr(cfg, "reference_field", None)
    return (src.get("rater_fields") or [src["label_field"]]) + ([ref] if ref else [])


def subset_choices(collection, cfg) -> dict[str, str]:
    """``{choice: label}`` of the subset definitions ``collection`` offers a scorecard run: object
    size, each scalar sample field and ``tags``, each scalar attribute of the run's labels (declared
    or not), and the saved views (if any; :mod:`fiftyone_layer.subsets`)."""
    import fiftyone.core.fields as fof

    scalar = (fof.StringField, fof.BooleanField, fof.IntField)
    owned = set(label_fields(collection, cfg))
    out = {SIZE: "object size (COCO small / medium / large)"}
    samples = sample_choices(collection, skip=owned)
    out.update({k: v for k, v in samples.items() if k != VIEWS})
    attrs, flat = set(), collection.get_field_schema(flat=True)
    flat.update(collection.get_dynamic_field_schema(fields=sorted(owned)))   # attributes never declared
    for field in owned:
        base = collection._get_label_field_path(field, "id")[1].rsplit(".", 1)[0] + "."
        for name, f in flat.items():
            attr = name[len(base):]
            if name.startswith(base) and "." not in attr and isinstance(f, scalar) and attr not in _SKIPPED_ATTRS:
                attrs.add(attr)
    out.update({f"attr:{a}": f"label attribute: {a}" for a in sorted(attrs)})
    out.update({k: v for k, v in samples.items() if k == VIEWS})
    return out


def subset_definition(collection, cfg, choice: str) -> tuple[str, dict | None]:
    """``(by, values)`` of :func:`kalos_core.scorecard.subsets.subset_rows` for a choice of
    :func:`subset_choices`: image values of a sample field or the saved views holding each sample,
    label values of an attribute over the run's label fields, or object size."""
    if choice == SIZE:
        return "size", None
    if choice.startswith("field:") or choice == VIEWS:
        return "image", sample_values(collection, choice)
    if choice.startswith("attr:"):
        attr, values = choice.split(":", 1)[1], {}
        for field in label_fields(collection, cfg):
            _, path = collection._get_label_field_path(field, "id")
            base = path.rsplit(".", 1)[0]
            for ids, vals in zip(*collection.values([f"{base}.id", f"{base}.{attr}"])):
                values.update(zip(ids or [], vals or []))
        return "label", values
    raise SetupError(f"no subset definition {choice!r}; choose one of {', '.join(subset_choices(collection, cfg))}")
