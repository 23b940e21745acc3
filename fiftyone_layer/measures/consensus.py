"""Python entries for consensus runs: one label per supported unit of an agreement run.

What the ``build_consensus`` operator calls, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.consensus import consensus_run
    result = consensus_run(dataset, agreement_key="kalos")   # writes the field kalos_consensus
    export_consensus_coco(dataset, "kalos_consensus", "consensus.json")   # the same labels as COCO

The run is stored under ``<agreement_key>_consensus`` (``config.method == "kalos_consensus"``)
and writes ONE new sample field of the same name: ``fo.Detections``, one label per unit that
enough raters support (:mod:`kalos_core.consensus`), each with ``confidence`` (support /
assigned raters), ``unit``, ``support``, ``n_assigned``, ``raters`` (the agreeing raters),
``members`` (label ids of the unit) and ``tie`` (``tied_labels`` on a tie, whose ``label``
is None: never guessed). Boxes keep FiftyOne's relative coordinates; polygons and masks
become instance masks (image sizes needed). Units below the support level are the run's
``review`` list. The raters' fields are only read. The run's config holds every parameter of
:class:`kalos_core.consensus.ConsensusConfig`: the fusion's as given, the matching's
(threshold, distance, solver, cost) as the agreement run used them.
"""

from __future__ import annotations

import os
from dataclasses import replace

import fiftyone as fo
import numpy as np
from fiftyone import ViewField as F

from kalos_core.consensus import ConsensusResult
from kalos_core.geometry.masks import mask_utils
from kalos_core.matching.params import MATCHING_PARAMS
from kalos_core.measure import MeasureData, get_measure
from kalos_core.progress import run_steps

from .. import rawdocs, run_store, status_colors
from ..adapter import SetupError, read_dataset, resolve_source
from ..measure_runs import MeasureRun, check_run, make_config, measure_steps
from ..registry import Offered
from ..writeback import write_sample_fields

MEASURE = get_measure("consensus")
METHOD = MEASURE.method
AGREEMENT = run_store.AGREEMENT
#: the parameters a consensus run takes: the fusion's (the matching's are the agreement run's)
FUSION = tuple(p.name for p in MEASURE.params if p.name not in MATCHING_PARAMS)


def consensus_key(agreement_key: str) -> str:
    """The consensus run's key, which is also the name of the field it writes."""
    return f"{agreement_key}_consensus"


def agreement_source(dataset, agreement_key: str):
    """``(view, source, config)`` of the stored agreement run ``agreement_key``."""
    cfg = run_store.get_run(dataset, agreement_key, AGREEMENT).config
    try:
        view = dataset.load_run_view(agreement_key)
    except Exception:  # noqa: BLE001 - a run whose stored view no longer loads: the whole dataset
        view = dataset.view()
    source = resolve_source(view, cfg.rater_fields, cfg.label_field, cfg.rater_attribute or "rater_id")
    return view, source, cfg


def fusion_params(params: dict) -> dict:
    """The consensus parameters given in ``params`` (a form's values): the fusion's
    (:data:`FUSION`), without the empty ones."""
    return {n: params[n] for n in FUSION if params.get(n) not in (None, "")}


def _source(dataset, extras: dict):
    """The rater source of the agreement run ``agreement_key`` (refused on that input)."""
    key = extras.get("agreement_key")
    if not isinstance(key, str) or not key:
        raise SetupError("choose an agreement run", "agreement_key")
    try:
        return agreement_source(dataset, key)[1]
    except SetupError as e:
        raise SetupError(str(e), "agreement_key") from None


def _prepare(collection, source, values: dict, extras: dict) -> dict:
    """The fusion's parameters as given; the matching's as the agreement run used them."""
    acfg = run_store.get_run(collection._dataset, extras["agreement_key"], AGREEMENT).config
    matching = {n: getattr(acfg, n) for n in MATCHING_PARAMS if getattr(acfg, n, None) is not None}
    try:
        make_config(MEASURE, {**values, **matching})
    except SetupError as e:
        raise SetupError(f"agreement run {extras['agreement_key']!r}: {e}", "agreement_key") from None
    return {**values, **matching}


def read_units(view, source, agreement_key: str) -> dict:
    """label id -> unit id, from the ``<agreement_key>_unit`` attributes the agreement run wrote."""
    unit_of = {}
    for f in source.fields:
        ids, units = view.values([f"{f}.{source.list_name}.id", f"{f}.{source.list_name}.{agreement_key}_unit"])
        for row_ids, row_units in zip(ids, units):
            for lid, u in zip(row_ids or [], row_units or []):
                if u is not None:
                    unit_of[str(lid)] = u
    return unit_of


def _read(view, source, config, extras: dict) -> MeasureData:
    """The agreement run's labels (instance masks where it compared them) and their units; labels
    added after that run have no unit and are left out (they are not part of it)."""
    key = extras["agreement_key"]
    use_masks = bool(getattr(run_store.get_run(view._dataset, key, AGREEMENT).config, "use_masks", False))
    data = read_dataset(view, source, use_masks=use_masks)
    if data.kind != "box" and not data.meta.get("pixel_geometry"):
        raise SetupError("consensus of polygons or masks needs image sizes: run dataset.compute_metadata()",
                         "agreement_key")
    unit_of = read_units(view, source, key)
    if not unit_of:
        raise SetupError(f"no label of the view carries {key}_unit: run the agreement again", "agreement_key")
    data = replace(data, images=[replace(im, annotations=[a for a in im.annotations if str(a.id) in unit_of])
                                 for im in data.images])
    return MeasureData(data, options={"units": unit_of})


def _summary(result: ConsensusResult, data: MeasureData) -> dict:
    """The stored results: counts, mean confidence and the review list (votes by class name)."""
    categories = data.dataset.categories
    review = [{"unit": r.unit, "sample_id": str(r.image_id), "support": r.support, "n_assigned": r.n_assigned,
               "raters": list(r.raters), "members": [str(m) for m in r.members],
               "votes": {categories[c]: v for c, v in r.votes.items()}, "tie": r.tie} for r in result.review]
    return {"consensus_config": result.config, "kind": result.kind, "n_labels": len(result.labels),
            "n_review": len(review), "n_ties": sum(lab.tie for lab in result.labels),
            "mean_confidence": float(np.mean([lab.confidence for lab in result.labels])) if result.labels else None,
            "review": review}


def _card(res: ConsensusResult, key: str) -> tuple:
    n = len(res.labels)
    return "KaLOS: consensus built", [
        ("Consensus labels", n), ("Class ties (label left empty, tied_labels set)", sum(x.tie for x in res.labels)),
        ("Units below the support level (review list)", len(res.review)),
        ("Mean confidence", sum(x.confidence for x in res.labels) / n if n else None)], \
        f"Show the field {key} in the sidebar; 'KaLOS: tag for review' tags the review units."


def _notice(res: ConsensusResult, key: str) -> str:
    return f"KaLOS consensus {key!r}: {len(res.labels)} labels, {len(res.review)} units for review"


RUN = MeasureRun(
    "consensus", "consensus runs", "", ("box", "polygon"), owned_paths=lambda source, key: [key],
    write=lambda view, source, key, result, data: write_consensus(view, key, result, data.dataset), read=_read,
    extras=("agreement_key",), source=_source, prepare=_prepare, inherited=MATCHING_PARAMS,
    inherited_from=f"the matching's {', '.join(MATCHING_PARAMS)} are the agreement run's", two_raters=False,
    stored_source=lambda source: source.run_config(), summary=_summary, error_param=lambda source: "agreement_key",
    target=lambda dataset, extras: agreement_source(dataset, extras["agreement_key"])[0],
    key_of=lambda extras: consensus_key(extras["agreement_key"]), key_param="agreement_key",
    app=Offered(
        "KaLOS consensus", "build_consensus", "KaLOS: build consensus",
        "One label per unit enough raters support (majority class, fused box or mask), written to a new field "
        "<run_key>_consensus; the rest goes to a review list", operator_class="consensus:BuildConsensus",
        also=("consensus:ExportConsensusCoco", "consensus:TagForReview", "label_studio_round:SendToLabelStudio",
              "label_studio_round:LoadLabelStudioRound"),
        marker=lambda key: key, card=_card, notice=_notice))


def check_consensus(dataset, agreement_key, *, overwrite=False, **params):
    """Every check before anything is read or written; returns ``(source, config, extras)``.
    ``params``: the fusion parameters of :class:`ConsensusConfig` (:data:`FUSION`); its matching
    parameters are the agreement run's (stored in the run too)."""
    return check_run(RUN, dataset, agreement_key=agreement_key, overwrite=overwrite, **params)


def consensus_steps(dataset, agreement_key, *, overwrite=False, **params):
    """:func:`consensus_run` as a generator of ``(fraction, message)`` steps; returns the result
    (its ``timings``: read, compute and write seconds, :class:`~..fiftyone_layer.measure_runs.Clock`)."""
    return measure_steps(RUN, dataset, agreement_key=agreement_key, overwrite=overwrite, **params)


def consensus_run(dataset, progress=None, **params) -> ConsensusResult:
    """Consensus of the agreement run ``agreement_key`` stored under ``<agreement_key>_consensus``
    (see :func:`check_consensus`); ``progress(fraction, message)`` optional."""
    return run_steps(consensus_steps(dataset, **params), progress)


def _rle_bytes(rle: dict) -> dict:
    c = rle["counts"]
    return {"size": list(rle["size"]), "counts": c.encode("ascii") if isinstance(c, str) else c}


def _attributes(lab, categories: dict) -> dict:
    return {"confidence": float(lab.confidence), "unit": lab.unit, "support": int(lab.support),
            "n_assigned": int(lab.n_assigned), "raters": [str(r) for r in lab.raters],
            "members": [str(m) for m in lab.members], "tie": bool(lab.tie),
            "tied_labels": [categories[c] for c in lab.tied_categories]}


def _relative_box(lab, image) -> list[float]:
    x, y, w, h = lab.bbox
    W, H = float(image.width), float(image.height)
    return [x / W, y / H, w / W, h / H]


def to_detection(lab, image, categories: dict, kind: str) -> fo.Detection:
    """One consensus label as a ``fo.Detection`` (polygons and masks as an instance mask)."""
    det = fo.Detection(label=None if lab.category is None else categories[lab.category],
                       bounding_box=_relative_box(lab, image), **_attributes(lab, categories))
    if kind != "box":
        x, y, w, h = lab.bbox
        W, H = float(image.width), float(image.height)
        full = mask_utils.decode(_rle_bytes(lab.geometry)).astype(bool)
        x0, y0 = int(np.floor(x)), int(np.floor(y))
        x1, y1 = max(x0 + 1, int(np.ceil(x + w))), max(y0 + 1, int(np.ceil(y + h)))
        det.mask = full[y0:y1, x0:x1]
        det.bounding_box = [x0 / W, y0 / H, (x1 - x0) / W, (y1 - y0) / H]
    return det


def detection_doc(lab, image, categories: dict, kind: str) -> dict:
    """The stored document of :func:`to_detection`: built as a plain dict for boxes (a FiftyOne
    object per label costs ~1.5 ms), through FiftyOne's own class for masks."""
    if kind != "box":
        return rawdocs.from_label(to_detection(lab, image, categories, kind))
    return rawdocs.detection(None if lab.category is None else categories[lab.category], _relative_box(lab, image),
                             _attributes(lab, categories))


def write_consensus(view, key: str, result: ConsensusResult, data) -> None:
    """The field ``key``: one ``fo.Detections`` list per sample of ``data`` (the labels read from
    ``view``), kept in one colour."""
    dataset = view._dataset
    images = {str(im.id): im for im in data.images}
    by_sample: dict = {sid: [] for sid in images}
    for lab in result.labels:
        image = images[str(lab.image_id)]
        by_sample[str(lab.image_id)].append(detection_doc(lab, image, data.categories, data.kind))
    write_sample_fields(dataset, {sid: {key: rawdocs.label_list(fo.Detections, labels)}
                                  for sid, labels in by_sample.items()},
                        {key: fo.EmbeddedDocumentField(fo.Detections)})
    status_colors.settle(dataset)   # the new field in one colour, not by class, beside the status colours


def review_label_ids(dataset, consensus_key_: str) -> set:
    """Rater label ids of the units the consensus run ``consensus_key_`` sent to review."""
    res = run_store.load_results(dataset, consensus_key_, METHOD)
    return {m for item in res.get("review", []) for m in item["members"]}


def load_consensus(dataset, key: str) -> dict:
    return run_store.load_results(dataset, key, METHOD)


def check_consensus_export(dataset, key: str, labels_path: str, overwrite: bool = False) -> None:
    """A :class:`SetupError` naming the input at fault when :func:`export_consensus_coco` would refuse."""
    if key not in run_store.runs_of(dataset, METHOD):
        raise SetupError(f"no consensus run {key!r} on dataset {dataset.name!r} (runs: "
                         f"{', '.join(run_store.runs_of(dataset, METHOD)) or 'none'}); build it with "
                         f"'KaLOS: build consensus'", "consensus_key")
    if not isinstance(labels_path, str) or not labels_path.strip():
        raise SetupError("give the path of the COCO file to write", "labels_path")
    if os.path.isdir(labels_path):
        raise SetupError(f"{labels_path} is a folder; give the path of a file (consensus.json)", "labels_path")
    if os.path.exists(labels_path) and not overwrite:
        raise SetupError(f"{labels_path} exists; choose another path or pass overwrite=True", "labels_path")
    folder = os.path.dirname(os.path.abspath(labels_path))
    if not os.path.isdir(folder):
        raise SetupError(f"no folder {folder} to write {os.path.basename(labels_path)} into", "labels_path")


def _names_root(paths: list) -> str | None:
    """Where the exported ``file_name`` start: None (the file names) when they are unique, else the
    images' common folder (``cam1/0001.jpg``, ``cam2/0001.jpg``: each its path relative to it)."""
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) == len(names):
        return None
    return os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])


def export_consensus_coco(dataset, key: str, labels_path: str, overwrite: bool = False) -> dict:
    """The consensus field ``key`` as one COCO detection file (FiftyOne's own COCO exporter, labels
    only, ``file_name`` = each sample's file name, or its path below the images' common folder where
    two images share a name) over the samples the run covered. A tied label
    (``label`` None: the class was not guessed) has no COCO category and is left out (counted in
    ``left_out_ties``). ``labels_path`` is never written over unless ``overwrite``.
    Returns ``{"path", "samples", "labels", "left_out_ties"}``."""
    check_consensus_export(dataset, key, labels_path, overwrite)
    covered = dataset.exists(key)
    view = covered.filter_labels(key, F("label").exists(), only_matches=False)
    ties = covered.count(f"{key}.detections") - view.count(f"{key}.detections")
    view.export(labels_path=labels_path, dataset_type=fo.types.COCODetectionDataset, label_field=key,
                export_media=False, rel_dir=_names_root(view.values("filepath")))
    return {"path": labels_path, "samples": len(view), "labels": view.count(f"{key}.detections"),
            "left_out_ties": ties}
