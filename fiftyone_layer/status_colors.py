"""Agreement statuses in the App: label colours (FiftyOne's own colour scheme) and status view names.

An agreement run writes ``<run_key>_status`` on every rater label (``agreed``,
``class_disagreement``, ``unmatched``; fiftyone_layer/writeback.py). :func:`show_statuses` adds
one entry per rater field to ``dataset.app_config.color_scheme.fields``::

    {"path": field, "colorByAttribute": "<run_key>_status",
     "valueColors": [{"value": "agreed", "color": green}, ... orange, ... red]}

so disagreement is visible at a glance in the grid and the sample view. An existing entry of a
rater field keeps its sidebar colour (``fieldColor``), and the whole entry as it was before
KaLOS first touched the field (or "none") is kept in ``dataset.info`` (:data:`_ENTRIES_KEY`)
and put back exactly when the field's last status colour goes. FiftyOne applies per-attribute
colours only when the whole scheme colours by value (there is no per-field mode), so
``color_by`` is set to ``"value"`` (what it was is remembered in ``dataset.info``); every other
label field is then pinned to one colour (its ``fieldColor`` if it has one), so that polygons,
a consensus or a model are never drawn in per-class colours that read like statuses. When the
last status entry goes, the mode and each pinned field's own entry come back; entries the user
changed meanwhile are left as they are. :func:`forget_run` (called when a run is deleted)
points a field's entry at another agreement run on that field, or removes it.

Colour by rater instead (:func:`show_raters`, the ``set_label_colors`` operator): each rater gets a
colour of its own (:data:`RATER_COLORS`, colour-blind safe), every label of a rater field drawn in
it (an entry pinned like the other label fields, marked by :data:`RATER_ATTR`), or, where the raters
share one field (``label_field`` + ``rater_attribute``), the labels coloured by that attribute's value.
The scheme stays "by value" so the tiles' α bubbles keep their one colour scale. The choice is kept in
``dataset.info`` (:data:`MODE_KEY`): later agreement runs colour their fields the same way, and
:func:`restore` puts back the user's scheme as it was before KaLOS and leaves it alone from then on.
No label is ever written for a colour: the pins match an attribute no label has.
"""

from __future__ import annotations

import colorsys
import math

import fiftyone as fo

from kalos_core.reliability import STATUS, interpret

#: a label's statuses (:data:`kalos_core.reliability.STATUS`) agreed first, as the App lists them
STATUSES = STATUS[::-1]
#: the statuses that mean "this label does not agree"
DISAGREEMENT = STATUSES[1:]
#: status -> colour (agreed green, class disagreement orange, unmatched red), each far from every
#: colour of FiftyOne's default pool, so a status colour never reads as a plain class colour
STATUS_COLORS = dict(zip(STATUSES, ("#2ecc40", "#ffa500", "#ff3b30")))
_INFO_KEY = "kalos_color_by_before"   # dataset.info: the scheme's color_by before KaLOS set "value"
_ENTRIES_KEY = "kalos_color_fields_before"  # dataset.info: path -> the user's entry before KaLOS (or None)
_PIN_ATTR = "kalos_one_colour"   # an attribute no label has: pins a field to one colour (see _settle)
#: α band -> the colour of a grid tile's α bubble: the bands' colours of the panels
#: (panels.common.BAND_COLORS), so a tile's α reads on the same scale as the Overview's bars
ALPHA_BAND_COLORS = {"systematic disagreement": "#d62728", "weak": "#ff7f0e", "moderate": "#e6be1e",
                     "substantial": "#8cc850", "near-perfect": "#2ca02c"}
#: one colour per rater: Okabe & Ito's palette (black left out: it vanishes on dark images), told apart
#: under the common colour-vision deficiencies, then Paul Tol's "muted" colours not already near one of
#: them; a twelfth rater starts the list again
RATER_COLORS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
                "#332288", "#882255", "#999933", "#DDDDDD")
RATER_ATTR = "kalos_rater_colour"   # an attribute no label has: marks (and pins) a field coloured by rater
MODE_KEY = "kalos_label_colors"     # dataset.info: "status" (the default), "rater" or "none" (the user's)
MODES = {"status": "agreement status (agreed green, class disagreement orange, unmatched red)",
         "rater": "rater (each rater a colour of its own, colour-blind safe)",
         "none": "your own colours (the scheme as it was before KaLOS coloured labels)"}
#: the most distinct shown α values given a colour (three decimals: at most 2,001 in [-1, 1])
MAX_ALPHA_VALUES = 5_000


def app_number(v: float) -> str:
    """A float as a grid tile's bubble shows it, which is what the App matches ``valueColors`` against
    (FiftyOne 1.22: ``toFixed(3)``, ``toFixed(6)`` below 0.001, then ``toLocaleString``: at most three
    decimals, trailing zeros dropped; 1.0 -> "1", 0.51234 -> "0.512")."""
    v = float(v)
    if v.is_integer():
        return str(int(v))
    x = float(f"{v:.3f}" if v >= 0.001 else f"{v:.6f}")
    text = f"{x:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def show_alpha_colors(dataset, run_key: str) -> None:
    """Colour the grid's ``<run_key>_alpha`` bubbles by α band, one scale for every tile (the App
    colours a number by value, each value a colour of its own otherwise): one ``valueColors`` entry
    per α as a bubble shows it (:func:`app_number`, in the band of that shown value), up to
    :data:`MAX_ALPHA_VALUES` (beyond that the App's own colours stay)."""
    path = f"{run_key}_alpha"
    values = {float(v) for v in dataset.values(path) if v is not None and math.isfinite(v)}
    scheme = _scheme(dataset)
    entries = [e for e in scheme.fields or [] if e.get("path") != path]
    shown = {app_number(v): ALPHA_BAND_COLORS[interpret(float(app_number(v)))] for v in sorted(values)}
    if shown and len(shown) <= MAX_ALPHA_VALUES:
        entries.append({"path": path, "valueColors": [{"value": k, "color": c} for k, c in shown.items()]})
    scheme.fields = entries
    dataset.app_config.color_scheme = scheme
    dataset.save()


def status_attribute(run_key: str) -> str:
    return f"{run_key}_status"


def _entry(path: str, run_key: str, old: dict | None) -> dict:
    entry = {k: v for k, v in (old or {}).items() if k in ("fieldColor", "maskTargetsColors")}
    entry.update(path=path, colorByAttribute=status_attribute(run_key),
                 valueColors=[{"value": s, "color": c} for s, c in STATUS_COLORS.items()])
    return entry


def _is_status_entry(entry: dict) -> bool:
    values = {v.get("value") for v in entry.get("valueColors") or []}
    return str(entry.get("colorByAttribute") or "").endswith("_status") and values == set(STATUSES)


def _is_rater_entry(entry: dict) -> bool:
    """An entry of :func:`show_raters`: pinned by :data:`RATER_ATTR`, or (raters sharing a field)
    carrying a value :data:`RATER_ATTR` no rater has (the App's scheme takes no key of KaLOS's own)."""
    return entry.get("colorByAttribute") == RATER_ATTR or any(
        v.get("value") == RATER_ATTR for v in entry.get("valueColors") or [])


def _is_kalos_entry(entry: dict) -> bool:
    """An entry KaLOS wrote for a run's field: its status colours or its rater colours."""
    return _is_status_entry(entry) or _is_rater_entry(entry)


def mode(dataset) -> str:
    """How KaLOS colours the rater fields of its runs (:data:`MODES`)."""
    return dataset.info.get(MODE_KEY) or "status"


def rater_colors(names) -> dict:
    """Rater name -> colour: :data:`RATER_COLORS` in the order of the sorted names."""
    names = sorted(dict.fromkeys(map(str, names)))
    return {n: RATER_COLORS[i % len(RATER_COLORS)] for i, n in enumerate(names)}


def _scheme(dataset):
    scheme = dataset.app_config.color_scheme
    if scheme is None:
        scheme = fo.ColorScheme()
    return scheme


def show_statuses(dataset, run_key: str, fields) -> None:
    """Colour the labels of ``fields`` by ``<run_key>_status`` (adds/replaces those fields' entries only)."""
    scheme = _scheme(dataset)
    fields = list(fields)
    old = {e.get("path"): e for e in scheme.fields or []}
    before = dict(dataset.info.get(_ENTRIES_KEY) or {})
    _remember(before, old, fields)
    scheme.fields = [e for e in scheme.fields or [] if e.get("path") not in fields] + [
        _entry(f, run_key, before.get(f) if _is_rater_entry(old.get(f) or {}) else old.get(f)) for f in fields]
    _settle(dataset, scheme, before)


def _remember(before: dict, old: dict, fields) -> None:
    """The user's entry of each of ``fields`` (or None), unless KaLOS's own is there now."""
    for f in fields:
        if f not in before and not (f in old and (_is_kalos_entry(old[f]) or _is_pinned(old[f]))):
            before[f] = dict(old[f]) if f in old else None


def show_raters(dataset, runs) -> None:
    """Colour the labels of the agreement ``runs`` by rater: ``runs`` holds one ``(fields, raters,
    rater_attribute)`` per run (``raters``: field -> rater name; ``rater_attribute``: the attribute
    naming the rater where the raters share the one field ``fields[0]``). A rater has one colour
    (:func:`rater_colors` over every rater named), the same in each field it drew."""
    names, per_field = [], {}
    for fields, raters, attribute in runs:
        if attribute:
            values = [str(v) for v in dataset.distinct(_attribute_path(dataset, fields[0], attribute))]
            names += values
            per_field[fields[0]] = (attribute, values)
        else:
            for f in fields:
                names.append(str((raters or {}).get(f) or f))
                per_field[f] = (None, [names[-1]])
    colours = rater_colors(names)
    scheme = _scheme(dataset)
    old = {e.get("path"): e for e in scheme.fields or []}
    before = dict(dataset.info.get(_ENTRIES_KEY) or {})
    _remember(before, old, per_field)
    entries = [e for e in scheme.fields or [] if e.get("path") not in per_field]
    for f, (attribute, values) in per_field.items():
        if attribute:
            entries.append({"path": f, "colorByAttribute": attribute, "valueColors": [
                {"value": v, "color": colours[v]} for v in values] + [{"value": RATER_ATTR, "color": "#000000"}]})
        else:
            colour = colours[values[0]]
            entries.append({"path": f, "fieldColor": colour, "colorByAttribute": RATER_ATTR,
                            "valueColors": [{"value": "none", "color": colour}]})
    scheme.fields = entries
    _settle(dataset, scheme, before)


def _attribute_path(dataset, field: str, attribute: str) -> str:
    _, path = dataset._get_label_field_path(field, attribute)
    return path


def restore(dataset) -> None:
    """Every field KaLOS coloured (by status, by rater, pinned) back to the user's entry as it was
    (or none), the scheme's mode too; the α bubbles' entries (KaLOS's own fields) stay."""
    scheme = dataset.app_config.color_scheme
    before = dict(dataset.info.get(_ENTRIES_KEY) or {})
    if scheme is None:
        return
    entries = []
    for e in scheme.fields or []:
        if _is_kalos_entry(e):
            if before.get(e.get("path")) is not None:
                entries.append(before.pop(e["path"]))
        else:
            entries.append(e)
    scheme.fields = entries
    _settle(dataset, scheme, before)


def forget_run(dataset, run_key: str, remaining: dict) -> None:
    """After run ``run_key`` is deleted: each field coloured by its status is coloured by the
    agreement run ``remaining[field]`` instead (field -> run key), or loses its entry."""
    scheme = dataset.app_config.color_scheme
    if scheme is None or not scheme.fields:
        return
    attr = status_attribute(run_key)
    before = dict(dataset.info.get(_ENTRIES_KEY) or {})
    entries = []
    for e in scheme.fields:
        if e.get("path") == f"{run_key}_alpha":   # the run's α bubbles' colours go with its field
            continue
        path = e.get("path")
        if _is_rater_entry(e):   # coloured by rater: stays while a run is left on the field
            if remaining.get(path):
                entries.append(e)
                continue
        elif e.get("colorByAttribute") != attr or not _is_status_entry(e):
            entries.append(e)
            continue
        elif remaining.get(path):
            entries.append(_entry(path, remaining[path], e))
            continue
        if path in before:  # the user's entry, exactly as it was (or none)
            if before[path] is not None:
                entries.append(before[path])
            del before[path]
        elif not _is_rater_entry(e):  # no record (a run from before the record): the sidebar colour stays
            kept = {k: v for k, v in e.items() if k in ("path", "fieldColor", "maskTargetsColors")}
            if len(kept) > 1:
                entries.append(kept)
    if entries == scheme.fields:
        return
    scheme.fields = entries
    _settle(dataset, scheme, before)


def forget_fields(dataset, paths) -> None:
    """After a run's sample fields are deleted (a consensus field): their pinned entries and their
    records of the user's entries go with them (nothing of the user's was there: the run made them)."""
    gone = {p for p in paths if "." not in p and not p.endswith("_alpha")}   # α colours: forget_run's
    scheme = dataset.app_config.color_scheme
    before = dict(dataset.info.get(_ENTRIES_KEY) or {})
    entries = list((scheme.fields if scheme is not None else None) or [])
    if not gone & (set(before) | {e.get("path") for e in entries}):
        return
    for path in gone:
        before.pop(path, None)
    if scheme is None:
        dataset.info[_ENTRIES_KEY] = before
        dataset.save()
        return
    scheme.fields = [e for e in entries if e.get("path") not in gone]
    _settle(dataset, scheme, before)


def settle(dataset) -> None:
    """Keep label fields added since the last run (a consensus, a model) in one colour while
    the scheme colours by status (see :func:`_settle`)."""
    scheme = dataset.app_config.color_scheme
    if scheme is not None and any(_is_kalos_entry(e) for e in scheme.fields or []):
        _settle(dataset, scheme, dict(dataset.info.get(_ENTRIES_KEY) or {}))


def _is_pinned(entry: dict) -> bool:
    return entry.get("colorByAttribute") == _PIN_ATTR


def _quiet_pool(pool) -> list[str]:
    """The colours of ``pool`` whose hue is far (> 25 degrees) from every saturated status colour."""
    def hue(c):
        h = colorsys.rgb_to_hsv(*(int(c.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)))[0]
        return h * 360
    status = [hue(c) for c in STATUS_COLORS.values()]
    quiet = [c for c in pool if isinstance(c, str) and len(c) == 7 and c.startswith("#")
             and all(min(abs(hue(c) - h), 360 - abs(hue(c) - h)) > 25 for h in status)]
    return quiet or list(pool)


def _pin(path: str, old: dict | None, colour: str) -> dict:
    """One colour for every label of ``path`` while the scheme colours by value: a ``valueColors``
    entry for "none" of an attribute no label has (the App matches it on every label)."""
    colour = (old or {}).get("fieldColor") or colour
    return {"path": path, "fieldColor": colour, "colorByAttribute": _PIN_ATTR,
            "valueColors": [{"value": "none", "color": colour}]}


def _settle(dataset, scheme, before: dict) -> None:
    """Save ``scheme``, colouring by value while it holds a status entry. FiftyOne colours labels
    by an attribute only when the whole scheme colours by value, so when KaLOS switched it there
    every other label field is pinned to one colour (its own ``fieldColor`` if it has one), as it
    looked when colours went by field, never by class; the user's entry of each is kept in
    ``before`` and put back, with the scheme's mode, when the last status entry goes."""
    entries = list(scheme.fields or [])
    if any(_is_kalos_entry(e) for e in entries):
        if scheme.color_by != "value":
            if _INFO_KEY not in dataset.info:   # "" for none (FiftyOne does not store a None in info)
                dataset.info[_INFO_KEY] = scheme.color_by or ""
            scheme.color_by = "value"
        if _INFO_KEY in dataset.info:   # KaLOS chose "value": the other label fields stay one colour each
            pool = _quiet_pool(scheme.color_pool or fo.app_config.color_pool)
            at = {e.get("path"): k for k, e in enumerate(entries)}
            for i, path in enumerate(dataset.get_field_schema(embedded_doc_type=fo.Label)):
                e = entries[at[path]] if path in at else None
                if e is not None and (_is_kalos_entry(e) or _is_pinned(e)):
                    continue
                before.setdefault(path, None if e is None else dict(e))
                pinned = _pin(path, e, pool[i % len(pool)])
                if e is None:
                    entries.append(pinned)
                else:
                    entries[at[path]] = pinned
    else:   # each pinned field gets its own entry back, in its place
        entries = [before.get(e.get("path")) if _is_pinned(e) else e for e in entries]
        entries = [e for e in entries if e is not None]
        before = {}   # records left are of entries the user changed since: theirs now
        if _INFO_KEY in dataset.info:
            scheme.color_by = dataset.info.pop(_INFO_KEY) or None
    scheme.fields = entries
    if before:
        dataset.info[_ENTRIES_KEY] = before
    else:
        dataset.info.pop(_ENTRIES_KEY, None)
    dataset.app_config.color_scheme = scheme
    dataset.save()


def refresh_app(ctx):
    """The App operation that applies the data set's stored colour scheme to the open App (the
    session keeps the scheme it read when the data set was opened); ``ctx.ops`` style: call it
    and, in a generator, yield the result. Label fields added since the last run are settled first."""
    settle(ctx.dataset)
    scheme = ctx.dataset.app_config.color_scheme or fo.ColorScheme()
    return ctx.trigger("set_color_scheme", {"color_by": scheme.color_by or fo.app_config.color_by,
                                            "fields": list(scheme.fields or [])})


def disagreement_view_name(run_key: str, statuses=DISAGREEMENT) -> str:
    """The name of the saved view ``browse_disagreements`` stores for a run and a status choice:
    ``<run_key>_disagreements`` for the disagreements, ``<run_key>_status_<s>[_<s>]`` otherwise."""
    chosen = [s for s in STATUSES if s in statuses]
    if set(chosen) == set(DISAGREEMENT):
        return f"{run_key}_disagreements"
    return f"{run_key}_status_" + "_".join(chosen)


def status_view_names(run_key: str) -> list[str]:
    """Every name :func:`disagreement_view_name` can give (the views an agreement run owns)."""
    choices = [[s for k, s in enumerate(STATUSES) if m >> k & 1] for m in range(1, 2 ** len(STATUSES))]
    return list(dict.fromkeys(disagreement_view_name(run_key, c) for c in choices))
