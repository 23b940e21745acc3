"""Tag what needs a second look after an agreement run, and save it as a view.

::

    from fiftyone.plugins.orgs.kalos.agreement.operators.review import tag_for_review
    counts = tag_for_review(dataset, "kalos", tag="review", alpha_below=0.5)

Samples whose ``<run_key>_alpha`` lies below ``alpha_below`` get the sample tag; rater labels
whose ``<run_key>_status`` is ``unmatched`` / ``class_disagreement``, and labels of units the
consensus run ``<run_key>_consensus`` sent to review, get the label tag. The saved view
(``view_name``, default ``<run_key>_review``) holds the tagged samples and shows their tagged
labels only.

Nothing of the user's is replaced or lost: a saved view of that name that this agreement run
did not make is refused; the view is recorded on the agreement run and so is the tagging (the
tag, and the samples and labels that did not carry it before), so that deleting the run deletes
the view and takes the tag off exactly those samples and labels (a tag the user had put there
before stays).
"""

from __future__ import annotations

from fiftyone import ViewField as F

from ..fiftyone_layer import run_store
from ..fiftyone_layer.saved_views import save_run_view
from ..fiftyone_layer.adapter import SetupError
from .common import FIELD_NAME_RE
from .consensus_runs import agreement_source, consensus_key, review_label_ids
from .consensus_runs import METHOD as CONSENSUS


def review_view_name(run_key: str) -> str:
    return f"{run_key}_review"


def check_review(dataset, run_key, tag, alpha_below=None, unmatched=True, class_disagreement=True,
                 unsupported=False, view_name=None):
    """Every check before anything is tagged; returns ``(view, source, view name)``."""
    try:
        view, source, _ = agreement_source(dataset, run_key)
    except SetupError as e:
        raise SetupError(str(e), "run_key") from None
    if not isinstance(tag, str) or not tag.strip():
        raise SetupError("name the tag to add", "tag")
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
    return view, source, name


def tag_for_review(dataset, run_key, tag="review", alpha_below=None, unmatched=True, class_disagreement=True,
                   unsupported=False, view_name=None) -> dict:
    """Tag samples and labels (see the module doc); returns counts and the saved view's name."""
    view, source, name = check_review(dataset, run_key, tag, alpha_below, unmatched, class_disagreement,
                                      unsupported, view_name)
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
