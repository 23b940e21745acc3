"""Which rater fields belong to a loaded second round (:mod:`.label_studio_round` records each round's
fields and saved view in ``dataset.info["kalos_rounds"]``), read without importing the round's work."""

from __future__ import annotations


def round_fields(dataset, view_name) -> tuple[set, set]:
    """``(the fields of the round loaded as saved view view_name, the fields of every loaded round)``:
    a round's agreement form preselects only its own fields; any other form none of the rounds'."""
    rounds = (dataset.info.get("kalos_rounds") or {}).values()
    every = {f for r in rounds for f in r.get("fields", [])}
    return next((set(r.get("fields", [])) for r in rounds if view_name and r.get("view") == view_name), set()), every


def round_of(dataset, fields, first: str = "round 1") -> str:
    """The loaded round whose fields hold most of ``fields`` (its annotation key, e.g. ``round2``);
    ``first`` when none holds any (the raters' own first round)."""
    rounds = dataset.info.get("kalos_rounds") or {}
    held = {key: len(set(fields) & set(r.get("fields", []))) for key, r in rounds.items()}
    best = max(held, key=lambda k: (held[k], k), default=None)
    return best if best is not None and held[best] else first
