"""A measure run on a FiftyOne collection, the same for every measure: check, read the labels,
run the engine's steps, write back, store the run.

A measure meets FiftyOne through one :class:`MeasureRun`: which label kinds it reads, which
label attributes it writes (``owned_paths`` and ``write``), what it reads beyond the raters'
labels (``read``), and the operator inputs that are not parameters (``extras``). Its
parameters come from the engine's declaration (:mod:`kalos_core.params`): checked there
(a bad value is a :class:`SetupError` naming the parameter), and stored whole in the run's
config, so that a panel's Recompute re-opens the form with every one of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from fiftyone import ViewField as F

from kalos_core.measure import Measure, MeasureData, get_measure
from kalos_core.params import Param, ParamError, expand_groups, groups_of, params_of, stored_form_values
from kalos_core.progress import rescale, run_steps

from . import run_store
from .adapter import RaterSource, SetupError, read_dataset, resolve_source
from .registry import Offered


# -- parameter values from a form or a Python call, checked by the measure's declaration ---------------
# A bad value, or a rule between values, is a SetupError naming the parameter (the form shows it on that
# input). Forms send lists of numbers as comma-separated text.

#: the form value of an optional choice that says "the default rule" (a stored None): a dropdown holds no None
DEFAULT_CHOICE = "default"


def value_of(p: Param, value):
    """A form or Python value for ``p``, checked (text read for list kinds); :class:`SetupError` naming it."""
    if p.kind == "choice" and p.optional and value == DEFAULT_CHOICE:
        return None
    try:
        if isinstance(value, str) and p.kind not in ("str", "choice"):
            value = p.from_text(value)
        if p.optional and (value == "" or (isinstance(value, (list, tuple)) and not value)):
            value = None    # an empty input (no name picked): the default rule
        return p.check(value)
    except ParamError as e:
        raise SetupError(str(e), e.param) from None
    except ValueError as e:
        raise SetupError(f"{p.name}: {e}", p.name) from None


def make_config(measure: Measure, values: dict):
    """The measure's config from form / Python values (missing ones take their defaults); a bad
    value or a rule between values is a :class:`SetupError` naming the parameter."""
    try:
        values = expand_groups(measure.config, values)
        given = {p.name: value_of(p, values[p.name]) for p in measure.params
                 if p.name in values and values[p.name] is not None}
        return measure.config(**given)
    except ParamError as e:
        raise SetupError(str(e), e.param) from None


@dataclass(frozen=True)
class MeasureRun:
    """How one measure is read from and written to FiftyOne (see the module docstring).

    measure : the engine's registered measure name (:func:`kalos_core.measure.get_measure`).
    title : what the measure computes, for messages ("variation types").
    default_key : the run key the form proposes.
    kinds : the rater label kinds it measures (``RaterSource.kind``: box, polygon, keypoints).
    owned_paths : ``owned_paths(source, run_key)``: the label attributes a run writes.
    write : ``write(collection, source, run_key, result, data)``: writes them (None: nothing per label);
        ``data`` is what ``read`` gave.
    read : ``read(collection, source, config, extras) -> MeasureData`` (default: the raters' labels).
    check : ``check(collection, source, config, extras)``: refusals beyond the parameters'.
    inputs : the plugin-only inputs (a predictions field, an embedding attribute), declared as the
        engine declares parameters: a :class:`kalos_core.params.Config` whose fields are them. The form
        offers them, a given value is checked as a parameter's, and the run config stores them as given.
    extras : operator inputs that are not declared parameters (set by another input's choice), stored
        in the run config.
    config_key : the results key the result's own ``config`` is stored under.
    source : ``source(collection, extras) -> RaterSource``: the raters' labels found from the extras
        instead of the rater inputs (it may normalise ``extras``, which are stored); default: those inputs.
    results : ``results(result, data, config) -> dict``: more keys of the stored results (what ``read``
        left out; calibration: Braylan's item-level measures).
    error_param : ``error_param(source) -> str``: the input an engine ValueError is shown on (as a
        :class:`SetupError`); None: it is raised as it is.
    hidden : parameters this side does not offer (the rater inputs choose convergence's ``raters``):
        no form input, refused as keywords, not stored (their defaults apply).
    inherited : parameters ``prepare`` sets from elsewhere (consensus: the agreement run's matching): no
        form input, refused as keywords (saying ``inherited_from``: where they come from), stored.
    more_config : ``more_config(result) -> dict``: run-config keys from the result (calibration: the
        recommended distance and threshold, which compute_agreement's form offers).
    prepare : ``prepare(collection, source, values, extras) -> values``: the parameter values before the
        config is made from them (agreement: ``distance="mask_iou"`` reads the instance masks, an extra).
    written : ``written(source, extras) -> RaterSource``: the labels a run writes on, when more than the
        raters' (agreement: the model fields too); ``owned_paths`` and ``write`` get it.
    free_paths : ``free_paths(collection, source, run_key)``: the refusal of attributes the run would
        overwrite, in place of :func:`run_store.check_free_paths` over ``owned_paths``.
    two_raters : refuse a view where no sample has two raters (:func:`check_two_raters`).
    video : it reads video frames' labels (``frames.<field>``); any other measure refuses them.
    results_lap : the :class:`Clock` lap that times ``results`` (None: not timed).
    stored_source : ``stored_source(source) -> dict``: what the run config records of the labels
        (default: :meth:`RaterSource.run_config` and the label list's name).
    target : ``target(collection, extras)``: the collection read and stored on, when not the one given
        (consensus: the view of the agreement run it fuses).
    key_of : ``key_of(extras) -> str``: the run key, when the run does not take one (consensus:
        ``<agreement_key>_consensus``); a refused key is then shown on ``key_param``.
    key_param : the input a refused run key is shown on.
    summary : ``summary(result, data) -> dict``: the stored results, in place of ``result.to_dict()``.
    app : how the App offers it (:class:`.registry.Offered`: run kind name, operator, panels, card).
    form_values : ``form_values(cfg) -> dict``: form values a stored config means beyond the stored
        ones (agreement: ``use_masks`` is the distance ``mask_iou``), for Recompute (:func:`rerun_values`).
    """

    measure: str
    title: str
    default_key: str
    kinds: tuple[str, ...]
    owned_paths: Callable[[RaterSource, str], list[str]]
    write: Callable[[Any, RaterSource, str, Any, MeasureData], None] | None = None
    read: Callable[[Any, RaterSource, Any, dict], MeasureData] | None = None
    check: Callable[[Any, RaterSource, Any, dict], None] | None = None
    inputs: type | None = None
    extras: tuple[str, ...] = ()
    config_key: str = "config"
    source: Callable[[Any, dict], RaterSource] | None = None
    results: Callable[[Any, MeasureData, Any], dict] | None = None
    error_param: Callable[[RaterSource], str] | None = None
    hidden: tuple[str, ...] = ()
    inherited: tuple[str, ...] = ()
    inherited_from: str = ""
    more_config: Callable[[Any], dict] | None = None
    prepare: Callable[[Any, RaterSource, dict, dict], dict] | None = None
    written: Callable[[RaterSource, dict], RaterSource] | None = None
    free_paths: Callable[[Any, RaterSource, str], None] | None = None
    two_raters: bool = True
    video: bool = False
    results_lap: str | None = None
    stored_source: Callable[[RaterSource], dict] | None = None
    target: Callable[[Any, dict], Any] | None = None
    key_of: Callable[[dict], str] | None = None
    key_param: str = "run_key"
    summary: Callable[[Any, MeasureData], dict] | None = None
    app: Offered | None = None
    form_values: Callable[[Any], dict] | None = None

    @property
    def spec(self) -> Measure:
        return get_measure(self.measure)

    @property
    def method(self) -> str:
        return self.spec.method

    def written_source(self, source: RaterSource, extras: dict) -> RaterSource:
        """The labels a run writes on (:attr:`written`; default the raters')."""
        return self.written(source, extras) if self.written else source

    @property
    def input_params(self) -> tuple:
        """The declared plugin-only inputs (:class:`kalos_core.params.Param`)."""
        return params_of(self.inputs) if self.inputs is not None else ()

    @property
    def extra_names(self) -> tuple[str, ...]:
        """Every operator input that is no parameter of the measure: the declared ones, then ``extras``."""
        return tuple(p.name for p in self.input_params) + self.extras

    @property
    def params(self) -> list[str]:
        """The names of the parameters this side offers (all but ``hidden``)."""
        return [p.name for p in self.spec.params if p.name not in self.hidden + self.inherited]


def form_run_params(params: dict, default_key: str, names) -> dict:
    """A form's values (``ctx.params``) as a run's keyword arguments: run key (``default_key``
    when none is given), overwrite, and the given values of ``names`` (empty ones left out)."""
    return {"run_key": params.get("run_key") or default_key, "overwrite": bool(params.get("overwrite")),
            **{n: params[n] for n in names if params.get(n) not in (None, "")}}


def source_params(params) -> dict:
    """``rater_fields`` / ``label_field`` / ``rater_attribute`` keyword arguments from form params."""
    by_attribute = params.get("layout") == "rater_attribute" or (
        params.get("layout") is None and params.get("label_field") and not params.get("rater_fields"))
    return {"rater_fields": None if by_attribute else params.get("rater_fields"),
            "label_field": params.get("label_field") if by_attribute else None,
            "rater_attribute": params.get("rater_attribute") or "rater_id"}


def run_params(run: MeasureRun, params: dict, default_key: str | None = None) -> dict:
    """The keyword arguments of :func:`check_run` / :func:`measure_steps` in a form's values: run
    key (``default_key`` or the measure's), overwrite, the extras and every parameter given."""
    names = run.params + list(groups_of(run.spec.config)) + list(run.extra_names)
    return form_run_params(params, default_key or run.default_key, names)


def checked_names(spec: Measure, values: dict, title: str, allowed=None) -> dict:
    """``values`` without the form's own keys; :class:`SetupError` on a name that is no parameter
    (of ``allowed``, default every parameter of ``spec``)."""
    values = {k: v for k, v in values.items() if k not in ("layout", "delegate")}
    names = list(allowed) if allowed is not None else [p.name for p in spec.params]
    unknown = sorted(set(values) - set(names) - set(groups_of(spec.config)))
    if unknown:
        raise SetupError(f"unknown parameter(s) {', '.join(unknown)} of {title}; known: {', '.join(names)}",
                         unknown[0])
    return values


def check_run(run: MeasureRun, collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
              run_key=None, overwrite=False, **values):
    """Every check before anything is read or written; returns ``(source, config, extras)``."""
    extras = {k: values.pop(k, None) for k in run.extra_names}
    for p in run.input_params:   # a given value checked as a parameter's (None: the default rule)
        if extras[p.name] not in (None, ""):
            extras[p.name] = value_of(p, extras[p.name])
    source = run.source(collection, extras) if run.source else resolve_source(collection, rater_fields, label_field,
                                                                              rater_attribute)
    collection = run.target(collection, extras) if run.target else collection
    run_key = run.key_of(extras) if run.key_of else run_key or run.default_key
    try:
        run_store.validate_key(collection, run_key, run.method, overwrite=overwrite)
    except SetupError as e:   # shown on the input that chose the key
        raise SetupError(str(e), e.param if e.param == "overwrite" else run.key_param) from None
    if source.kind not in run.kinds:
        names = {"box": "boxes", "polygon": "polygons", "keypoints": "keypoints", "cuboids": "cuboids"}
        raise SetupError(f"{run.title} need {', '.join(names[k] for k in run.kinds)}, not "
                         f"{source.label_cls.__name__}", run.error_param(source) if run.error_param else
                         "rater_fields" if source.rater_attribute is None else "label_field")
    if source.video != run.video:
        raise SetupError(f"KaLOS {run.title}: " + ("reads the labels on a video's frames (frames.<field>); choose "
                                                    "frame fields of a video dataset" if run.video else
                                                    "reads images' labels; for the labels on a video's frames use "
                                                    "KaLOS video agreement"),
                         "rater_fields" if source.rater_attribute is None else "label_field")
    check_free(run, collection, source, run_key)
    if len(collection) == 0:
        raise SetupError("the view has no samples: nothing to compute (no run was written)", run.key_param)
    if run.two_raters:
        check_two_raters(run, collection, source)
    given = sorted(set(values) & set(run.inherited))
    if given:
        raise SetupError(f"{', '.join(given)} cannot be set for {run.title}: {run.inherited_from}", given[0])
    values = checked_names(run.spec, values, run.title, run.params)
    if run.prepare is not None:
        values = run.prepare(collection, source, values, extras)
    config = make_config(run.spec, values)
    if run.check is not None:
        run.check(collection, source, config, extras)
    if run.written is not None:   # the labels written beyond the raters' (the check chose them)
        check_free(run, collection, run.written_source(source, extras), run_key)
    return source, config, extras


def check_free(run: MeasureRun, collection, source: RaterSource, run_key: str) -> None:
    """Refuse a run whose fields and label attributes would overwrite what no KaLOS run under
    ``run_key`` wrote (:attr:`MeasureRun.free_paths`, else :func:`run_store.check_free_paths`)."""
    if run.free_paths is not None:
        run.free_paths(collection, source, run_key)
    else:
        run_store.check_free_paths(collection, run_key, run.owned_paths(source, run_key), run.key_param)


def check_two_raters(run: MeasureRun, collection, source: RaterSource) -> None:
    """:class:`SetupError` when no sample of ``collection`` has two raters (one query, stopped at
    the first sample that has): every measure compares raters on the same sample. Assigned
    raters are the sample's ``rater_list``, else the rater fields that exist on it (an empty
    list counts), else the distinct rater attribute values of its labels."""
    if source.rater_attribute is None:
        present = [(F(f) != None).if_else(1, 0) for f in source.fields]  # noqa: E711 - a query expression
        two = sum(present[1:], present[0]) >= 2
        why = f"no sample has two of the fields {', '.join(source.fields)}"
    else:
        labels = F(f"{source.fields[0]}.{source.list_name}")
        two = labels.map(F(source.rater_attribute)).unique().length() >= 2
        why = f"the labels of every sample carry fewer than two values of {source.rater_attribute}"
    if collection._dataset.has_sample_field("rater_list"):   # a sample's list, where it has one, says who
        listed = F("rater_list") != None  # noqa: E711
        two = listed.if_else(F("rater_list").length() >= 2, two)
        why = f"every sample's rater_list names fewer than two raters, and {why} where it has none"
    if collection.match(two).limit(1).count() == 0:
        param = run.error_param(source) if run.error_param else (
            "rater_fields" if source.rater_attribute is None else "label_field")
        raise SetupError(f"no sample in the view has two raters ({why}): the measure compares raters on the same "
                         "sample; choose a view, or rater fields, where at least two raters labelled one sample",
                         param)


class Clock:
    """The read / compute / write split every KaLOS run reports in ``result.timings`` (seconds).

    ``lap(name)`` records the time since the previous lap (the first: since the clock was made);
    ``skip()`` starts the next lap now, leaving out what came between (a step yielded to the App);
    ``stamp(result)`` adds the laps to ``result.timings`` (made where the result has none). The
    laps never overlap, so together they are at most the run's wall time."""

    def __init__(self):
        self.laps: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._start
        self._start = now

    def skip(self) -> None:
        self._start = time.perf_counter()

    def stamp(self, result):
        if isinstance(getattr(result, "timings", None), dict):
            result.timings.update(self.laps)
        else:
            result.timings = dict(self.laps)
        return result


def measure_steps(run: MeasureRun, collection, run_key=None, **params):
    """The run as a generator of ``(fraction, message)`` steps; returns the result, whose
    ``timings`` get ``read_s`` (checks and read), ``compute_s`` (the engine) and ``write_s``
    (:class:`Clock`). Nothing is written before the last step."""
    clock = Clock()
    source, config, extras = check_run(run, collection, run_key=run_key, **params)
    collection = run.target(collection, extras) if run.target else collection
    run_key = run.key_of(extras) if run.key_of else run_key or run.default_key
    yield 0.0, "reading labels"
    data = run.read(collection, source, config, extras) if run.read else MeasureData(read_dataset(collection, source))
    clock.lap("read_s")
    try:
        result = yield from rescale(run.spec.steps(data, config), 0.05, 0.9)
    except ValueError as e:
        if run.error_param is None or isinstance(e, SetupError):
            raise
        raise SetupError(str(e), run.error_param(source)) from None
    clock.lap("compute_s")
    more = run.results(result, data, config) if run.results else None
    if more and run.results_lap:
        clock.lap(run.results_lap)
    yield 0.92, "writing the results"
    clock.skip()
    store(run, collection, source, run_key, result, config, extras, more, data)
    clock.lap("write_s")
    clock.stamp(result)
    yield 1.0, "done"
    return result


def measure_run(run: MeasureRun, collection, progress=None, **params):
    """:func:`measure_steps` run to the end; ``progress(fraction, message)`` optional."""
    return run_steps(measure_steps(run, collection, **params), progress)


def store(run: MeasureRun, collection, source: RaterSource, run_key: str, result, config, extras: dict,
          more: dict | None = None, data: MeasureData | None = None) -> None:
    """Replace a run under ``run_key``: its label attributes, then the run with every parameter
    (and ``run.more_config``'s keys); ``more``: results stored beside ``result.to_dict()``."""
    dataset = collection._dataset
    if run_key in dataset.list_runs():
        run_store.delete_run(dataset, run_key)
    written = run.written_source(source, extras)
    if run.write is not None:
        run.write(collection, written, run_key, result, data)
    summary = run.summary(result, data) if run.summary else result.to_dict()
    if "config" in summary:
        summary[run.config_key] = summary.pop("config")
    summary.update(more or {})
    stored = {**{k: v for k, v in config.to_dict().items() if k not in run.hidden}, **extras,
              **(run.more_config(result) if run.more_config else {})}
    labels = run.stored_source(source) if run.stored_source else {**source.run_config(), "list_name": source.list_name}
    run_store.save_run(collection, run_key, run.method, summary, fields=run.owned_paths(written, run_key),
                       **labels, **stored)


def label_source_values(cfg) -> dict:
    """A stored run's labels as operator form values: its rater fields, or its label field and
    rater attribute (every KaLOS run config stores one or the other)."""
    if getattr(cfg, "rater_attribute", None) and getattr(cfg, "label_field", None):
        return {"layout": "rater_attribute", "label_field": cfg.label_field, "rater_attribute": cfg.rater_attribute}
    return {"layout": "rater_fields", "rater_fields": list(getattr(cfg, "rater_fields", None) or [])}


def rerun_values(run: MeasureRun, cfg, adds: dict | None = None) -> dict:
    """The one Recompute: the form values that set up the stored run ``cfg`` again - its labels,
    every declared parameter as stored (:func:`kalos_core.params.stored_form_values`; one the run
    predates takes its default), its plugin-only inputs - never the form's defaults. ``adds``
    (``{name: value}``, what a panel found missing) appends ``value`` to a group's list of names,
    or gives an empty parameter that value. Values that are None are left out."""
    hidden = run.hidden + run.inherited
    values = {**label_source_values(cfg),
              **{k: v for k, v in stored_form_values(run.spec.config, cfg).items() if k not in hidden}}
    for p in run.spec.params:   # a stored default rule stays it (the form would propose its own default)
        if p.kind == "choice" and p.optional and p.name in values and values[p.name] is None:
            values[p.name] = DEFAULT_CHOICE
    for name in run.extra_names:
        value = getattr(cfg, name, None)
        values[name] = list(value) if isinstance(value, (list, tuple)) else value
    values.update(run.form_values(cfg) if run.form_values else {})
    for name, value in (adds or {}).items():
        if name in groups_of(run.spec.config):
            values[name] = values[name] + [value] if value not in values[name] else values[name]
        elif not values.get(name):
            values[name] = value
    return {k: v for k, v in values.items() if v is not None}

