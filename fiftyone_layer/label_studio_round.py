"""A second round in Label Studio: the review queue out to the raters, every rater's work back.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr
    lsr.send_review_to_label_studio(dataset, "kalos_review", "round2", url, api_key)   # tag_for_review's view
    # ... the raters annotate in Label Studio ...
    lsr.load_label_studio_round(dataset, "round2", prefix="round2", rater_names={"ann@x.org": "r1"})
    # compute_agreement on the round2_* fields, run key "round2", on the saved view "round2_samples"; then
    lsr.compare_rounds(dataset, "kalos", "round2")

Sending uploads the view's images through FiftyOne's annotation API (``backend="labelstudio"``) into
a new field, so no rater sees anyone's labels, and lets ``raters_per_task`` annotators label each task.
Loading writes each annotator's annotations as the field ``<prefix>_<rater>`` (rater = the user's
email, or its name in ``rater_names``) on the samples sent, labels carrying ``rater_id``; each sample's
``rater_list`` gets the round-2 raters who annotated it (a skipped task or a task the rater never
opened: *not assigned*); the saved view ``<prefix>_samples`` holds the round's samples, where its
agreement run is computed. Never written over: a field that exists, or a round-1 rater of a sample who
has no round-2 annotation of it while named the same (that would read as "drew nothing").
"""

from __future__ import annotations

import fiftyone as fo

from .errors import SetupError
from .imports import declare_label_fields, field_names, one_label_type
from .label_studio_api import fetch_round, send_samples
from .names import FIELD_NAME_RE
from .paired_alpha import paired_alpha
from .rawdocs import LIST_NAMES

DEFAULT_URL = "http://localhost:8080"
#: the annotation run's field: FiftyOne's own, never filled (the rounds are read per annotator)
UPLOAD_SUFFIX = "_ls_upload"


def review_classes(dataset) -> list[str]:
    """The classes of the dataset's imported box rater fields: what round 2 may draw."""
    fields = [f for f in (dataset.info.get("kalos_import") or {}).get("rater_fields", {})
              if dataset.has_sample_field(f) and dataset.get_field(f).document_type is fo.Detections]
    return sorted({c for f in fields for c in dataset.distinct(f"{f}.detections.label")})


def send_review_to_label_studio(dataset, view_name: str, anno_key: str, url: str, api_key: str, classes=None,
                                raters_per_task: int = 2, project_name=None):
    """Send the saved view ``view_name`` (e.g. ``tag_for_review``'s) to Label Studio as annotation run
    ``anno_key``; ``classes`` default: those of the imported rater fields. Returns FiftyOne's results."""
    if view_name not in dataset.list_saved_views():
        raise SetupError(f"no saved view {view_name!r} on {dataset.name}; run 'KaLOS: tag for review' first "
                         f"(saved views: {dataset.list_saved_views() or 'none'})", "view_name")
    view = dataset.load_saved_view(view_name).select_fields()   # the images only: nobody's labels
    return send_samples(view, anno_key, url, api_key, classes or review_classes(dataset), anno_key + UPLOAD_SUFFIX,
                        raters_per_task, project_name or f"{dataset.name} {anno_key}")


def free_round_key(dataset) -> str:
    """The first of ``round2``, ``round3``, ... that names no annotation run and no upload field."""
    n = 2
    while f"round{n}" in dataset.list_annotation_runs() or dataset.has_sample_field(f"round{n}{UPLOAD_SUFFIX}"):
        n += 1
    return f"round{n}"


def round_view_name(prefix: str) -> str:
    """The saved view of a loaded round's samples: its agreement run runs on it (elsewhere the round's
    raters are assigned through ``rater_list`` and their missing fields would read "drew nothing")."""
    return f"{prefix}_samples"


def _assigned_without_labels(lists: dict, per_rater: dict) -> str | None:
    for sid, assigned in lists.items():
        for rater, images in per_rater.items():
            if assigned and rater in assigned and sid not in images:
                return (f"sample {sid}: {rater!r} is in its rater_list but has no round-2 annotation of it, so the "
                        "round-2 run would read 'drew nothing'; give round-2 raters their own names (rater_names)")
    return None


def load_label_studio_round(dataset, anno_key: str, prefix: str = "round2", rater_names=None, url=None,
                            api_key=None) -> dict:
    """Every annotator's annotations of annotation run ``anno_key`` as ``<prefix>_<rater>`` fields (see
    the module doc); ``url`` default: the one the round was sent to; ``api_key`` default: FiftyOne's
    (``FIFTYONE_LABELSTUDIO_API_KEY``), else the send's in this process. Returns ``{"fields": {field:
    rater}, "samples", "labels", "tasks", "left_out", "view"}``."""
    if not isinstance(prefix, str) or not FIELD_NAME_RE.match(prefix):
        raise SetupError(f"prefix must start with a letter and hold only letters, digits and _: {prefix!r}", "prefix")
    per_rater, left, counts = fetch_round(dataset, anno_key, rater_names, url, api_key)
    if not per_rater:
        raise SetupError(f"nobody has annotated the {counts['tasks']} tasks of {anno_key!r} yet", "anno_key")
    cls = one_label_type(per_rater)
    plan = field_names(dataset.info, prefix, ["labels"], "rater_fields", list(per_rater))["labels"]
    taken = sorted(f for f in plan.values() if dataset.has_sample_field(f))
    if taken:
        raise SetupError(f"field(s) {', '.join(taken)} exist; loading never writes over a field: choose another "
                         "prefix", "prefix")
    view_name = round_view_name(prefix)
    if view_name in dataset.list_saved_views():
        raise SetupError(f"saved view {view_name!r} exists; choose another prefix", "prefix")
    ids = list(dict.fromkeys(sid for images in per_rater.values() for sid in images))
    lists = dict(zip(ids, dataset.select(ids, ordered=True).values("rater_list"))) \
        if dataset.has_sample_field("rater_list") else {}
    problem = _assigned_without_labels(lists, per_rater)
    if problem:
        raise SetupError(problem, "rater_names")
    declare_label_fields(dataset, {f: cls for f in plan.values()})
    n_labels = 0
    for rater, field in plan.items():
        values = {}
        for sid, im in per_rater[rater].items():
            labels = getattr(im.labels, LIST_NAMES[cls], None) or []
            for label in labels:
                label["rater_id"] = rater
            values[sid], n_labels = cls(**{LIST_NAMES[cls]: labels}), n_labels + len(labels)
        dataset.set_values(field, values, key_field="id")
    grown = {sid: old + [r for r in per_rater if sid in per_rater[r] and r not in old]
             for sid, old in lists.items() if old is not None}
    if grown:
        dataset.set_values("rater_list", grown, key_field="id")
    dataset.add_dynamic_sample_fields(fields=list(plan.values()))
    dataset.info.setdefault("kalos_import", {}).setdefault("rater_fields", {}).update(
        {f: r for r, f in plan.items()})
    dataset.info.setdefault("kalos_rounds", {})[anno_key] = {"fields": sorted(plan.values()), "left_out": left,
                                                             "view": view_name}
    dataset.save()
    dataset.save_view(view_name, dataset.select(ids), description=f"round {anno_key!r} from Label Studio: run "
                      f"agreement on this view ({', '.join(sorted(plan.values()))})")
    return {"fields": {f: r for r, f in plan.items()}, "samples": len(ids), "labels": n_labels,
            "tasks": counts["tasks"], "left_out": left, "view": view_name}


def compare_rounds(dataset, first: str, second: str) -> dict:
    """Per-image α of two agreement runs on the samples both scored: ``{"samples", "mean_first",
    "mean_second", "improved", "worsened", "changed", "per_sample": {sample id: (α first, α second)}, ...}``
    (:func:`..fiftyone_layer.paired_alpha.paired_alpha`, the Overview's comparison too)."""
    fields = [f"{first}_alpha", f"{second}_alpha"]
    for key, f in zip((first, second), fields):
        if not dataset.has_sample_field(f):
            raise SetupError(f"no per-image α of run {key!r} (field {f}); run 'KaLOS: compute agreement' with run "
                             f"key {key!r}")
    return paired_alpha(dataset, *fields)
