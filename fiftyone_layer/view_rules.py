"""The click rule every KaLOS view follows (the panels' clicks and the operators' views): the
user's sort (the last sort stage of the App's current view) is kept, else the run's own order;
then only the run's fields are shown besides FiftyOne's own.
"""

from __future__ import annotations

import fiftyone.core.stages as fos

#: view stages that order samples; the last one in the App's view is the user's sort
SORT_STAGES = (fos.SortBy, fos.SortBySimilarity)


def user_sort(current) -> list:
    """The sort stage of the App's current view (``[]`` when it has none, or no view)."""
    stages = [s for s in (getattr(current, "_stages", None) or []) if isinstance(s, SORT_STAGES)]
    return stages[-1:]


def finish(view, dataset, fields, current=None, sort_field: str | None = None):
    """The click rule (module docstring): the user's sort (``current``'s), else ``sort_field``
    ascending; then only ``fields`` (those the dataset has) besides FiftyOne's own."""
    stages = user_sort(current)
    if stages:
        for stage in stages:
            view = view.add_stage(stage)
    elif sort_field and dataset.has_field(sort_field):
        view = view.sort_by(sort_field)
    return view.select_fields([f for f in dict.fromkeys(fields) if dataset.has_field(f)])
