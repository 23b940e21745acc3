"""Attribute agreement on a FiftyOne collection (:mod:`kalos_core.attributes`): the units of a stored
agreement run and the attributes of its raters' labels.

The raters are the agreement run's (``agreement_key``, default the newest agreement run); each
label's unit is its ``<agreement_key>_unit`` (labels without one are not part of that run and are
left out); its attributes are the label's own dynamic attributes (``detection["occluded"]``). The
run (``config.method == "kalos_attributes"``) stores ``AttributeResult.to_dict()`` and the
agreement key; it writes nothing on the labels. :func:`disagreement_view` is the panel's click.
"""

from __future__ import annotations

import fiftyone as fo
from fiftyone import ViewField as F

from kalos_core.attributes import AttributeResult
from kalos_core.matching.params import MATCHING_PARAMS
from kalos_core.measure import MeasureData

from .. import run_store
from ..adapter import read_dataset, resolve_source
from ..errors import SetupError
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered
from ..views import RunLayout, finish, run_fields

DEFAULT_KEY = "attributes"
AGREEMENT = run_store.AGREEMENT
#: the fields every label class has (geometry, class, tags, ...): not a rater's attribute
_NOT_COMPARED = (fo.ListField, fo.VectorField, fo.ArrayField, fo.DictField, fo.EmbeddedDocumentField)
_BUILTIN = set().union(*(c._fields_ordered for c in (fo.Detection, fo.Polyline, fo.Keypoint)))


def agreement_key_of(collection, extras: dict) -> str:
    """The agreement run whose units are compared: ``extras["agreement_key"]`` or the newest one;
    :class:`SetupError` on ``agreement_key`` when there is none or it is another kind of run."""
    key = extras.get("agreement_key")
    if key in (None, ""):
        runs = run_store.runs_of(collection._dataset, AGREEMENT)
        if not runs:
            raise SetupError("no KaLOS agreement run on this dataset: compute agreement first (its units are the "
                             "objects whose attributes are compared)", "agreement_key")
        key = runs[-1]
    try:
        run_store.get_run(collection._dataset, key, AGREEMENT)
    except SetupError as e:
        raise SetupError(str(e), "agreement_key") from None
    return key


def agreement_raters(collection, extras: dict):
    """The raters' labels of the agreement run (``extras["agreement_key"]`` filled in)."""
    key = extras["agreement_key"] = agreement_key_of(collection, extras)
    cfg = collection._dataset.get_run_info(key).config
    try:
        return resolve_source(collection, cfg.rater_fields, cfg.label_field, cfg.rater_attribute or "rater_id")
    except SetupError as e:
        raise SetupError(f"agreement run {key!r}: {e}", "agreement_key") from None


def found_attributes(collection, source) -> list[str]:
    """The attributes some rater label carries a value of: declared or dynamic, less the label
    classes' own fields, the rater attribute, annotation ids, what KaLOS runs wrote and those that
    hold no single value (vectors, lists, dicts: an embedding is no attribute a rater chose)."""
    prefixes = tuple(f"{f}.{source.list_name}." for f in source.fields)
    schema = {**collection.get_field_schema(flat=True), **collection.get_dynamic_field_schema(fields=source.fields)}
    paths = {p for p, field in schema.items() if not isinstance(field, _NOT_COMPARED)}   # vectors, lists, dicts
    owned = {p.rsplit(".", 1)[-1] for p in run_store.written_paths(collection._dataset)}
    names = sorted({p[len(pre):] for p in paths for pre in prefixes if p.startswith(pre) and "." not in p[len(pre):]}
                   - _BUILTIN - owned - {source.rater_attribute, "rater_id"})
    names = [n for n in names if not n.endswith("annotation_id")]
    counts = collection.aggregate([fo.Count(p) for n in names for p in source.label_paths(n)]) if names else []
    per = len(source.fields)
    return [n for k, n in enumerate(names) if sum(counts[k * per:(k + 1) * per])]


def _check(collection, source, config, extras) -> None:
    key = extras["agreement_key"]
    if not sum(collection.count(p) for p in source.label_paths(f"{key}_unit")):
        raise SetupError(f"no rater label of the view carries {key}_unit: compute agreement run {key!r} again "
                         "(or choose a view of its samples)", "agreement_key")
    found = found_attributes(collection, source)
    if not found:
        raise SetupError(f"the labels of {', '.join(source.fields)} carry no attribute to compare (set them as label "
                         "attributes, e.g. detection['occluded'] = True)", "names")
    for param, names in (("names", config.names or ()), ("metrics", config.metric_map())):
        missing = [n for n in names if n not in found]
        if missing:
            raise SetupError(f"no rater label carries the attribute {', '.join(map(repr, missing))}; the labels "
                             f"carry: {', '.join(found)}", param)


def _read(collection, source, config, extras) -> MeasureData:
    """The raters' labels; ``options["units"]`` (label id -> unit) and ``options["attributes"]``
    (label id -> {name: value}) of the labels that belong to a unit of the agreement run."""
    names = list(config.names or found_attributes(collection, source))
    data = read_dataset(collection, source)
    unit_attr = f"{extras['agreement_key']}_unit"
    units, attributes = {}, {}
    for f in source.fields:
        base = f"{f}.{source.list_name}"
        rows = collection.values([f"{base}.id", f"{base}.{unit_attr}", *(f"{base}.{n}" for n in names)])
        ids, unit, *values = ([v for row in column for v in row or ()] for column in rows)
        for lid, u, *vals in zip(ids, unit, *values):
            if u is not None:
                units[lid] = u
                attributes[lid] = dict(zip(names, vals))
    return MeasureData(data, options={"units": units, "attributes": attributes})


def _card(res: AttributeResult, key: str) -> tuple:
    rows = [(f"α {name} ({a['metric']}, {a['n_units']} units)", a["alpha"] if a["alpha"] is not None else a["reason"])
            for name, a in res.per_attribute.items()]
    return "KaLOS: attribute agreement", rows, "Open the panel 'KaLOS: Attribute agreement'."


RUN = MeasureRun(
    "attributes", "attribute agreement", DEFAULT_KEY, ("box", "polygon", "keypoints", "cuboids"),
    owned_paths=lambda source, run_key: [], read=_read, check=_check, extras=("agreement_key",),
    source=agreement_raters, error_param=lambda source: "names", hidden=MATCHING_PARAMS,
    config_key="attributes_config",
    app=Offered(
        "KaLOS attribute agreement", "compute_attribute_agreement", "KaLOS: attribute agreement",
        "Krippendorff's α of the rater labels' attributes (occluded, pose, a colour, free text) over the units of "
        "an agreement run, per attribute and per class", key_help="stored as a custom run; nothing is written on "
        "the labels", operator_class="attributes:ComputeAttributeAgreement",
        panels=("attributes:AttributeAgreementPanel",), card=_card,
        notice=lambda res, key: f"KaLOS attribute agreement {key!r}: {len(res.per_attribute)} attributes"))


def attribute_steps(collection, **params):
    """:func:`attribute_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def attribute_run(collection, progress=None, **params) -> AttributeResult:
    """Attribute α on ``collection`` stored under ``run_key``: ``agreement_key`` (default the newest
    agreement run), ``run_key``, ``overwrite`` and ``names`` (the attributes) / ``metrics`` of
    :class:`kalos_core.attributes.AttributeConfig`."""
    return measure_run(RUN, collection, progress, **params)


def disagreement_view(dataset, run_key: str, attribute: str, label: str | None = None, current=None):
    """The samples holding the units where the raters disagree on ``attribute`` (of class ``label``
    when given), only those units' labels shown; sorted as every click (:func:`.views.finish`)."""
    entry = run_store.load_results(dataset, run_key, "kalos_attributes")["per_attribute"][attribute]
    units = (entry["per_class"].get(label) or {} if label is not None else entry).get("disagreeing_units") or []
    layout = RunLayout.from_run(dataset, dataset.get_run_info(run_key).config.agreement_key)
    cond = F(layout.unit_attr).is_in(list(units))
    view = dataset.match_labels(filter=cond, fields=list(layout.fields))
    for f in layout.fields:
        view = view.filter_labels(f, cond, only_matches=False)
    return finish(view, dataset, run_fields(layout), current, layout.alpha_field)
