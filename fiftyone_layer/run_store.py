"""The one run store: every kind of KaLOS run (agreement, calibration, convergence, noise-aware)
is registered, listed, described, loaded and deleted here.

A run is a FiftyOne custom run: ``config.method`` names its kind (:func:`kinds`), the config
carries what the run was set up with plus ``fields`` (the sample / label field paths it wrote)
and ``views`` (the saved views it recorded making, :func:`record_view`); its results are a plain
dict (with ``review_tags``, the tags it recorded adding, :func:`record_tags`). Operators write runs through
:func:`save_run`; panels read them through :func:`runs_of` and :func:`load_results` (via
``panels/runs.py``, which imports this module). Nothing here reads or writes labels.

A new kind of run comes with a measure's FiftyOne side (:mod:`.registry`).
"""

from __future__ import annotations

import re

from kalos_core.conventions import conventions_of, with_conventions
from kalos_core.measure import get_measure

from . import registry, status_colors
from .errors import SetupError

#: the run kind of agreement runs, as the engine's declaration names it
AGREEMENT = get_measure("agreement").method

RUN_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_KEY_LENGTH = 64


def kinds() -> dict:
    """``method -> Offered`` of every KaLOS run kind (:func:`.registry.kinds`: one per measure's
    FiftyOne side); the marker, saved views and names of a kind come from its declaration."""
    return registry.kinds()


def kind_name(method: str) -> str:
    kind = kinds().get(method)
    return kind.kind_name if kind else repr(method)


# -- keys --------------------------------------------------------------------------------------

def check_key_name(run_key) -> None:
    """A run key is a plain name of at most :data:`MAX_KEY_LENGTH` characters."""
    if not isinstance(run_key, str) or not RUN_KEY_RE.match(run_key):
        raise SetupError("run key must start with a letter or _ and hold only letters, digits and _", "run_key")
    if len(run_key) > MAX_KEY_LENGTH:
        raise SetupError(f"run key is {len(run_key)} characters long; at most {MAX_KEY_LENGTH}", "run_key")


def run_method(dataset, run_key) -> str | None:
    """The method of the stored run ``run_key`` (None when there is none)."""
    if not isinstance(run_key, str) or run_key not in dataset.list_runs():
        return None
    return getattr(dataset.get_run_info(run_key).config, "method", None)


def validate_key(collection, run_key, method: str, overwrite: bool = True) -> None:
    """A run key must be a plain, short name; it must not belong to another kind of run nor clash
    with a field the plugin did not write (the kind's marker); an existing run of the same kind
    is replaced only with ``overwrite`` (a :class:`SetupError` on ``overwrite`` otherwise)."""
    check_key_name(run_key)
    dataset = collection._dataset
    found = run_method(dataset, run_key)
    kind = kinds()[method]
    if found is not None and found != method:
        raise SetupError(f"run key {run_key!r} belongs to another kind of run (a {kind_name(found)} run, not a "
                         f"{kind.kind_name} run); choose another run key", "run_key")
    marker = kind.marker(run_key) if kind.marker else None
    if found is None and marker and dataset.has_sample_field(marker):
        raise SetupError(f"field {marker} exists and was not written by a KaLOS run; choose another run key",
                         "run_key")
    if found is not None and not overwrite:
        raise SetupError(f"a {kind.kind_name} run {run_key!r} exists; confirm overwriting it or choose another "
                         "run key", "overwrite")


def unused_key(dataset, base: str, method: str) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first key no run, marker field or owned view
    uses (what the forms propose, so nothing is replaced by default)."""
    kind, runs, k, key = kinds()[method], set(dataset.list_runs()), 1, base
    while key in runs or (kind.marker and dataset.has_sample_field(kind.marker(key))) or any(
            dataset.has_saved_view(v) for v in (kind.views(key) if kind.views else ())):
        k += 1
        key = f"{base}_{k}"
    return key


# -- listing and reading ---------------------------------------------------------------------------

def runs_of(dataset, method: str) -> list[str]:
    """Keys of the dataset's runs of ``method``, oldest first."""
    infos = []
    for key in dataset.list_runs():
        info = dataset.get_run_info(key)
        if getattr(info.config, "method", None) == method:
            infos.append((info.timestamp, key))
    return [k for _, k in sorted(infos, key=lambda t: (t[0] is None, t[0], t[1]))]


def get_run(dataset, run_key, method: str):
    """The run info of the ``method`` run ``run_key``; :class:`SetupError` when there is none."""
    found = run_method(dataset, run_key)
    name = kind_name(method)
    if found is None:
        known = ", ".join(runs_of(dataset, method)) or "none"
        raise SetupError(f"no run {run_key!r} on dataset {dataset.name!r} ({name} runs: {known})", "run_key")
    if found != method:
        raise SetupError(f"run {run_key!r} is not a {name} run", "run_key")
    return dataset.get_run_info(run_key)


def load_results(dataset, run_key: str, method: str | None = None) -> dict:
    """A run's stored results as a plain dict (FiftyOne caches them on the dataset); with
    ``method``, :class:`SetupError` unless the run is of that kind."""
    if method is not None:
        get_run(dataset, run_key, method)
    results = dataset.load_run_results(run_key, load_view=False)
    return {k: v for k, v in vars(results).items() if not k.startswith("_")}


def run_conventions(dataset, run_key: str) -> dict[str, str]:
    """The ``{key: phrase}`` conventions of a stored run's numbers: as stored with it, else (a run
    stored before they were) those of its kind."""
    results = load_results(dataset, run_key)
    return results.get("conventions") or conventions_of(run_method(dataset, run_key) or "", results)


def describe_run(dataset, run_key) -> str | None:
    """One line about a stored run (kind, label type, raters, threshold, date); None when there is none."""
    if run_method(dataset, run_key) is None:
        return None
    info = dataset.get_run_info(run_key)
    cfg = info.config
    raters = list((getattr(cfg, "raters", None) or {}).values()) or list(getattr(cfg, "rater_fields", None) or [])
    where = (f"field {cfg.label_field} (rater attribute {cfg.rater_attribute})"
             if getattr(cfg, "rater_attribute", None) else f"raters {', '.join(map(str, raters)) or '?'}")
    when = info.timestamp.strftime("%Y-%m-%d %H:%M UTC") if getattr(info, "timestamp", None) else "unknown date"
    known = kinds()
    kind = "agreement" if cfg.method == AGREEMENT else known[cfg.method].kind_name.removeprefix(
        "KaLOS ") if cfg.method in known else cfg.method
    threshold = getattr(cfg, "threshold", None)
    thr = f", threshold {threshold:g}" if isinstance(threshold, (int, float)) else ""
    return f"{kind} run on {getattr(cfg, 'label_type', '?')} labels, {where}{thr}, computed {when}"


def described(dataset, method: str):
    """``key -> description`` of the stored ``method`` run under a key (None when there is none):
    what a form's overwrite checkbox says it replaces."""
    return lambda key: describe_run(dataset, key) if run_method(dataset, key) == method else None


def owned(dataset, run_key: str) -> tuple[list[str], list[str]]:
    """``(field paths, saved views)`` the stored run ``run_key`` owns: those its config recorded
    (views: those that still exist). A saved view that merely has a name a run could give is
    never owned: it may be the user's."""
    cfg = dataset.get_run_info(run_key).config
    views = list(getattr(cfg, "views", None) or [])
    return list(getattr(cfg, "fields", None) or []), [v for v in dict.fromkeys(views) if dataset.has_saved_view(v)]


def written_paths(dataset) -> set[str]:
    """Every field path the dataset's KaLOS runs wrote (what :func:`owned` records, over all runs)."""
    return {p for key in dataset.list_runs() if run_method(dataset, key) for p in owned(dataset, key)[0]}


def check_view_free(dataset, run_key: str, name: str, param: str = "view_name") -> None:
    """Refuse (:class:`SetupError` on ``param``) a saved view ``name`` that exists and that the
    stored run ``run_key`` did not record having created: saving would replace the user's view."""
    mine = run_method(dataset, run_key) is not None and name in owned(dataset, run_key)[1]
    if dataset.has_saved_view(name) and not mine:
        raise SetupError(f"saved view {name!r} exists and was not made by KaLOS run {run_key!r}; choose "
                         "another name or delete that view first", param)


def record_view(dataset, run_key: str, name: str) -> None:
    """Record in the run's config that it created saved view ``name`` (deleted with the run)."""
    cfg = dataset.get_run_info(run_key).config
    views = list(getattr(cfg, "views", None) or [])
    if name not in views:
        cfg.views = views + [name]
        dataset.update_run_config(run_key, cfg)


def record_tags(dataset, run_key: str, tag: str, samples, labels: dict) -> None:
    """Record in the run's results that it added ``tag`` to the sample ids ``samples`` and to the
    label ids ``labels`` (field -> ids): only those that did not carry the tag before, so that
    :func:`delete_run` takes it off exactly them."""
    results = load_results(dataset, run_key)
    records = list(results.get("review_tags") or [])
    records.append({"tag": tag, "samples": [str(i) for i in samples],
                    "labels": {f: [str(i) for i in ids] for f, ids in labels.items() if ids}})
    results["review_tags"] = records
    dataset.save_run_results(run_key, dataset.init_run_results(run_key, **results), overwrite=True)


def recorded_tags(dataset, run_key: str) -> list[str]:
    """The tags the run recorded adding (deleting the run takes them off what it tagged)."""
    return list(dict.fromkeys(r["tag"] for r in load_results(dataset, run_key).get("review_tags") or []))


def _untag(dataset, run_key: str) -> None:
    """Take the tags :func:`record_tags` recorded off the samples and labels the run tagged."""
    for rec in load_results(dataset, run_key).get("review_tags") or []:
        if rec.get("samples"):
            dataset.select(rec["samples"]).untag_samples(rec["tag"])
        for f, ids in (rec.get("labels") or {}).items():
            if ids and dataset.get_field(f) is not None:
                dataset.select_labels(ids=ids, fields=f).untag_labels(rec["tag"], label_fields=f)


# -- writing and deleting --------------------------------------------------------------------------

def clear_fields(dataset, paths) -> None:
    """Delete fields a run wrote, in one request per level (samples, video frames ``frames.<field>``);
    missing paths are ignored and undeclared (dynamic) label attributes are still unset."""
    frames = [p[len("frames."):] for p in paths if p.startswith("frames.")]
    samples = [p for p in paths if not p.startswith("frames.")]
    if samples:
        dataset.delete_sample_fields(samples, error_level=2)
    if frames and dataset.media_type == "video":
        dataset.delete_frame_fields(frames, error_level=2)


def save_run(collection, run_key: str, method: str, results: dict, fields=(), views=(), **config) -> None:
    """Register ``run_key`` as a ``method`` run on ``collection`` (its view is stored with it) with
    ``config`` (plain values), the ``fields`` / ``views`` it owns, and ``results`` (a plain dict).

    A stored run under ``run_key`` is replaced (its config and results; delete it first with
    :func:`delete_run` to drop what it owned)."""
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        dataset.delete_run(run_key)
    run_config = collection.init_run(method=method, fields=list(fields), views=list(views), **config)
    collection.register_run(run_key, run_config, overwrite=True, cleanup=False)
    results = with_conventions(method, results)   # the units and conventions of its numbers, for the panels
    dataset.save_run_results(run_key, dataset.init_run_results(run_key, **results), overwrite=True)


def check_deletable(dataset, run_key, method: str | None = None) -> None:
    """:class:`SetupError` unless ``run_key`` is a KaLOS run (of kind ``method`` when given): another
    plugin's run, FiftyOne's own, or no run at all is never KaLOS's to delete."""
    if method is not None:
        get_run(dataset, run_key, method)
    elif run_method(dataset, run_key) not in kinds():
        known = ", ".join(k for m in kinds() for k in runs_of(dataset, m)) or "none"
        raise SetupError(f"{run_key!r} is not a KaLOS run on dataset {dataset.name!r}, so KaLOS does not delete it "
                         f"(KaLOS runs: {known})", "run_key")


def delete_run(dataset, run_key: str, method: str | None = None) -> list[str]:
    """Remove a run, exactly the fields it wrote, the saved views it recorded creating and the
    tags it recorded adding (:func:`record_tags`); returns the field paths. With ``method``,
    :class:`SetupError` unless the run is of that kind."""
    check_deletable(dataset, run_key, method)
    paths, views = owned(dataset, run_key)
    _untag(dataset, run_key)
    agreement = run_method(dataset, run_key) == AGREEMENT
    clear_fields(dataset, paths)
    status_colors.forget_fields(dataset, paths)
    for v in views:
        dataset.delete_saved_view(v)
    dataset.delete_run(run_key)
    if agreement:  # its status colours go to the newest agreement run left on each field, or go
        remaining = {}
        for key in runs_of(dataset, AGREEMENT):
            cfg = dataset.get_run_info(key).config
            fields = list(getattr(cfg, "rater_fields", None) or [cfg.label_field])
            remaining.update(dict.fromkeys(fields + list(getattr(cfg, "model_fields", None) or []), key))
        status_colors.forget_run(dataset, run_key, remaining)
    return paths


def _count(dataset, path: str) -> int:
    """Values at ``path`` (0 where its root field does not exist, e.g. a new frame field)."""
    try:
        return dataset.count(path)
    except ValueError:
        return 0


def check_free_paths(collection, run_key: str, paths, param: str = "run_key") -> None:
    """Refuse when a field a run under ``run_key`` would write exists (or has values) and the
    stored run ``run_key`` did not write it: the user's data would be overwritten, and later
    deleted with the run."""
    dataset = collection._dataset
    mine = set(owned(dataset, run_key)[0]) if run_method(dataset, run_key) else set()
    for path in paths:
        if path not in mine and (dataset.get_field(path) is not None or ("." in path and _count(dataset, path) > 0)):
            raise SetupError(f"field {path!r} exists and no KaLOS run under {run_key!r} wrote it; "
                             "choose another run key", param)
