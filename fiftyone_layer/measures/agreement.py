"""Python entries for agreement runs: compute, load, delete, browse.

These are what the operators call, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    result = compute_agreement_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="kalos")
"""

from __future__ import annotations

import math
from dataclasses import replace

from fiftyone import ViewField as F

from kalos_core.agreement import DIAGNOSTICS, AgreementConfig, AgreementResult  # noqa: F401  (re-exported)
from kalos_core.agreement.falls_apart import falls_apart
from kalos_core.agreement.model_rater import add_model_rater
from kalos_core.data import MultiRaterDataset
from kalos_core.geometry import distances_for
from kalos_core.measure import MeasureData, get_measure
from kalos_core.progress import run_steps

from .. import run_store, status_colors
from ..adapter import (RaterSource, SetupError, _geometry, _read_mask, check_label_attributes, label_fields,
                       owned_fields, read_dataset, what_field)
from ..measure_runs import DEFAULT_CHOICE, MeasureRun, measure_steps
from ..registry import Offered, interval
from .calibrate import matching_calibration
from ..measure_runs import check_run as measure_check
from ..rawdocs import list_name as label_list_name
from ..status_colors import DISAGREEMENT, STATUSES, disagreement_view_name, status_view_names  # noqa: F401
from ..writeback import write_results

METHOD = run_store.AGREEMENT


def agreement_runs(dataset) -> list[str]:
    """Run keys of the KaLOS agreement runs stored on the dataset, oldest first."""
    return run_store.runs_of(dataset, METHOD)


AGREEMENT = get_measure("agreement")


def compute_agreement_run(collection, progress=None, **params) -> AgreementResult:
    """Compute agreement on ``collection`` and store it under ``run_key``.

    Writes ``<run_key>_alpha`` on every processed sample, ``<run_key>_unit`` and
    ``<run_key>_status`` on every rater label, and a custom run ``run_key``
    holding the config, the summary and all diagnostics. An existing run
    ``run_key`` is replaced (exactly its fields) only with ``overwrite=True``.
    Every check happens before anything is written (:class:`SetupError`).

    ``params``: the rater source (``rater_fields`` or ``label_field`` + ``rater_attribute``),
    ``run_key`` (default ``"kalos"``), ``overwrite``, every parameter of
    :class:`kalos_core.agreement.AgreementConfig` (``diagnostics=[...]`` names the diagnostics
    switched on; ``distance="mask_iou"`` compares Detections' instance masks), ``model_fields``:
    prediction fields (the raters' label type) that join as one more rater each, flagged as a
    model, keeping the labels with ``confidence >= score_threshold`` (:func:`add_models`), and
    ``calibration_key``: the calibration run whose threshold is used. ``progress``: optional
    ``callable(fraction, message)``.
    """
    return run_steps(compute_agreement_steps(collection, **params), progress)


# -- models as raters --------------------------------------------------------------------------------
# A model field holds the same label type as the rater fields (Detections / Polylines / Keypoints) with a
# ``confidence`` per label (missing = 1). Its labels whose confidence reaches ``score_threshold`` join the
# run as one more rater named after the field, flagged as a model
# (:func:`kalos_core.agreement.model_rater.add_model_rater`): the model is assigned to every sample where
# its field exists (an empty list is the model saying "nothing here"). The run stores ``model_fields``,
# ``models`` and ``score_threshold`` in its config, and its results carry ``models`` and
# ``model_comparison`` (mean model–human α vs mean human–human α). The model's labels get
# ``<run_key>_unit`` / ``<run_key>_status`` like the raters'.

PARAM = "model_fields"


def check_model_fields(collection, source: RaterSource, model_fields, score_threshold) -> list[str]:
    """The model fields, checked against the rater source; :class:`SetupError` names the fault."""
    fields = list(model_fields or [])
    if not fields:
        return []
    if source.kind == "cuboids":
        raise SetupError("models as raters are not supported for 3D detections (cuboids) yet", PARAM)
    try:
        t = float(score_threshold)
    except (TypeError, ValueError):
        t = float("nan")
    if isinstance(score_threshold, bool) or not 0.0 <= t <= 1.0:
        raise SetupError(f"score_threshold must be a number within [0, 1], got {score_threshold!r}",
                         "score_threshold")
    available = label_fields(collection)
    humans = set(source.raters.values())
    qualify = [f for f, cls in available.items() if cls is source.label_cls and f not in source.fields]
    fix = (f"; choose among the {source.label_cls.__name__} fields that are not raters: {', '.join(qualify)}"
           if qualify else f"; this dataset has no {source.label_cls.__name__} field besides the raters': add the "
           f"model's predictions as a {source.label_cls.__name__} field with a confidence on every label")
    for f in fields:
        if f not in available:
            what = what_field(collection, f) if isinstance(f, str) and f else f"field {f!r} does not exist"
            raise SetupError(f"model {what}, not {source.label_cls.__name__}{fix}", PARAM)
        if f in source.fields:
            raise SetupError(f"{f!r} is a rater field; a field is either a rater or a model{fix}", PARAM)
        if available[f] is not source.label_cls:
            raise SetupError(f"model field {f!r} holds {available[f].__name__}, the raters "
                             f"{source.label_cls.__name__}{fix}", PARAM)
        if f in humans:
            raise SetupError(f"model field {f!r} has the name of a rater; rename the field", PARAM)
    if len(set(fields)) < len(fields):
        raise SetupError("a model field is chosen twice", PARAM)
    return fields


def _score(value) -> float:
    if value is None:
        return 1.0
    if isinstance(value, (list, tuple)):  # keypoints: one confidence per point
        seen = [float(v) for v in value if v is not None and math.isfinite(float(v))]
        return sum(seen) / len(seen) if seen else 1.0
    return float(value) if math.isfinite(float(value)) else 1.0


def model_predictions(collection, source: RaterSource, field: str, data: MultiRaterDataset,
                      categories: dict[str, int]) -> tuple[list[dict], list]:
    """``(COCO results of field, ids of the samples the model was run on)`` in the engine's
    geometry of ``data`` (pixels when ``data.meta["pixel_geometry"]``). Classes no rater used get
    new ids in ``categories`` (name -> id): a model's class of its own is a disagreement."""
    kind = data.kind
    list_name = source.list_name
    geom_attr = {"box": "bounding_box", "polygon": "points", "keypoints": "points", "rle": "mask"}[kind]
    ids = collection.values("id")
    pixel = bool(data.meta.get("pixel_geometry"))
    sizes = list(zip(*collection.values(["metadata.width", "metadata.height"]))) if pixel else None
    lids, labels, scores, geoms = collection.values(
        [f"{field}.{list_name}.{a}" for a in ("id", "label", "confidence", geom_attr)])
    boxes = collection.values(f"{field}.{list_name}.bounding_box") if kind == "rle" else None
    out, run_on = [], []
    for k, sid in enumerate(ids):
        if lids[k] is None:
            continue
        run_on.append(sid)
        w, h = sizes[k] if pixel else (1.0, 1.0)
        for j, (lid, lab, score, g) in enumerate(zip(lids[k], labels[k], scores[k], geoms[k])):
            if lab is None or (g is None and kind != "rle"):
                continue
            if lab not in categories:
                categories[lab] = max(categories.values(), default=0) + 1
            d = {"id": lid, "image_id": sid, "category_id": categories[lab], "score": _score(score)}
            if kind == "box":
                d["bbox"] = list(_geometry("box", g, w, h))
            elif kind == "polygon":
                d["segmentation"] = _geometry("polygon", g, w, h)
            elif kind == "rle":
                d["segmentation"], err = _read_mask(g, None, boxes[k][j], int(w), int(h))
                if err:
                    raise SetupError(f"sample {sid}, model field {field}, label {lid}: {err}", PARAM)
            else:
                d["keypoints"] = _geometry("keypoints", g, w, h)
            out.append(d)
    return out, run_on


def add_models(collection, source: RaterSource, data: MultiRaterDataset, model_fields,
               score_threshold: float = 0.5) -> MultiRaterDataset:
    """``data`` with each model field as one more rater (named after the field), flagged as a model."""
    if not model_fields:
        return data
    categories = {name: cid for cid, name in data.categories.items()}
    for f in model_fields:
        preds, run_on = model_predictions(collection, source, f, data, categories)
        data = add_model_rater(data, preds, name=f, score_threshold=float(score_threshold), images=run_on)
    return replace(data, categories={cid: name for name, cid in categories.items()})


def write_source(source: RaterSource, model_fields) -> RaterSource:
    """The source whose labels a run writes to: the rater fields and the model fields."""
    if not model_fields:
        return source
    return replace(source, fields=[*source.fields, *model_fields],
                   raters={**source.raters, **{f: f for f in model_fields}})


def run_config(model_fields, score_threshold) -> dict:
    """What a run stores of its models (``models`` are the model raters' names)."""
    fields = list(model_fields or [])
    return {"model_fields": fields, "models": fields, "score_threshold": float(score_threshold)}


KINDS = ("box", "polygon", "keypoints", "cuboids")


def _prepare(collection, source: RaterSource, values: dict, extras: dict) -> dict:
    """An empty distance is the label type's default; ``mask_iou`` on boxes compares the
    Detections' instance masks (read as masks: ``use_masks``, and IoU between them)."""
    if values.get("distance") in ("", DEFAULT_CHOICE):
        values["distance"] = None
    extras["use_masks"] = values.get("distance") == "mask_iou" and source.kind == "box"
    if extras["use_masks"]:
        values["distance"] = "iou"
    return values


def _check(collection, source: RaterSource, config: AgreementConfig, extras: dict) -> None:
    """The distance suits the labels; the model fields (:func:`check_model_fields`),
    stored as :func:`run_config` says; the calibration run whose threshold and distance
    these are, unless ``calibration_key`` names one (:func:`.calibrate.matching_calibration`)."""
    if config.distance is not None and config.distance not in distances_for(source.kind):
        raise SetupError(f"{config.distance!r} is not a {source.kind} distance; choose among "
                         f"{list(distances_for(source.kind))}", "distance")
    threshold = 0.5 if extras.get("score_threshold") is None else extras["score_threshold"]
    models = check_model_fields(collection, source, extras.get("model_fields"), threshold)
    extras.update(run_config(models, threshold))
    if not extras.get("calibration_key"):   # the calibration whose threshold this is, where it is one
        ref = matching_calibration(collection._dataset, config.threshold, source.label_cls.__name__,
                                   "mask_iou" if extras["use_masks"] else config.distance)
        extras["calibration_key"] = ref.key if ref else None


def _read(collection, source: RaterSource, config, extras: dict) -> MeasureData:
    data = read_dataset(collection, source, use_masks=extras["use_masks"])
    return MeasureData(add_models(collection, source, data, extras["model_fields"], extras["score_threshold"]))


def _write(collection, written: RaterSource, run_key: str, result: AgreementResult, data: MeasureData) -> None:
    write_results(collection, written, run_key, result)
    dataset = collection._dataset
    mode = status_colors.mode(dataset)
    if mode == "status":
        status_colors.show_statuses(dataset, run_key, written.fields)
    elif mode == "rater":   # this run's raters beside those of the runs already there, one colour each
        status_colors.show_raters(dataset, [s for k, s in rater_sources(dataset) if k != run_key]
                                  + [_rater_source(written.fields, written.raters, written.rater_attribute)])
    status_colors.show_alpha_colors(dataset, run_key)


def _rater_source(fields, raters, attribute) -> tuple:
    return list(fields), dict(raters or {}), attribute


def rater_sources(dataset) -> list[tuple]:
    """``(run_key, (fields, raters, rater_attribute))`` of every agreement run, oldest first: the
    fields its labels' statuses are on (rater fields or the one label field, then model fields)."""
    out = []
    for key in agreement_runs(dataset):
        cfg = dataset.get_run_info(key).config
        attribute = getattr(cfg, "rater_attribute", None)
        fields = list(getattr(cfg, "rater_fields", None) or [cfg.label_field]) + list(
            getattr(cfg, "model_fields", None) or [])
        out.append((key, _rater_source(fields, getattr(cfg, "raters", None), attribute)))
    return out


def color_labels(dataset, mode: str) -> None:
    """Colour the labels of every agreement run's fields by ``mode`` (:data:`status_colors.MODES`):
    ``"status"`` each field by the newest run on it, ``"rater"`` each rater a colour of its own,
    ``"none"`` the user's scheme as before KaLOS. Later runs colour their fields the same way."""
    if mode not in status_colors.MODES:
        raise SetupError(f"{mode!r} is not a way KaLOS colours labels; choose among "
                         f"{', '.join(status_colors.MODES)}", "color_by")
    sources = rater_sources(dataset)
    if mode == "none" or not sources:
        status_colors.restore(dataset)
    elif mode == "rater":
        status_colors.show_raters(dataset, [s for _, s in sources])
    else:
        for key, (fields, _, _) in sources:
            status_colors.show_statuses(dataset, key, fields)
    dataset.info[status_colors.MODE_KEY] = mode
    dataset.save()


def _falls_apart(result, data: MeasureData, config: AgreementConfig) -> dict:
    """The ``lsa_falls_apart`` drill-down of :func:`kalos_core.agreement.falls_apart.falls_apart`."""
    return {"lsa_falls_apart": falls_apart(data.dataset, config)} if config.lsa_thresholds else {}


def _card(res: AgreementResult, key: str) -> tuple:
    return "KaLOS: agreement computed", [
        ("Mean α (per image)", res.mean_alpha),
        ("95 % CI of the mean α", interval(res.mean_alpha_ci) or "none (bootstrap off)"),
        ("Global α", res.global_alpha), ("Interpretation", res.interpretation), ("Samples", res.n_images),
        ("Warnings", "; ".join(w["message"] for w in res.warnings) or "none")], \
        ("Open the KaLOS panels (Overview, Vitality, ...); 'KaLOS: browse disagreements' shows the unmatched and "
         "class-disagreeing labels.")


def _notice(res: AgreementResult, key: str) -> str:
    ci = res.mean_alpha_ci
    ci_text = f" (95% CI {ci[0]:.3f} – {ci[1]:.3f})" if ci else ""
    return (f"KaLOS run {key!r}: mean α {res.mean_alpha:.3f}{ci_text}, global α {res.global_alpha:.3f} "
            f"({res.interpretation}) on {res.n_images} samples")


RUN = MeasureRun(
    "agreement", "agreement", "kalos", KINDS, owned_paths=owned_fields, write=_write, read=_read, check=_check,
    extras=("calibration_key", "model_fields", "score_threshold"), config_key="agreement_config",
    results=_falls_apart, prepare=_prepare, written=lambda source, extras: write_source(source, extras["model_fields"]),
    free_paths=check_label_attributes, two_raters=False, results_lap="lsa_falls_apart_s",
    stored_source=RaterSource.run_config, form_values=lambda cfg: {"distance": "mask_iou"} if getattr(
        cfg, "use_masks", False) else {},
    app=Offered(
        "KaLOS agreement", "compute_agreement", "KaLOS: compute agreement",
        "Krippendorff's alpha after instance matching, per sample and for the dataset",
        key_help="results go to <run_key>_alpha, <run_key>_unit, <run_key>_status",
        operator_class="agreement:ComputeAgreement",
        also=("agreement:BrowseDisagreements", "agreement:SetLabelColors", "agreement:DeleteAgreementRun"),
        panels=("overview:AgreementOverviewPanel", "vitality:AnnotatorVitalityPanel",
                "collaboration:CollaborationPanel", "sensitivity:LocalisationSensitivityPanel",
                "classes:ClassDifficultyPanel"),
        marker=lambda key: f"{key}_alpha", views=status_view_names, card=_card, notice=_notice, recolours=True,
        failure="KaLOS: compute agreement failed"))


def check_run(collection, **params):
    """Every check a run needs before it writes anything; returns ``(source, config, extras)``.

    Raises :class:`SetupError` naming the parameter at fault."""
    return measure_check(RUN, collection, **params)


def compute_agreement_steps(collection, **params):
    """:func:`compute_agreement_run` as a generator of ``(fraction, message)`` steps; returns the result.

    Nothing is written before the last step: a failing check, read or computation leaves the
    dataset as it was."""
    return measure_steps(RUN, collection, **params)


def delete_agreement_run(dataset, run_key: str) -> list[str]:
    """Remove a run, exactly the fields it wrote and its saved view; returns those field paths."""
    return run_store.delete_run(dataset, run_key, METHOD)


def get_agreement_run(dataset, run_key):
    """The run info of the KaLOS agreement run ``run_key``; :class:`SetupError` when there is none."""
    return run_store.get_run(dataset, run_key, METHOD)


def disagreement_view(dataset, run_key: str, statuses=DISAGREEMENT):
    """The samples holding a rater label of the run with one of ``statuses`` (default: the
    disagreements, ``class_disagreement`` and ``unmatched``), sorted by α ascending, showing only
    the run's fields and, in every rater field at once, only the labels with those statuses."""
    statuses = list(statuses or ())
    unknown = [s for s in statuses if s not in STATUSES]
    if not statuses or unknown:
        raise SetupError(f"choose statuses among {list(STATUSES)}, got {statuses!r}", "statuses")
    cfg = get_agreement_run(dataset, run_key).config
    fields = cfg.rater_fields or [cfg.label_field]
    list_name = label_list_name(getattr(cfg, "label_type", None)) or \
        dataset.get_field(fields[0]).document_type.__name__.lower()
    keep = F(f"{run_key}_status").is_in(statuses)
    has = None
    for f in fields:
        cond = F(f"{f}.{list_name}").filter(keep).length() > 0
        has = cond if has is None else has | cond
    extra = [p for p in (f"{run_key}_alpha", f"{run_key}_statuses") if dataset.has_sample_field(p)]
    view = dataset.exists(f"{run_key}_alpha").match(has).select_fields(extra + fields).sort_by(f"{run_key}_alpha")
    for f in fields:
        view = view.filter_labels(f, keep, only_matches=False)
    return view


def unused_run_key(dataset, base: str = "kalos") -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first key no run, ``<key>_alpha`` field or
    ``<key>_disagreements`` view uses (what the forms propose, so nothing is replaced by default)."""
    return run_store.unused_key(dataset, base, METHOD)


describe_run = run_store.describe_run
