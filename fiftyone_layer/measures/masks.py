"""Semantic masks on a FiftyOne collection (:mod:`kalos_core.masks`): one ``fo.Segmentation`` field
per rater (its ``mask`` array or its ``mask_path`` PNG, values = class indices).

A run under ``run_key`` writes these sample fields, all deleted with the run: ``<run_key>_alpha``
(each sample's α over its pixels: sort the grid by it), ``<run_key>_consensus`` (the STAPLE or
majority-vote consensus map as an ``fo.Segmentation``) and ``<run_key>_disagreement`` (an
``fo.Heatmap``, 0-100: the percent of a pixel's raters outside its most frequent class, an overlay
the App draws), with ``probabilities`` a fourth, ``<run_key>_probability`` (a Heatmap, 0-100: each
pixel's probability of its consensus class); it stores ``MaskResult.to_dict()``
(``config.method == "kalos_masks"``). A rater whose field is None on a sample has no mask there
(missing, not disagreement).
"""

from __future__ import annotations

import fiftyone as fo

from kalos_core.data import MultiRaterDataset, make_image
from kalos_core.masks import MaskResult
from kalos_core.measure import MeasureData

from .. import run_store
from ..adapter import RaterSource, rater_names, what_field
from ..errors import SetupError
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered
from ..view_rules import finish

DEFAULT_KEY = "masks"


def owned(source, run_key: str) -> list[str]:
    return [f"{run_key}_alpha", f"{run_key}_consensus", f"{run_key}_disagreement", f"{run_key}_probability"]


def segmentation_fields(collection) -> list[str]:
    """The collection's ``fo.Segmentation`` fields."""
    return list(collection.get_field_schema(embedded_doc_type=fo.Segmentation))


def rater_mask_fields(dataset) -> list[str]:
    """The Segmentation fields a form proposes as the raters': all but those a KaLOS run wrote
    (a consensus, a probability map)."""
    written = run_store.written_paths(dataset)
    return [f for f in segmentation_fields(dataset) if f not in written]


def mask_raters(collection, extras: dict) -> RaterSource:
    """The raters' Segmentation fields (``extras["mask_fields"]``); SetupError on ``mask_fields``."""
    fields = list(extras.get("mask_fields") or [])
    if len(fields) < 2:
        raise SetupError("choose at least two Segmentation fields, one per rater", "mask_fields")
    found = segmentation_fields(collection)
    bad = [f for f in fields if f not in found]
    if bad:
        raise SetupError(f"{what_field(collection, bad[0])}, not Segmentation masks; the Segmentation fields are: "
                         f"{', '.join(found) or 'none'}", "mask_fields")
    return RaterSource(fields, fo.Segmentation, raters=rater_names(fields))


def _stored(source: RaterSource) -> dict:
    return {"rater_fields": source.fields, "label_field": None, "rater_attribute": None,
            "label_type": "Segmentation", "raters": source.raters}


def _check(collection, source, config, extras) -> None:
    present = [(fo.ViewField(f) != None).if_else(1, 0) for f in source.fields]  # noqa: E711 - a query
    if collection.match(sum(present[1:], present[0]) >= 2).limit(1).count() == 0:
        raise SetupError(f"no sample has a mask in two of {', '.join(source.fields)}: nothing to compare",
                         "mask_fields")


def _read(collection, source, config, extras) -> MeasureData:
    """Each sample's masks by rater: the array where ``mask`` holds one, else the ``mask_path`` file
    (read with the measure, so that a bad file is refused naming it)."""
    paths = ["id", "filepath"] + [p for f in source.fields for p in (f"{f}.mask", f"{f}.mask_path")]
    rows = collection.values(paths)
    ids, files, cols = rows[0], rows[1], rows[2:]
    masks = {source.raters[f]: {} for f in source.fields}
    images = []
    for k, sid in enumerate(ids):
        here = []
        for j, f in enumerate(source.fields):
            mask, path = cols[2 * j][k], cols[2 * j + 1][k]
            if mask is not None and getattr(mask, "ndim", 2) != 2:
                raise SetupError(f"sample {sid}, field {f}: a mask of shape {tuple(mask.shape)}, not a class map "
                                 "(an RGB mask?); store one channel whose values are class indices", "mask_fields")
            value = mask if mask is not None else path
            if value is not None:
                masks[source.raters[f]][sid] = value
                here.append(source.raters[f])
        images.append(make_image(sid, 0, 0, here, file_name=files[k]))
    data = MultiRaterDataset(images, {}, "classmap")
    return MeasureData(data, options={"masks": masks, "disagreement_maps": True,
                                      "class_names": shared_targets(collection, source.fields)})


def shared_targets(collection, fields) -> dict[int, str]:
    """``{class value: name}`` the rater fields' ``mask_targets`` agree on (a field without its own
    takes the dataset's default ones); a value named differently by two fields stays unnamed."""
    ds = collection._dataset
    named = [ds.mask_targets.get(f) or ds.default_mask_targets or {} for f in fields]
    out: dict[int, str] = {}
    for k in {k for targets in named for k in targets}:
        given = {str(t[k]) for t in named if k in t}
        if len(given) == 1 and str(k).isdigit():   # integer targets (RGB-hex targets are not class values)
            out[int(k)] = given.pop()
    return dict(sorted(out.items()))


def _write(collection, source, run_key: str, result: MaskResult, data) -> None:
    alpha = {row["image"]: row["alpha"] for row in result.per_image}
    ids = collection.values("id")
    collection.set_values(f"{run_key}_alpha", {i: alpha.get(i) for i in ids}, key_field="id")
    heat = {i: fo.Heatmap(map=m, range=[0, 100]) for i, m in result.disagreement.items()}
    if heat:
        collection.set_values(f"{run_key}_disagreement", heat, key_field="id")
    prob = {i: fo.Heatmap(map=m, range=[0, 100]) for i, m in result.probability.items()}
    if prob:
        collection.set_values(f"{run_key}_probability", prob, key_field="id")
    if result.consensus:
        masks = {i: fo.Segmentation(mask=m) for i, m in result.consensus.items()}
        collection.set_values(f"{run_key}_consensus", masks, key_field="id")


def _card(res: MaskResult, key: str) -> tuple:
    fmt = lambda x: "none (no pixel holds two values)" if x is None else x  # noqa: E731
    rows = [("α over all pixels", fmt(res.alpha))]
    rows += [(f"α {name}", fmt(res.alpha_per_class.get(k))) for k, name in res.classes.items()]
    return "KaLOS: semantic masks", rows, f"Sort the grid by {key}_alpha; the consensus is {key}_consensus."


RUN = MeasureRun(
    "masks", "semantic masks", DEFAULT_KEY, ("classmap",), owned_paths=owned, write=_write, read=_read,
    check=_check, extras=("mask_fields",), source=mask_raters, error_param=lambda source: "mask_fields",
    two_raters=False, stored_source=_stored,
    app=Offered(
        "KaLOS semantic masks", "compute_mask_agreement", "KaLOS: semantic masks",
        "Krippendorff's α over the pixels of one Segmentation field per rater, Dice and boundary measures per "
        "class and rater pair, and a STAPLE consensus mask",
        key_help="writes <key>_alpha (per sample), <key>_consensus (a Segmentation) and <key>_disagreement (a "
                 "Heatmap), deleted with the run",
        operator_class="masks:ComputeMaskAgreement", panels=("masks:MaskAgreementPanel",), card=_card,
        notice=lambda res, key: f"KaLOS semantic masks {key!r}: {len(res.per_image)} samples"))


def mask_steps(collection, **params):
    """:func:`mask_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def mask_run(collection, progress=None, **params) -> MaskResult:
    """The masks measure on ``collection``: ``mask_fields`` (one Segmentation field per rater),
    ``run_key``, ``overwrite`` and the parameters of :class:`kalos_core.masks.MaskConfig`."""
    return measure_run(RUN, collection, progress, **params)


def disputed_view(dataset, run_key: str, cls: str, current=None):
    """The samples where class ``cls`` (its index, as text) has α below 1, lowest α first (the
    user's sort, where the App has one, instead); only the run's mask fields and its own shown."""
    res = run_store.load_results(dataset, run_key, "kalos_masks")
    rows = sorted((row["alpha_per_class"][cls], row["image"]) for row in res.get("per_image") or []
                  if row.get("alpha_per_class", {}).get(cls) is not None and row["alpha_per_class"][cls] < 1)
    cfg = dataset.get_run_info(run_key).config
    fields = [*(getattr(cfg, "mask_fields", None) or []), *owned(None, run_key)]
    return finish(dataset.select([i for _, i in rows], ordered=True), dataset, fields, current)
