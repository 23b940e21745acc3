"""Tag what needs a second look after an agreement run, and save it as a view.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import tag_for_review
    counts = tag_for_review(dataset, "kalos", tag="review", alpha_below=0.5)

Samples whose ``<run_key>_alpha`` lies below ``alpha_below`` get the sample tag; rater labels
whose ``<run_key>_status`` is ``unmatched`` / ``class_disagreement``, and labels of units the
consensus run ``<run_key>_consensus`` sent to review, get the label tag. The saved view
(``view_name``, default ``<run_key>_review``) holds the tagged samples and shows their tagged
labels only.

Nothing is tagged when nothing needs a look (the run found no disagreement): that is refused,
naming what was looked for. A tag the user's samples or labels carry already is refused unless
``join_tag=True`` confirms adding to it. Nothing of the user's is replaced or lost: a saved view of that name that this agreement run
did not make is refused; the view is recorded on the agreement run and so is the tagging (the
tag, and the samples and labels that did not carry it before), so that deleting the run deletes
the view and takes the tag off exactly those samples and labels (a tag the user had put there
before stays).
"""

from __future__ import annotations

import fiftyone as fo
from fiftyone import ViewField as F

from . import run_store
from .adapter import SetupError
from .measures.consensus import METHOD as CONSENSUS
from .measures.consensus import agreement_source, consensus_key, review_label_ids
from .names import FIELD_NAME_RE
from .saved_views import save_run_view


def review_view_name(run_key: str) -> str:
    return f"{run_key}_review"


def users_tag(dataset, tag: str) -> tuple[int, int]:
    """``(samples, labels)`` carrying ``tag`` that no KaLOS run recorded tagging: the user's."""
    recorded_samples, recorded_labels = set(), set()
    for key in run_store.runs_of(dataset, run_store.AGREEMENT):
        for rec in run_store.load_results(dataset, key).get("review_tags") or []:
            if rec.get("tag") == tag:
                recorded_samples.update(rec.get("samples") or [])
                recorded_labels.update(i for ids in (rec.get("labels") or {}).values() for i in ids)
    samples = dataset.match_tags(tag).values("id")
    labels = dataset.count_label_tags().get(tag, 0)
    if recorded_labels:
        labels -= dataset.select_labels(ids=list(recorded_labels)).count_label_tags().get(tag, 0)
    return len(set(samples) - recorded_samples), labels


def to_tag(view, source, run_key, alpha_below, statuses, unsupported_ids) -> dict:
    """How many samples and labels a tagging would tag (nothing written)."""
    by_field = view.aggregate([fo.CountValues(f"{f}.{source.list_name}.{run_key}_status") for f in source.fields])
    counts = {s: sum(found.get(s, 0) for found in by_field) for s in statuses}
    counts["samples"] = view.match(F(f"{run_key}_alpha") < float(alpha_below)).count() if alpha_below is not None else 0
    counts["unsupported"] = len(unsupported_ids)
    return counts


def check_review(dataset, run_key, tag, alpha_below=None, unmatched=True, class_disagreement=True,
                 unsupported=False, view_name=None, join_tag=False):
    """Every check before anything is tagged; returns ``(view, source, view name)``.

    A tag that the user's samples or labels carry already is refused unless ``join_tag``: the
    run's tags would mix with the user's (deleting the run takes the tag off only what it tagged)."""
    try:
        view, source, _ = agreement_source(dataset, run_key)
    except SetupError as e:
        raise SetupError(str(e), "run_key") from None
    if not isinstance(tag, str) or not tag.strip():
        raise SetupError("the tag name is empty: type the tag to add, e.g. 'review'", "tag")
    if alpha_below is not None and (isinstance(alpha_below, bool) or not isinstance(alpha_below, (int, float))
                                    or not -1 <= alpha_below <= 1):
        raise SetupError(f"the α level must be a number within [-1, 1], got {alpha_below!r}", "alpha_below")
    if unsupported and run_store.run_method(dataset, consensus_key(run_key)) != CONSENSUS:
        raise SetupError(f"no consensus run {consensus_key(run_key)!r}: run 'KaLOS: build consensus' first, "
                         "or leave 'units not supported by consensus' off", "unsupported")
    if alpha_below is None and not (unmatched or class_disagreement or unsupported):
        raise SetupError("choose at least one thing to tag", "alpha_below")
    name = view_name or review_view_name(run_key)
    if not FIELD_NAME_RE.match(name):
        raise SetupError(f"view name {name!r}: letters, digits and _ only, starting with a letter", "view_name")
    run_store.check_view_free(dataset, run_key, name, "view_name")
    n_samples, n_labels = users_tag(dataset, tag.strip())
    if (n_samples or n_labels) and not join_tag:
        raise SetupError(f"tag {tag.strip()!r} is already on {n_samples} sample(s) and {n_labels} label(s) that "
                         "KaLOS did not tag: choose another tag, or confirm adding to the existing tag (deleting "
                         "the run then takes it off only what the run tagged)", "tag")
    statuses = [s for s, on in (("unmatched", unmatched), ("class_disagreement", class_disagreement)) if on]
    pending = to_tag(view, source, run_key, alpha_below, statuses,
                     review_label_ids(dataset, consensus_key(run_key)) if unsupported else ())
    if not any(pending.values()):
        what = [f"no sample has α below {alpha_below:g}"] if alpha_below is not None else []
        what += [f"no label is {s.replace('_', ' ')}" for s in statuses]
        what += ["the consensus sent no unit to review"] if unsupported else []
        raise SetupError(f"nothing to tag in run {run_key!r}: {', '.join(what)} (the raters agree); nothing was "
                         "tagged and no view saved. Raise the α level to tag more samples", "alpha_below")
    return view, source, name


def tag_for_review(dataset, run_key, tag="review", alpha_below=None, unmatched=True, class_disagreement=True,
                   unsupported=False, view_name=None, join_tag=False) -> dict:
    """Tag samples and labels (see the module doc); returns counts and the saved view's name.
    ``join_tag``: confirm adding to a tag the user's samples or labels carry already."""
    view, source, name = check_review(dataset, run_key, tag, alpha_below, unmatched, class_disagreement,
                                      unsupported, view_name, join_tag)
    tag = tag.strip()
    new_samples, new_labels = [], {}
    counts = {"samples": 0, "unmatched": 0, "class_disagreement": 0, "unsupported": 0}
    if alpha_below is not None:
        low = view.match(F(f"{run_key}_alpha") < float(alpha_below))
        counts["samples"] = len(low)
        new_samples = low.match_tags(tag, bool=False).values("id")
        low.tag_samples(tag)
    statuses = [s for s, on in (("unmatched", unmatched), ("class_disagreement", class_disagreement)) if on]
    status_attr = f"{run_key}_status"
    label_ids: set = set()
    had_tag: dict = {}  # label id -> field, for labels that carry the tag already
    field_of: dict = {}
    for f in source.fields:
        ids, status, tags = view.values([f"{f}.{source.list_name}.{a}" for a in ("id", status_attr, "tags")])
        for row_ids, row_status, row_tags in zip(ids, status, tags):
            for lid, s, t in zip(row_ids or [], row_status or [], row_tags or []):
                field_of[str(lid)] = f
                if tag in (t or []):
                    had_tag[str(lid)] = f
                if s in statuses:
                    counts[s] += 1
                    label_ids.add(str(lid))
    if unsupported:
        review_ids = review_label_ids(dataset, consensus_key(run_key))
        counts["unsupported"] = len(review_ids)
        label_ids |= review_ids
    for lid in label_ids - set(had_tag):
        if lid in field_of:
            new_labels.setdefault(field_of[lid], []).append(lid)
    if label_ids:
        view.select_labels(ids=list(label_ids), fields=source.fields).tag_labels(tag, label_fields=source.fields)
    counts["labels"] = len(label_ids)
    tagged = view.match_tags(tag).values("id")
    tagged += view.match_labels(tags=tag, fields=source.fields).values("id")
    review = view.select(list(dict.fromkeys(tagged)))
    for f in source.fields:
        review = review.filter_labels(f, F("tags").contains(tag), only_matches=False)
    run_store.record_tags(dataset, run_key, tag, new_samples, new_labels)
    save_run_view(dataset, run_key, name, review, description=f"KaLOS run {run_key!r}: tagged {tag!r} for review")
    counts["view"] = name
    counts["n_view_samples"] = len(review)
    return counts
