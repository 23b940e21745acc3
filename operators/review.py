"""Tag what needs a second look after an agreement run, and save it as a view.

::

    from operators.review import tag_for_review
    counts = tag_for_review(dataset, "kalos", tag="review", alpha_below=0.5)

Samples whose ``<run_key>_alpha`` lies below ``alpha_below`` get the sample tag; rater labels
whose ``<run_key>_status`` is ``unmatched`` / ``class_disagreement``, and labels of units the
consensus run ``<run_key>_consensus`` sent to review, get the label tag. The saved view
(``view_name``, default ``<run_key>_review``) holds the tagged samples and shows their tagged
labels only.
"""

from __future__ import annotations

from fiftyone import ViewField as F

from . import run_store
from .adapter import SetupError
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
    return view, source, name


def tag_for_review(dataset, run_key, tag="review", alpha_below=None, unmatched=True, class_disagreement=True,
                   unsupported=False, view_name=None) -> dict:
    """Tag samples and labels (see the module doc); returns counts and the saved view's name."""
    view, source, name = check_review(dataset, run_key, tag, alpha_below, unmatched, class_disagreement,
                                      unsupported, view_name)
    tag = tag.strip()
    counts = {"samples": 0, "unmatched": 0, "class_disagreement": 0, "unsupported": 0}
    if alpha_below is not None:
        low = view.match(F(f"{run_key}_alpha") < float(alpha_below))
        counts["samples"] = len(low)
        low.tag_samples(tag)
    statuses = [s for s, on in (("unmatched", unmatched), ("class_disagreement", class_disagreement)) if on]
    status_attr = f"{run_key}_status"
    label_ids: set = set()
    for f in source.fields:
        ids, status = view.values([f"{f}.{source.list_name}.id", f"{f}.{source.list_name}.{status_attr}"])
        for row_ids, row_status in zip(ids, status):
            for lid, s in zip(row_ids or [], row_status or []):
                if s in statuses:
                    counts[s] += 1
                    label_ids.add(str(lid))
    if unsupported:
        review_ids = review_label_ids(dataset, consensus_key(run_key))
        counts["unsupported"] = len(review_ids)
        label_ids |= review_ids
    if label_ids:
        view.select_labels(ids=list(label_ids), fields=source.fields).tag_labels(tag, label_fields=source.fields)
    counts["labels"] = len(label_ids)
    tagged = view.match_tags(tag).values("id")
    tagged += view.match_labels(tags=tag, fields=source.fields).values("id")
    review = view.select(list(dict.fromkeys(tagged)))
    for f in source.fields:
        review = review.filter_labels(f, F("tags").contains(tag), only_matches=False)
    dataset.save_view(name, review, overwrite=True)
    counts["view"] = name
    counts["n_view_samples"] = len(review)
    return counts
