"""Clean reference set -> synthetic raters, with the truth about every error kept.

>>> ref = reference_from_coco("reference.json", task="bbox")
>>> sim = simulate(ref, n_raters=5, magnitude=1.0, seed=0)
>>> sim.coco        # multi-rater COCO (rater_list / rater_id), readable by kalos_core.io.load_coco
>>> sim.stats.ratio # cannibalisation ratio (paper Table 3)

Every synthetic annotation carries ``truth_ref_ids`` (reference annotation ids; empty
for a false positive), ``truth_errors`` (``localisation``, ``class``, ``fragment``,
``combination``, ``false_positive``, ``school:<name>``) and ``truth_category`` (the
reference class); every image lists the reference ids each rater missed in
``truth_missed``. Each (image, rater) draws from its own stream keyed by
``(seed, image index, crc32(rater name))``: adding a rater does not change the others.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..data import TASK_KINDS, MultiRaterDataset
from ..io.coco import load_coco, top_level
from ..io.jsonfile import read_json
from ..io.records import box_problem, keypoints_problem, polygon_problem
from ..io.validation import InvalidInputError, Problem
from ..io.values import identifier, integer, side
from .channels import ChannelStats, ClassSampler, RaterContext, RefObject, SynthLabel, copy_label, rate_image, sigmoid
from .profile import NoiseProfile, load_profile
from .schools import RaterSpec, plain_raters


@dataclass
class RefImage:
    id: Any
    width: float
    height: float
    file_name: str | None
    objects: list[RefObject] = field(default_factory=list)


@dataclass
class Reference:
    """A clean reference set: images with their objects, category names, the task."""

    images: list[RefImage]
    categories: dict[int, str]
    task: str = "bbox"
    skipped: int = 0

    @property
    def n_objects(self) -> int:
        return sum(len(im.objects) for im in self.images)


def _bbox_of(ann: dict, task: str) -> tuple | None:
    b = ann.get("bbox")
    if b is not None and box_problem(b) is None:
        return tuple(float(v) for v in b)
    if task == "segm" and isinstance(ann.get("segmentation"), list) and ann["segmentation"]:
        pts = np.concatenate([np.reshape(r, (-1, 2)) for r in ann["segmentation"]])
    elif task == "keypoints" and ann.get("keypoints"):
        kp = np.reshape(ann["keypoints"], (-1, 3))
        pts = kp[kp[:, 2] > 0, :2]
    else:
        return None
    if len(pts) == 0:
        return None
    lo, hi = pts.min(0), pts.max(0)
    return (float(lo[0]), float(lo[1]), float(hi[0] - lo[0]), float(hi[1] - lo[1])) if (hi > lo).all() else None


def _ref_object(ann: dict, task: str, width: float, height: float) -> RefObject | None:
    bbox = _bbox_of(ann, task)
    if bbox is None:
        return None
    size = np.array([width, height])
    box = np.array([bbox[0] / width, bbox[1] / height, (bbox[0] + bbox[2]) / width, (bbox[1] + bbox[3]) / height])
    shape, geometry = None, bbox
    if task == "segm":
        segm = ann.get("segmentation")
        if not isinstance(segm, list):
            raise ValueError(f"annotation {ann.get('id')}: simulate needs polygon segmentations, not RLE")
        shape = [np.reshape(np.asarray(r, float), (-1, 2)) / size for r in segm if len(r) >= 6]
        if not shape:
            return None
        geometry = segm
    elif task == "keypoints":
        kp = np.reshape(np.asarray(ann.get("keypoints") or [], float), (-1, 3))
        if not (kp[:, 2] > 0).any():
            return None
        shape = kp / np.array([width, height, 1.0])
        geometry = list(ann["keypoints"])
    return RefObject(ann["id"], int(ann["category_id"]), box, shape, geometry, bbox)


def reference_from_coco(source: str | Path | dict, task: str = "bbox", rater: str | None = None) -> Reference:
    """Read any COCO file (or dict) as a clean reference set.

    Rater keys are ignored, unless ``rater`` names one whose annotations form the reference.
    Annotations without a usable box (or polygon / visible keypoint) are skipped and counted.
    """
    if task not in TASK_KINDS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASK_KINDS)}")
    name = "input"
    if isinstance(source, (str, Path)):
        name, source = str(source), read_json(source)
    raw_images, raw_anns, raw_cats = top_level(source, name)
    if rater is not None:
        _check_rater(rater, raw_images, raw_anns, name)
    problems: list[Problem] = []
    images = _ref_images(raw_images, problems)
    categories = {}
    for k, c in enumerate(raw_cats):
        cid, _, err = integer(c.get("id")) if isinstance(c, dict) else (None, False, "not an object")
        if err:
            problems.append(Problem(f"categories[{k}]: category id {err}"))
        else:
            categories[cid] = str(c.get("name", cid))
    skipped = 0
    for k, ann in enumerate(raw_anns):
        if not isinstance(ann, dict):
            problems.append(Problem(f"annotations[{k}] is not an object"))
            continue
        if rater is not None and str(ann.get("rater_id")) != rater:
            continue
        im = images.get(str(ann.get("image_id")))
        msg = _reference_problem(ann, task) if im is not None else "image_id refers to no valid image"
        if msg:
            problems.append(Problem(msg, ann.get("image_id"), ann.get("id")))
            continue
        obj = _ref_object(ann, task, im.width, im.height)
        if obj is None:
            skipped += 1
            continue
        im.objects.append(obj)
        categories.setdefault(obj.category, str(obj.category))
    if problems:
        raise InvalidInputError(problems, name, hint=False)
    return Reference(list(images.values()), categories, task, skipped)


def check_reference(reference: Reference) -> None:
    """``ValueError`` when ``reference`` has nothing to copy: no image, or no label on any image."""
    if not reference.images:
        raise ValueError("the reference has no images: nothing to copy; give a COCO file with images "
                         "and their labels")
    if not reference.n_objects:
        skipped = f" ({reference.skipped} without a usable {reference.task} geometry)" if reference.skipped else ""
        raise ValueError(f"the reference's {len(reference.images)} image(s) hold no labels{skipped}: nothing to "
                         f"copy; give a reference with labels (or a reference rater who drew some)")


def _check_rater(rater: str, raw_images: list, raw_anns: list, name: str) -> None:
    """``ValueError`` unless ``rater`` labelled or is listed in the file (the message lists its raters)."""
    known = {str(a["rater_id"]) for a in raw_anns if isinstance(a, dict) and a.get("rater_id") is not None}
    known |= {str(r) for im in raw_images if isinstance(im, dict) for r in (im.get("rater_list") or [])}
    if rater not in known:
        raise ValueError(f"reference_rater: {rater!r} is not a rater of {name}; its raters are: "
                         f"{', '.join(sorted(known)) or 'none'}")


def _ref_images(raw: list, problems: list[Problem]) -> dict[str, RefImage]:
    """Reference images by id text; ids, duplicates and sizes checked (a reference needs its sizes)."""
    images: dict[str, RefImage] = {}
    for k, im in enumerate(raw):
        iid = im.get("id") if isinstance(im, dict) else None
        err = identifier(iid, "image id") if isinstance(im, dict) else "not an object"
        if err is None and str(iid) in images:
            err = "duplicate image id"
        w, werr = side(im.get("width"), "width") if err is None else (None, None)
        h, herr = side(im.get("height"), "height") if err is None else (None, None)
        err = err or werr or herr
        if err:
            problems.append(Problem(err, iid) if iid is not None else Problem(f"images[{k}]: {err}"))
            continue
        fn = im.get("file_name")
        images[str(iid)] = RefImage(iid, w, h, fn if isinstance(fn, str) else None)
    return images


def _reference_problem(ann: dict, task: str) -> str | None:
    """Why an annotation cannot be copied (None if it can, or if it simply lacks a geometry)."""
    err = identifier(ann.get("id"), "annotation id")
    if err:
        return err
    _, _, err = integer(ann.get("category_id"))
    if err:
        return f"category_id: {err}"
    if task == "bbox" and ann.get("bbox") is not None:
        return box_problem(ann["bbox"])
    if task == "segm" and ann.get("segmentation"):
        if not isinstance(ann["segmentation"], list):
            return "simulate needs polygon segmentations, not RLE"
        return polygon_problem(ann["segmentation"])
    if task == "keypoints" and ann.get("keypoints"):
        return keypoints_problem(ann["keypoints"])
    return None


def reference_from_dataset(ds: MultiRaterDataset, rater: str | None = None) -> Reference:
    """One rater's labels of a box data set as the reference (all annotations if ``rater`` is None)."""
    if ds.kind != "box":
        raise ValueError("reference_from_dataset supports box data sets; use reference_from_coco otherwise")
    if rater is not None:
        ds.check_raters(rater, "reference_rater")
    images = []
    for im in ds.images:
        objs = []
        for a in im.annotations:
            if rater is None or a.rater == rater:
                x, y, w, h = a.geometry
                box = np.array([x / im.width, y / im.height, (x + w) / im.width, (y + h) / im.height])
                objs.append(RefObject(a.id, a.category, box, None, tuple(a.geometry), tuple(a.geometry)))
        images.append(RefImage(im.id, im.width, im.height, im.file_name, objs))
    return Reference(images, dict(ds.categories), "bbox")


@dataclass
class Simulation:
    """The synthetic multi-rater COCO dict, the cannibalisation statistics and the raters."""

    coco: dict
    stats: ChannelStats
    raters: list[RaterSpec]
    task: str
    n_reference: int = 0    #: objects in the reference

    def dataset(self) -> MultiRaterDataset:
        return load_coco(self.coco, self.task)

    def to_dict(self) -> dict:
        """The multi-rater COCO dict (the JSON contract of ``simulate --output``)."""
        return self.coco


def _polygon_area(rings) -> float:
    """Shoelace area summed over flat ``[x0, y0, x1, y1, ...]`` rings."""
    total = 0.0
    for r in rings:
        xy = np.reshape(np.asarray(r, float), (-1, 2))
        total += 0.5 * abs(float(np.dot(xy[:, 0], np.roll(xy[:, 1], -1)) - np.dot(xy[:, 1], np.roll(xy[:, 0], -1))))
    return total


def _to_coco(lab: SynthLabel, ann_id: int, image: RefImage, rater: str, task: str) -> dict:
    w, h = image.width, image.height
    d: dict[str, Any] = {"id": ann_id, "image_id": image.id, "category_id": int(lab.category), "rater_id": rater}
    if lab.exact and lab.source is not None:
        bbox = list(lab.source.bbox)
    else:
        x0, y0, x1, y1 = lab.box
        bbox = [round(x0 * w, 2), round(y0 * h, 2), max(round((x1 - x0) * w, 2), 0.01),
                max(round((y1 - y0) * h, 2), 0.01)]
    d["bbox"], d["area"], d["iscrowd"] = bbox, round(bbox[2] * bbox[3], 2), 0
    if task == "segm":
        if lab.exact and lab.source is not None:
            d["segmentation"] = lab.source.geometry
        else:
            d["segmentation"] = [[round(float(v), 2) for v in (ring * [w, h]).ravel()] for ring in lab.shape]
        d["area"] = round(_polygon_area(d["segmentation"]), 2)  # COCO: the outline's area, not the box's
    elif task == "keypoints":
        if lab.exact and lab.source is not None:
            d["keypoints"] = list(lab.source.geometry)
        else:
            kp = lab.shape * [w, h, 1.0]
            kp[kp[:, 2] <= 0] = 0.0
            d["keypoints"] = [round(float(v), 2) for v in kp.ravel()]
        d["num_keypoints"] = int(sum(v > 0 for v in d["keypoints"][2::3]))
    d["truth_ref_ids"] = list(lab.ref_ids)
    d["truth_errors"] = list(lab.errors)
    d["truth_category"] = lab.ref_category
    return d


def simulate(reference: Reference, n_raters: int = 5, magnitude: float = 1.0, seed: int = 0,
             profile: NoiseProfile | None = None, raters: Sequence[RaterSpec] | None = None,
             similarity: dict[str, dict[str, float]] | None = None,
             include_reference: bool = False, reference_name: str = "reference") -> Simulation:
    """Synthetic raters for a clean reference set.

    Parameters
    ----------
    reference : from :func:`reference_from_coco` (any COCO) or :func:`reference_from_dataset`.
    n_raters : number of plain raters (ignored when ``raters`` is given).
    magnitude : λ >= 0; scales event rates (capped at 1) and geometric errors. 0 = exact copies.
    seed : integer seed; same inputs, same output.
    profile : generator parameters (default: the shipped profile for the reference's task,
        fitted on real LVIS rater pairs: ``profiles/default.json`` / ``default_segm.json``).
    raters : explicit raters (schools of thought, a defiant rater, own profiles); see
        :mod:`kalos_core.noise.schools`.
    similarity : optional ``{class name: {class name: similarity}}`` for class confusions
        that the profile has not observed.
    include_reference : also add the reference itself as rater ``reference_name``.
    """
    if magnitude < 0:
        raise ValueError(f"magnitude must be >= 0, got {magnitude}")
    check_reference(reference)
    profile = profile if profile is not None else load_profile(task=reference.task)
    specs = list(raters) if raters is not None else plain_raters(n_raters)
    names = [r.name for r in specs] + ([reference_name] if include_reference else [])
    if len(set(names)) != len(names):
        raise ValueError(f"rater names must be unique, got {names}")
    templates = [o for im in reference.images for o in im.objects]
    contexts = {}
    for spec in specs:
        prof = spec.profile or profile
        if id(prof) not in contexts:
            u = prof.unmatched
            p = sigmoid(u.select_a + u.select_b * np.log([o.area for o in templates])) if templates else np.ones(0)
            contexts[id(prof)] = (ClassSampler(reference.categories, prof.classes, similarity),
                                  p / p.sum() if len(p) else p)
    stats = ChannelStats()
    images, annotations = [], []
    for k, image in enumerate(reference.images):
        missed_of = {}
        for spec in specs:
            prof = spec.profile or profile
            classes, template_p = contexts[id(prof)]
            rng = np.random.default_rng([int(seed), k, zlib.crc32(spec.name.encode())])
            ctx = RaterContext(rng, magnitude * spec.magnitude, prof, classes, templates, template_p)
            labels, missed = rate_image(image.objects, ctx, spec.edge_offsets, spec.school)
            stats.add(ctx.stats)
            missed_of[spec.name] = list(missed)
            annotations += [_to_coco(lab, len(annotations) + 1 + j, image, spec.name, reference.task)
                            for j, lab in enumerate(labels)]
        if include_reference:
            annotations += [_to_coco(copy_label(o), len(annotations) + 1 + j, image, reference_name, reference.task)
                            for j, o in enumerate(image.objects)]
        images.append({"id": image.id, "width": image.width, "height": image.height, "file_name": image.file_name,
                       "rater_list": names, "truth_missed": missed_of})
    info = {"description": "KaLOS synthetic raters (kalos_core.noise)", "kalos_simulation": {
        "magnitude": magnitude, "seed": int(seed), "raters": [_spec_dict(s) for s in specs],
        "profile": profile.meta.get("source", "custom"), "cannibalisation": stats.to_dict()}}
    cats = [{"id": k, "name": v} for k, v in sorted(reference.categories.items())]
    coco = {"info": info, "images": images, "annotations": annotations, "categories": cats}
    return Simulation(coco, stats, specs, reference.task, reference.n_objects)


def _spec_dict(spec: RaterSpec) -> dict:
    return {"name": spec.name, "magnitude": spec.magnitude, "school": spec.school,
            "edge_offsets": list(spec.edge_offsets), "own_profile": spec.profile is not None}
