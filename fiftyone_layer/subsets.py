"""Subset definitions over samples, shared by the panels that split their numbers by them: a scalar
sample field's values (``tags`` too: a sample is in each of its tags) and the user's saved views (a
sample is in each view that holds it; views may overlap). A sample without a value is in ``(none)``.

Choices are ``field:<name>`` and ``views``; :func:`sample_values` gives ``{sample id: [subsets]}``,
the ``values`` of :func:`kalos_core.scorecard.subsets.subset_keys` with ``by="image"``.
"""

from __future__ import annotations

import math

VIEWS = "views"
NONE = "(none)"


def sample_choices(collection, skip=()) -> dict[str, str]:
    """``{choice: label}``: each scalar sample field (not ``id``, ``filepath`` nor those in ``skip``),
    ``tags``, and the saved views if there are any."""
    import fiftyone.core.fields as fof

    scalar = (fof.StringField, fof.BooleanField, fof.IntField)
    out = {f"field:{name}": f"sample field: {name}" for name, f in collection.get_field_schema().items()
           if name not in skip and (isinstance(f, scalar) and name not in ("id", "filepath") or name == "tags")}
    if collection._dataset.list_saved_views():
        out[VIEWS] = "saved views"
    return out


def sample_values(collection, choice: str) -> dict | None:
    """``{sample id: value or [values]}`` of a choice of :func:`sample_choices`; None if ``choice``
    is not one."""
    if choice.startswith("field:"):
        return dict(zip(*collection.values(["id", choice.split(":", 1)[1]])))
    if choice == VIEWS:
        ds, values = collection._dataset, {}
        for name in ds.list_saved_views():
            view = ds.load_saved_view(name)
            for sid in view.values("sample_id" if view._is_patches else "id"):
                values.setdefault(sid, []).append(name)
        return values
    return None


def subsets_of(value) -> list[str]:
    """The subsets a sample with ``value`` belongs to (as text; ``(none)`` when it has none)."""
    listed = [] if value is None else list(value) if isinstance(value, (list, tuple, set)) else [value]
    return [str(v) for v in listed] or [NONE]


def split_samples(scores: dict, values: dict) -> dict:
    """Per-sample scores split by subset: ``{subset: {"ids": [...], "mean": float | None}}`` over the
    samples of ``scores`` (``{sample id: score}``) whose score is defined (not None, not NaN), ids
    lowest score first; subsets sorted, ``(none)`` last. A partition (a scalar field) splits the
    samples: the subsets' ``n`` sum to the defined scores."""
    out: dict = {}
    for sid, a in scores.items():
        if a is None or not math.isfinite(a):
            continue
        for s in subsets_of(values.get(sid)):
            out.setdefault(s, []).append((a, sid))
    return {s: {"ids": [sid for _, sid in sorted(out[s])], "mean": sum(a for a, _ in out[s]) / len(out[s])}
            for s in sorted(out, key=lambda s: (s == NONE, s))}
