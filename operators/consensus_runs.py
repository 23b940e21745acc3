"""Python entries for consensus runs: one label per supported unit of an agreement run.

What the ``build_consensus`` operator calls, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.operators.consensus_runs import consensus_run
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

from kalos_core.consensus import ConsensusResult, build_consensus
from kalos_core.geometry.masks import mask_utils
from kalos_core.matching.params import MATCHING_PARAMS
from kalos_core.measure import get_measure

from ..fiftyone_layer import rawdocs, run_store, status_colors
from ..fiftyone_layer.adapter import SetupError, read_dataset, resolve_source
from ..fiftyone_layer.measure_runs import Clock
from ..fiftyone_layer.values import make_config
from ..fiftyone_layer.writeback import write_sample_fields

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


def check_consensus(dataset, agreement_key, *, overwrite=False, **params):
    """Every check before anything is read or written; returns ``(view, source, agreement config,
    ConsensusConfig, key)``. ``params``: the fusion parameters of :class:`ConsensusConfig`
    (:data:`FUSION`); its matching parameters are the agreement run's (stored in the run too)."""
    if not isinstance(agreement_key, str) or not agreement_key:
        raise SetupError("choose an agreement run", "agreement_key")
    try:
        view, source, acfg = agreement_source(dataset, agreement_key)
    except SetupError as e:
        raise SetupError(str(e), "agreement_key") from None
    key = consensus_key(agreement_key)
    try:
        run_store.validate_key(dataset, key, METHOD, overwrite=overwrite)
    except SetupError as e:
        raise SetupError(str(e), e.param if e.param == "overwrite" else "agreement_key") from None
    if source.kind not in ("box", "polygon"):
        raise SetupError(f"consensus needs boxes, polygons or masks, not {source.label_cls.__name__}",
                         "agreement_key")
    unknown = sorted(set(params) - set(FUSION))
    if unknown:
        raise SetupError(f"unknown parameter(s) {', '.join(unknown)} of a consensus run; known: {', '.join(FUSION)} "
                         f"(the matching's {', '.join(MATCHING_PARAMS)} are the agreement run's)", unknown[0])
    config = make_config(MEASURE, params)
    matching = {n: getattr(acfg, n) for n in MATCHING_PARAMS if getattr(acfg, n, None) is not None}
    try:
        config = replace(config, **matching)
    except ValueError as e:
        raise SetupError(f"agreement run {agreement_key!r}: {e}", "agreement_key") from None
    return view, source, acfg, config, key


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


def consensus_steps(dataset, agreement_key, *, overwrite=False, **params):
    """:func:`consensus_run` as a generator of ``(fraction, message)`` steps; returns the result
    (its ``timings``: read, compute and write seconds, :class:`~..fiftyone_layer.measure_runs.Clock`)."""
    clock = Clock()
    view, source, acfg, config, key = check_consensus(dataset, agreement_key, overwrite=overwrite, **params)
    yield 0.0, "reading labels"
    use_masks = bool(getattr(acfg, "use_masks", False))
    data = read_dataset(view, source, use_masks=use_masks)
    if data.kind != "box" and not data.meta.get("pixel_geometry"):
        raise SetupError("consensus of polygons or masks needs image sizes: run dataset.compute_metadata()",
                         "agreement_key")
    unit_of = read_units(view, source, agreement_key)
    if not unit_of:
        raise SetupError(f"no label of the view carries {agreement_key}_unit: run the agreement again",
                         "agreement_key")
    # labels added after the agreement run have no unit: they are not part of it
    data = replace(data, images=[replace(im, annotations=[a for a in im.annotations if str(a.id) in unit_of])
                                 for im in data.images])
    clock.lap("read_s")
    yield 0.3, "fusing the units"
    clock.skip()
    result = build_consensus(data, unit_of, config)
    clock.lap("compute_s")
    yield 0.7, "writing the consensus labels"
    clock.skip()
    store_consensus(dataset, view, source, agreement_key, key, data, result)
    status_colors.settle(dataset)   # the new field in one colour, not by class, beside the status colours
    clock.lap("write_s")
    clock.stamp(result)
    yield 1.0, "done"
    return result


def consensus_run(dataset, progress=None, **params) -> ConsensusResult:
    """Consensus of the agreement run ``agreement_key`` stored under ``<agreement_key>_consensus``
    (see :func:`check_consensus`); ``progress(fraction, message)`` optional."""
    from kalos_core.progress import run_steps

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


def store_consensus(dataset, view, source, agreement_key, key, data, result: ConsensusResult) -> None:
    if key in dataset.list_runs():
        run_store.delete_run(dataset, key)
    images = {str(im.id): im for im in data.images}
    by_sample: dict = {sid: [] for sid in images}
    for lab in result.labels:
        image = images[str(lab.image_id)]
        by_sample[str(lab.image_id)].append(detection_doc(lab, image, data.categories, data.kind))
    write_sample_fields(dataset, {sid: {key: rawdocs.label_list(fo.Detections, labels)}
                                  for sid, labels in by_sample.items()},
                        {key: fo.EmbeddedDocumentField(fo.Detections)})
    review = [{"unit": r.unit, "sample_id": str(r.image_id), "support": r.support, "n_assigned": r.n_assigned,
               "raters": list(r.raters), "members": [str(m) for m in r.members],
               "votes": {data.categories[c]: v for c, v in r.votes.items()}, "tie": r.tie} for r in result.review]
    summary = {"consensus_config": result.config, "kind": result.kind, "n_labels": len(result.labels),
               "n_review": len(review), "n_ties": sum(lab.tie for lab in result.labels),
               "mean_confidence": float(np.mean([lab.confidence for lab in result.labels])) if result.labels else None,
               "review": review}
    run_store.save_run(
        view, key, METHOD, summary, fields=[key], agreement_key=agreement_key,
        **source.run_config(),
        **result.config)


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
