"""Synthetic raters from a reference label field (the operator ``simulate_raters``'s work).

Python entry: :func:`simulate_rater_fields`. From a reference Detections / Polylines /
Keypoints field, the noise generator (the ``simulate`` measure,
:mod:`kalos_core.noise.simulate_measure`, whose :class:`SimulateConfig` declares the
parameters and so the form) draws ``n_raters`` synthetic raters (or schools of them, and a
defiant rater); each becomes a field ``<prefix>_<rater>`` of the same label type.
Every synthetic label keeps its truth: ``truth_ref_ids`` (ids of the reference labels it
came from; empty for a false positive), ``truth_errors`` (applied errors, in order) and
``truth_label`` (the reference class). An existing ``rater_list`` gets the synthetic raters
added (never replaced); no field is ever replaced (checked before anything is written), and
``dataset.info["kalos_import"]["rater_fields"]`` maps each new field to its rater, so
compute_agreement reads them directly. Reads with ``values()``, writes with ``set_values()``;
the reference field is never written.
"""

from __future__ import annotations

import os

import fiftyone as fo
import numpy as np

from kalos_core.data import KIND_TASKS
from kalos_core.measure import MeasureData, get_measure
from kalos_core.noise import load_profile
from kalos_core.noise.channels import RefObject
from kalos_core.noise.generator import RefImage, Reference

from .adapter import KINDS, SetupError, label_fields, rater_list_schema_problem
from .measure_runs import make_config
from .names import FIELD_NAME_RE
from .rawdocs import LIST_NAMES

#: label-list class -> (task, list attribute), from the shared maps
TASKS = {cls: (KIND_TASKS[KINDS[cls]], LIST_NAMES[cls]) for cls in LIST_NAMES}
SCALE = 1000.0  # virtual image size: the generator works in image-relative units anyway


def measure():
    """The ``simulate`` measure (its parameters are the form's)."""
    return get_measure("simulate")


def check_params(dataset, reference_field, prefix="synthetic", **params):
    """Validate a set-up (the parameters of :class:`kalos_core.noise.simulate_measure.SimulateConfig`);
    returns ``(label class, config)``. Raises :class:`SetupError` naming the parameter at fault."""
    available = label_fields(dataset)
    if reference_field not in available:
        raise SetupError("choose a Detections, Polylines or Keypoints field as the reference", "reference_field")
    known = [p.name for p in measure().params]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise SetupError(f"unknown parameter(s) {', '.join(unknown)} of simulate_raters; known: "
                         f"{', '.join(known)}", unknown[0])
    config = make_config(measure(), params)
    raters = config.raters()
    if not prefix or not FIELD_NAME_RE.match(prefix):
        raise SetupError("prefix: start with a letter; letters, digits and _ only", "prefix")
    names = [f"{prefix}_{r.name}" for r in raters]
    if reference_field in names or reference_field.startswith(f"{prefix}_rater_"):
        raise SetupError("the prefix would overwrite the reference field; choose another prefix", "prefix")
    schema = dataset.get_field_schema()
    clash = [n for n in names if n in schema]
    if clash:  # checked for every field before anything is written: never replace the user's data
        raise SetupError(f"field(s) {', '.join(clash)} exist already; simulate_raters never replaces a field: "
                         f"choose another prefix (e.g. {unused_prefix(dataset, prefix)!r})", "prefix")
    problem = rater_list_schema_problem(dataset) or (
        "field rater_list holds integers; the synthetic raters' names are text: rename it before simulating"
        if isinstance(getattr(schema.get("rater_list"), "field", None), fo.IntField) else None)
    if problem:
        raise SetupError(problem, "reference_field")
    if config.profile:
        if not os.path.isfile(config.profile):
            raise SetupError(f"no profile file at {config.profile}", "profile")
        try:
            load_profile(config.profile)
        except ValueError as e:
            raise SetupError(str(e), "profile") from None
    return available[reference_field], config


def unused_prefix(dataset, base: str = "synthetic") -> str:
    """``base`` or ``base_2``, ... : a prefix none of whose ``<prefix>_rater_<n>`` fields exists."""
    fields, k, prefix = set(dataset.get_field_schema()), 1, base
    while any(f.startswith(f"{prefix}_rater_") for f in fields):
        k += 1
        prefix = f"{base}_{k}"
    return prefix


def _reference(dataset, field: str, label_cls) -> tuple[Reference, list, dict]:
    task, list_name = TASKS[label_cls]
    geom = {"bbox": "bounding_box", "segm": "points", "keypoints": "points"}[task]
    sample_ids = dataset.values("id")
    ids, labels, geoms = dataset.values([f"{field}.{list_name}.{a}" for a in ("id", "label", geom)])
    names = sorted({lab for row in labels for lab in row or [] if lab is not None})
    cat = {n: k for k, n in enumerate(names, start=1)}
    images = []
    for k, sid in enumerate(sample_ids):
        objs = []
        for lid, lab, g in zip(ids[k] or [], labels[k] or [], geoms[k] or []):
            if g is not None and task != "keypoints" and not _finite(g):
                raise SetupError(f"sample {sid}, field {field}, label {lid}: geometry {g} has a non-finite value",
                                 "reference_field")
            obj = _ref_object(lid, cat.get(lab), g, task)
            if obj is not None:
                objs.append(obj)
        images.append(RefImage(k, SCALE, SCALE, None, objs))
    return Reference(images, {v: n for n, v in cat.items()}, task), sample_ids, cat


def _finite(values) -> bool:
    try:
        return bool(np.isfinite(np.asarray([v for ring in values for v in np.ravel(ring)], float)).all())
    except (TypeError, ValueError):
        return False


def _ref_object(lid, category, g, task) -> RefObject | None:
    if category is None or g is None:
        return None
    if task == "bbox":
        x, y, w, h = (float(v) for v in g)
        if w <= 0 or h <= 0:
            return None
        box, shape = np.array([x, y, x + w, y + h]), None
    elif task == "segm":
        shape = [np.asarray(ring, float) for ring in g if len(ring) >= 3]
        if not shape:
            return None
        pts = np.concatenate(shape)
        box = np.concatenate([pts.min(0), pts.max(0)])
    else:
        arr = np.asarray([[np.nan, np.nan] if p is None else p for p in g], float).reshape(-1, 2)
        seen = ~np.isnan(arr).any(1)
        if not seen.any():
            return None
        shape = np.concatenate([np.nan_to_num(arr), np.where(seen, 2.0, 0.0)[:, None]], 1)
        box = np.concatenate([arr[seen].min(0), arr[seen].max(0)])
    if (box[2:] <= box[:2]).any():
        box[2:] = np.maximum(box[2:], box[:2] + 1e-4)
    bbox = tuple(float(v) for v in (box[0] * SCALE, box[1] * SCALE, (box[2] - box[0]) * SCALE,
                                    (box[3] - box[1]) * SCALE))
    geometry = bbox  # the pixel payload an exact (λ = 0) copy is written from
    if task == "segm":
        geometry = [[float(v) * SCALE for v in ring.ravel()] for ring in shape]
    elif task == "keypoints":
        geometry = [float(v) for v in (shape * [SCALE, SCALE, 1.0]).ravel()]
    return RefObject(lid, category, box, shape, geometry, bbox)


def _label(ann: dict, task: str, names: dict[int, str]):
    truth = {"truth_ref_ids": [str(i) for i in ann["truth_ref_ids"]], "truth_errors": list(ann["truth_errors"]),
             "truth_label": names.get(ann["truth_category"]) if ann["truth_category"] is not None else None}
    label = names[ann["category_id"]]
    if task == "bbox":
        return fo.Detection(label=label, bounding_box=[v / SCALE for v in ann["bbox"]], **truth)
    if task == "segm":
        rings = [[[ring[i] / SCALE, ring[i + 1] / SCALE] for i in range(0, len(ring), 2)] for ring in ann["segmentation"]]
        return fo.Polyline(label=label, points=rings, closed=True, filled=False, **truth)
    kp = ann["keypoints"]
    pts = [[kp[i] / SCALE, kp[i + 1] / SCALE] if kp[i + 2] > 0 else [float("nan"), float("nan")]
           for i in range(0, len(kp), 3)]
    return fo.Keypoint(label=label, points=pts, **truth)


def simulate_rater_fields(dataset, reference_field, prefix="synthetic", set_rater_list=True, **params) -> dict:
    """Create synthetic rater fields from ``reference_field`` (see the module docstring).

    Parameters
    ----------
    dataset : the dataset (or a view of it: the whole dataset is used).
    reference_field : a Detections, Polylines or Keypoints field; never written.
    prefix : the new fields are ``<prefix>_<rater>``; none of them may exist.
    set_rater_list : add the synthetic raters to an existing ``rater_list`` field.
    **params : the parameters of :class:`kalos_core.noise.simulate_measure.SimulateConfig`
        (``n_raters``, ``magnitude``, ``seed``, ``profile``, ``schools``, ``defiant``).

    Returns
    -------
    dict : the new fields and their raters, the label counts, the cannibalisation ratio.
    """
    dataset = dataset._dataset if hasattr(dataset, "_dataset") else dataset
    label_cls, config = check_params(dataset, reference_field, prefix, **params)
    reference, sample_ids, cat = _reference(dataset, reference_field, label_cls)
    names = {v: n for n, v in cat.items()}
    task, list_name = TASKS[label_cls]
    sim = measure().run(MeasureData(reference), config)
    per_rater = {r.name: [[] for _ in sample_ids] for r in sim.raters}
    for ann in sim.coco["annotations"]:
        per_rater[ann["rater_id"]][ann["image_id"]].append(_label(ann, task, names))
    fields = {}
    for rater, rows in per_rater.items():
        field = f"{prefix}_{rater}"
        dataset.set_values(field, [label_cls(**{list_name: row}) for row in rows])
        fields[field] = rater
    if set_rater_list and dataset.has_sample_field("rater_list"):
        # the user's rater_list: add the synthetic raters, keep everyone listed (a sample without a
        # list keeps none: every rater whose field exists on it is assigned, the new ones included)
        lists = dataset.values("rater_list")
        dataset.set_values("rater_list", [None if rl is None else list(rl) + [r for r in per_rater if r not in rl]
                                          for rl in lists])
    info = dict(dataset.info or {})
    imported = dict(info.get("kalos_import") or {})
    imported["rater_fields"] = {**(imported.get("rater_fields") or {}), **fields}
    summary = {"reference_field": reference_field, "fields": fields, "n_raters": len(sim.raters),
               "magnitude": config.magnitude, "seed": config.seed, "profile": config.profile or "default",
               "n_labels": len(sim.coco["annotations"]), "n_reference": reference.n_objects,
               "cannibalisation": sim.stats.ratio, "schools": list(config.schools), "defiant": config.defiant}
    info["kalos_import"] = imported
    info["kalos_simulation"] = {**(info.get("kalos_simulation") or {}), prefix: summary}
    dataset.info = info
    dataset.save()
    return summary


def form_params(params: dict) -> dict:
    """The simulation's parameters in a form's values (``ctx.params``); empty ones take their defaults."""
    return {p.name: params[p.name] for p in measure().params if params.get(p.name) not in (None, "")}
