"""Read multi-rater labels from a FiftyOne collection and write KaLOS results back.

Two layouts are understood:

* **rater fields** - one label field per rater (``raters_alice``, ``raters_bob``);
  the rater's name is the field name without the fields' common prefix;
* **rater attribute** - one label field whose labels carry ``rater_id``.

``Detections`` whose labels carry ``location`` / ``dimensions`` / ``rotation``
(FiftyOne's 3D detections, e.g. on ``.pcd`` / ``.fo3d`` samples) are read as
geometry kind ``cuboids`` (scene units, compared by 3D IoU) instead of 2D boxes.

Which raters were assigned to a sample comes from its ``rater_list`` field.
A sample without ``rater_list`` is read with a documented default: every
rater whose field *exists* on the sample (is not None; an empty label list
means "assigned, drew nothing") is assigned; in the attribute layout, every
rater of the collection is assigned when the label field exists.

Everything is read with one ``values()`` call per field (no per-sample round
trips); results are written by :mod:`fiftyone_layer.writeback`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import fiftyone as fo
import numpy as np

from kalos_core.columns import AnnotationColumns
from kalos_core.data import Annotation, ImageRecord, MultiRaterDataset
from kalos_core.io.cuboids import CUBOID_FIELDS, cuboid_problem

from .errors import SetupError  # noqa: F401  (re-exported: operators import it from here)
from .rawdocs import LIST_NAMES
from .regions import load_mask, mask_rle, polygons_without_area
from .run_store import AGREEMENT, run_method

KINDS = {fo.Detections: "box", fo.Polylines: "polygon", fo.Keypoints: "keypoints",
         fo.Segmentation: "classmap"}   # semantic masks: one class map per rater (fiftyone_layer/measures/masks.py)


@dataclass
class RaterSource:
    """Where the raters' labels live."""

    fields: list[str]
    label_cls: type
    rater_attribute: str | None = None     # set for the attribute layout
    raters: dict[str, str] = field(default_factory=dict)  # field -> rater (fields layout)
    cuboids: bool = False                  # Detections with location/dimensions/rotation (3D)

    @property
    def list_name(self) -> str:
        return LIST_NAMES[self.label_cls]

    @property
    def kind(self) -> str:
        return "cuboids" if self.cuboids else KINDS[self.label_cls]

    def label_paths(self, attr: str) -> list[str]:
        return [f"{f}.{self.list_name}.{attr}" for f in self.fields]

    @property
    def video(self) -> bool:
        """The labels are on video frames (``frames.<field>``)."""
        return self.fields[0].startswith("frames.")

    def run_config(self) -> dict:
        """What every stored run records of its labels (``measure_runs.label_source_values`` reads it back)."""
        attribute = self.rater_attribute is not None
        return {"rater_fields": None if attribute else self.fields, "label_field": self.fields[0] if attribute else None,
                "rater_attribute": self.rater_attribute, "label_type": self.label_cls.__name__, "raters": self.raters}


def label_fields(collection) -> dict[str, type]:
    """Label-list fields of the collection usable by KaLOS, name -> label class; on a video dataset the
    frames' ones too, as ``frames.<field>``."""
    schema = collection.get_field_schema(embedded_doc_type=tuple(LIST_NAMES))
    out = {name: f.document_type for name, f in schema.items()}
    if collection.media_type == "video":
        frames = collection.get_frame_field_schema(embedded_doc_type=tuple(LIST_NAMES)) or {}
        out.update({f"frames.{name}": f.document_type for name, f in frames.items()})
    return out


def rater_names(fields: list[str]) -> dict[str, str]:
    """Field -> rater name: the field name (without ``frames.``) without the fields' common ``prefix_``."""
    bare = [f.removeprefix("frames.") for f in fields]
    prefix = os.path.commonprefix(bare) if len(fields) > 1 else ""
    prefix = prefix[: prefix.rfind("_") + 1] if "_" in prefix else ""
    names = {f: b[len(prefix):] or b for f, b in zip(fields, bare)}
    return names if len(set(names.values())) == len(fields) else dict(zip(fields, bare))


def rater_list_schema_problem(collection) -> str | None:
    """Why the declared ``rater_list`` field cannot hold lists of rater names (a StringField:
    ``"a,b"`` would be read as raters 'a', ',', 'b'), or None."""
    declared = collection.get_field("rater_list")
    if declared is None or (isinstance(declared, fo.ListField)
                            and isinstance(declared.field, (fo.StringField, fo.IntField, type(None)))):
        return None
    held = type(declared).__name__ + (f" of {type(declared.field).__name__}" if isinstance(declared, fo.ListField)
                                      else "")
    return (f"field rater_list is a {held}, not a list of rater names; set it to lists, e.g. "
            "sample['rater_list'] = ['alice', 'bob'], or rename it")


def what_field(collection, name: str) -> str:
    """What field ``name`` is: ``field 'x' does not exist`` / ``holds Classifications`` / ``is a IntField``."""
    f = collection.get_field(name)
    held = "does not exist" if f is None else (
        f"holds {f.document_type.__name__}" if isinstance(f, fo.EmbeddedDocumentField) else f"is a {type(f).__name__}")
    return f"field {name!r} {held}"


def not_label_fields(collection, names, available: dict) -> str | None:
    """What each of ``names`` that is not a Detections/Polylines/Keypoints field is instead, or None."""
    wrong = [what_field(collection, name) for name in names if name not in available]
    return (f"{'; '.join(wrong)}: choose Detections, Polylines or Keypoints fields "
            f"(this dataset has: {', '.join(available) or 'none'})") if wrong else None


def resolve_source(collection, rater_fields=None, label_field=None, rater_attribute="rater_id") -> RaterSource:
    """Check a set-up and describe it; raises :class:`SetupError` naming the bad parameter."""
    available = label_fields(collection)
    problem = rater_list_schema_problem(collection)
    if problem:
        raise SetupError(problem, "rater_fields" if rater_fields or not label_field else "label_field")
    if rater_fields:
        wrong = not_label_fields(collection, rater_fields, available)
        if wrong:
            raise SetupError(wrong, "rater_fields")
        if len(rater_fields) < 2:
            raise SetupError("choose at least two rater fields: agreement needs two raters", "rater_fields")
        types = {f: available[f].__name__ for f in rater_fields}
        if len(set(types.values())) > 1:
            listing = ", ".join(f"{f} ({t})" for f, t in types.items())
            raise SetupError(f"rater fields hold different label types: {listing}", "rater_fields")
        names = rater_names(list(rater_fields))
        imported = (collection._dataset.info or {}).get("kalos_import", {}).get("rater_fields", {})
        names.update({f: str(imported[f]) for f in rater_fields if f in imported})  # unsanitised names
        return RaterSource(list(rater_fields), available[rater_fields[0]], raters=names,
                           cuboids=holds_cuboids(collection, rater_fields, available[rater_fields[0]]))
    if label_field:
        wrong = not_label_fields(collection, [label_field], available)
        if wrong:
            raise SetupError(wrong, "label_field")
        src = RaterSource([label_field], available[label_field], rater_attribute=rater_attribute,
                          cuboids=holds_cuboids(collection, [label_field], available[label_field]))
        found = [r for r in collection.distinct(src.label_paths(rater_attribute)[0]) if r is not None]
        if len(found) < 2:
            raise SetupError(f"labels of {label_field!r} name {len(found)} rater(s) in attribute "
                             f"{rater_attribute!r}; agreement needs at least two", "rater_attribute")
        return src
    raise SetupError("choose the rater fields (one per rater), or a label field and its rater attribute",
                     "rater_fields")


def holds_cuboids(collection, fields, label_cls) -> bool:
    """Whether the Detections of ``fields`` are 3D (some label has ``dimensions``): then every
    label must be a cuboid (``location``, ``dimensions``, ``rotation``)."""
    return label_cls is fo.Detections and any(collection.count(f"{f}.detections.dimensions") for f in fields)


def check_label_attributes(collection, source: RaterSource, run_key: str) -> None:
    """Refuse when the rater labels already carry ``<run_key>_unit`` / ``_status`` attributes
    that the stored run ``run_key`` did not write (the user's own data would be overwritten,
    and later deleted with the run)."""
    dataset = collection._dataset
    owned = set()
    if run_method(dataset, run_key) == AGREEMENT:
        owned = set(getattr(dataset.get_run_info(run_key).config, "fields", None) or [])
    statuses = f"{run_key}_statuses"
    if statuses not in owned and dataset.has_sample_field(statuses):
        raise SetupError(f"the dataset has a field {statuses!r} that no KaLOS run wrote; run key {run_key!r} "
                         "would overwrite it: choose another run key", "run_key")
    for f in source.fields:
        for attr in (f"{run_key}_unit", f"{run_key}_unit_no", f"{run_key}_status"):
            path = f"{f}.{source.list_name}.{attr}"
            if path not in owned and (dataset.get_field(path) is not None or dataset.count(path) > 0):
                raise SetupError(f"the labels of field {f!r} already have an attribute {attr!r} that no KaLOS run "
                                 f"wrote; run key {run_key!r} would overwrite it: choose another run key", "run_key")


def _class_of(label: str, categories: dict[str, int]) -> int:
    if label not in categories:
        categories[label] = len(categories) + 1
    return categories[label]


def _geometry(kind: str, value, width: float = 1.0, height: float = 1.0):
    """A FiftyOne label's geometry in the engine's convention, scaled from relative to ``width`` x ``height``."""
    if kind == "rle":
        return value
    if kind == "cuboids":      # scene units: no image to be relative to
        return tuple(float(v) for part in value for v in part)
    if kind == "box":
        x, y, w, h = (float(v) for v in value)
        return (x * width, y * height, w * width, h * height)
    if kind == "polygon":
        return [[c for x, y in ring for c in (x * width, y * height)] for ring in value]
    flat = []
    for x, y in value:
        seen = x is not None and y is not None and not (math.isnan(x) or math.isnan(y))
        flat += [x * width if seen else 0.0, y * height if seen else 0.0, 2.0 if seen else 0.0]
    return flat


def _geometry_problem(kind: str, value) -> str | None:
    """Why a label's geometry cannot be compared (None when it can); NaN keypoints are invisible points."""
    try:
        if kind == "box":
            box = [float(v) for v in value]
            if len(box) != 4 or not all(math.isfinite(v) for v in box):
                return f"bounding_box {list(value)} has a missing or non-finite value"
            if box[2] <= 0 or box[3] <= 0:
                return f"bounding_box {list(value)} has no area"
        elif kind == "polygon":   # rings of < 3 points enclose nothing: left out when others remain
            if not any(len(ring) >= 3 for ring in value):
                return "no shape of the polyline has 3 or more points (it encloses no area)"
            if not all(math.isfinite(float(c)) for ring in value for pt in ring for c in pt):
                return "a polyline point has a non-finite coordinate"
        elif kind == "keypoints":
            if any(c is not None and math.isinf(float(c)) for pt in value for c in pt):
                return "a keypoint has an infinite coordinate"
        elif kind == "cuboids":
            missing = [name for name, part in zip(CUBOID_FIELDS, value) if part is None]
            if missing:
                return f"no {' / '.join(missing)} (the field holds 3D detections: each needs all three)"
            if any(len(part) != 3 for part in value):
                return f"location, dimensions and rotation must be 3 numbers each, got {list(value)}"
            return cuboid_problem(tuple(float(v) for part in value for v in part))
    except (TypeError, ValueError):
        return f"unreadable geometry {value!r}"
    return None


def _read_mask(mask, path, box, width: int, height: int) -> tuple[dict | None, str | None]:
    """``(full-frame COCO RLE, None)`` of a Detection's mask (or mask_path), or ``(None, why not)``."""
    try:
        mask = load_mask(mask, path)
    except OSError as err:
        return None, f"mask_path {path!r} cannot be read ({err})"
    return mask_rle(mask, box, width, height)


def read_dataset(collection, source: RaterSource, use_masks: bool = False, columnar: bool = True
                 ) -> MultiRaterDataset:
    """Build the engine's data set from the collection (one ``values()`` call per field).

    ``use_masks`` reads Detections' instance masks (needs ``metadata`` width/height)
    and compares them as masks instead of boxes. ``columnar`` (the default, what the
    engines' kernels take): boxes are held as arrays per sample
    (:class:`kalos_core.columns.AnnotationColumns`, no object per label) when every label
    is readable; otherwise, for other kinds, or with ``columnar=False`` (a caller that
    walks the labels), one :class:`Annotation` per label, with every problem named.
    """
    kind = "rle" if use_masks else source.kind
    geom_attr = {"box": "bounding_box", "polygon": "points", "keypoints": "points", "rle": "mask",
                 "cuboids": "location"}[kind]
    sample_ids = collection.values("id")
    sizes = list(zip(*collection.values(["metadata.width", "metadata.height"])))
    missing = [sid for sid, (w, h) in zip(sample_ids, sizes) if not w or not h]
    if use_masks and missing:
        raise SetupError(f"mask IoU needs image sizes: {len(missing)} sample(s) lack metadata "
                         f"(e.g. {missing[0]}); run dataset.compute_metadata()", "distance")
    # pixel geometry where every sample knows its size (pixel-based distances such as centroid_box
    # need the aspect ratio); otherwise FiftyOne's relative coordinates on a unit image
    pixel = not missing and bool(sample_ids)
    rater_lists = read_rater_lists(collection, sample_ids)
    per_field = []
    for f in source.fields:
        ids, labels, geoms = collection.values([f"{f}.{source.list_name}.{a}" for a in ("id", "label", geom_attr)])
        if use_masks:
            boxes, paths = collection.values([f"{f}.{source.list_name}.{a}" for a in ("bounding_box", "mask_path")])
            geoms = [None if row is None else [_read_mask(m, p, b, int(w), int(h))
                                               for m, p, b in zip(row, prow, brow)]
                     for row, prow, brow, (w, h) in zip(geoms, paths, boxes, sizes)]
        if kind == "cuboids":  # [location, dimensions, rotation] per label
            more = collection.values([f"{f}.{source.list_name}.{a}" for a in CUBOID_FIELDS[1:]])
            geoms = [None if row is None else [list(parts) for parts in zip(row, *(m[k] for m in more))]
                     for k, row in enumerate(geoms)]
        raters = (collection.values(f"{f}.{source.list_name}.{source.rater_attribute}")
                  if source.rater_attribute else None)
        per_field.append((f, ids, labels, geoms, raters))
    all_raters = (sorted({str(r) for *_, raters in per_field for rs in raters or [] for r in rs or [] if r is not None})
                  if source.rater_attribute else sorted(source.raters.values()))
    selected = set(source.raters.values())
    if columnar and kind == "box":
        fast = _box_columns(sample_ids, sizes, pixel, rater_lists, per_field, source, selected, all_raters)
        if fast is not None:
            return fast
    categories: dict[str, int] = {}
    owner: dict[str, str] = {}   # label id -> field: ids must be unique, results are written back by id
    images, problems, shared = [], [], {}
    for k, sid in enumerate(sample_ids):
        anns, present = [], []
        for f, ids, labels, geoms, raters in per_field:
            if ids[k] is None:
                continue
            present.append(f)
            for j, (lid, lab, g) in enumerate(zip(ids[k], labels[k], geoms[k])):
                if lid in owner:
                    shared.setdefault((owner[lid], f), lid)
                owner[lid] = f
                rater = str(raters[k][j]) if raters is not None else source.raters[f]
                if use_masks:
                    g, bad = g
                else:
                    bad = _geometry_problem(kind, g) if g is not None else f"no {geom_attr}"
                if lab is None or g is None or bad:
                    problems.append(f"sample {sid}, field {f}, label {lid}: {bad or 'no class'}")
                    continue
                geom = _geometry(kind, g, *(sizes[k] if pixel and kind != "rle" else (1.0, 1.0)))
                anns.append(Annotation(lid, rater, _class_of(lab, categories), geom))
        assigned = _assigned(rater_lists[k], source, selected, all_raters, present)
        outside = {a.rater for a in anns} - set(assigned)
        if outside:
            problems.append(f"sample {sid}: labels by {sorted(outside)} who are not in its rater_list {list(assigned)}")
        width, height = (float(sizes[k][0]), float(sizes[k][1])) if pixel else (1.0, 1.0)
        images.append(ImageRecord(sid, width, height, assigned, anns))
    if kind == "polygon":
        problems += polygons_without_area(images, owner)
    if shared:
        listing = "; ".join(f"{a} and {b} (e.g. label {lid})" if a != b else f"{a} holds label {lid} twice"
                            for (a, b), lid in shared.items())
        raise SetupError(f"label ids are not unique: {listing}. A field copied with clone_sample_field keeps its "
                         "label ids, and KaLOS writes results back by label id: give the copy new label ids",
                         "rater_fields")
    if problems:
        more = f"\n... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise SetupError(f"{len(problems)} problem(s) in the labels:\n" + "\n".join(problems[:10]) + more)
    names = {v: k for k, v in categories.items()}
    return MultiRaterDataset(images, names, kind, meta={"pixel_geometry": pixel})


def read_rater_lists(collection, sample_ids: list) -> list:
    """Each sample's ``rater_list`` (None where it has none): a list of rater names. Anything
    else is refused naming the samples (a string ``"a,b"`` is not guessed to be raters a, b)."""
    if not collection.has_field("rater_list"):
        return [None] * len(sample_ids)
    lists = collection.values("rater_list")
    bad = [(sid, rl) for sid, rl in zip(sample_ids, lists) if rl is not None and not (
        isinstance(rl, (list, tuple)) and all(isinstance(r, (str, int)) and not isinstance(r, bool) for r in rl))]
    if bad:
        paths = dict(zip(*collection.select([sid for sid, _ in bad[:3]]).values(["id", "filepath"])))
        listing = "; ".join(f"sample {sid} ({paths.get(sid)}): {type(rl).__name__} {rl!r}"[:160] for sid, rl in bad[:3])
        raise SetupError(f"field rater_list must hold a list of rater names on every sample, but {len(bad)} "
                         f"sample(s) hold something else: {listing}. Set it to a list, e.g. "
                         "sample['rater_list'] = ['alice', 'bob'] (None: every rater whose field exists on the sample is assigned)")
    return lists


def _assigned(rater_list, source: RaterSource, selected: set, all_raters: list, present: list) -> tuple:
    if rater_list is not None:
        # a rater outside the selection is not part of the run (fields layout)
        return tuple(str(r) for r in rater_list if source.rater_attribute or str(r) in selected)
    if source.rater_attribute:
        return tuple(all_raters) if present else ()
    return tuple(source.raters[f] for f in present)


def _box_columns(sample_ids, sizes, pixel, rater_lists, per_field, source, selected, all_raters
                 ) -> MultiRaterDataset | None:
    """:func:`read_dataset` for boxes as arrays per sample; None when any label has a problem
    (the per-label reader then names it). Same data set, item for item."""
    categories: dict[str, int] = {}
    parts, all_ids, all_boxes, scale = [], [], [], []
    for k, sid in enumerate(sample_ids):
        ids, names, classes, present = [], [], [], []
        for f, fids, labels, geoms, raters in per_field:
            if fids[k] is None:
                continue
            present.append(f)
            if labels[k] is None or geoms[k] is None or (raters is not None and raters[k] is None):
                return None
            if None in labels[k] or any(g is None for g in geoms[k]):
                return None
            ids += fids[k]
            classes += [_class_of(lab, categories) for lab in labels[k]]
            names += [str(r) for r in raters[k]] if raters is not None else [source.raters[f]] * len(fids[k])
            all_boxes += geoms[k]
        assigned = _assigned(rater_lists[k], source, selected, all_raters, present)
        code = {r: p for p, r in enumerate(assigned)}
        if any(r not in code for r in names):
            return None
        width, height = (float(sizes[k][0]), float(sizes[k][1])) if pixel else (1.0, 1.0)
        scale += [sizes[k] if pixel else (1.0, 1.0)] * len(ids)
        parts.append((sid, width, height, assigned, ids, [code[r] for r in names], classes))
        all_ids += ids
    if len(set(all_ids)) != len(all_ids):
        return None
    try:
        boxes = np.array(all_boxes, dtype=float) if all_boxes else np.zeros((0, 4))
    except (TypeError, ValueError):
        return None
    if boxes.shape != (len(all_boxes), 4) or not (np.isfinite(boxes).all() and (boxes[:, 2:] > 0).all()):
        return None
    wh = np.array(scale, dtype=float).reshape(-1, 2)
    boxes = boxes * np.concatenate([wh, wh], axis=1)
    images, start = [], 0
    for sid, width, height, assigned, ids, rater, classes in parts:
        stop = start + len(ids)
        cols = AnnotationColumns(ids, assigned, np.array(rater, np.int64), np.array(classes, np.int64),
                                 boxes[start:stop], with_bbox=False)
        images.append(ImageRecord(sid, width, height, assigned, cols))
        start = stop
    names = {v: k for k, v in categories.items()}
    return MultiRaterDataset(images, names, "box", meta={"pixel_geometry": pixel})


def owned_fields(source: RaterSource, run_key: str) -> list[str]:
    """Every field path a run writes: the per-sample α and statuses, the per-label unit (its id and
    its number within the image) and status."""
    paths = [f"{run_key}_alpha", f"{run_key}_statuses"]
    for f in source.fields:
        paths += [f"{f}.{source.list_name}.{run_key}_{a}" for a in ("unit", "unit_no", "status")]
    return paths
