"""Which rater fields belong to a loaded second round (:mod:`.label_studio_round` records each round's
fields and saved view in ``dataset.info["kalos_rounds"]``), read without importing the round's work."""

from __future__ import annotations


def round_fields(dataset, view_name) -> tuple[set, set]:
    """``(the fields of the round loaded as saved view view_name, the fields of every loaded round)``:
    a round's agreement form preselects only its own fields; any other form none of the rounds'."""
    rounds = (dataset.info.get("kalos_rounds") or {}).values()
    every = {f for r in rounds for f in r.get("fields", [])}
    return next((set(r.get("fields", [])) for r in rounds if view_name and r.get("view") == view_name), set()), every
