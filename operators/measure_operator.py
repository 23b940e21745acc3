"""The one operator every measure runs through, and how any operator runs its steps in the App
(progress, failure card, success note: :func:`drive`, :func:`report_errors`, :func:`finish_run`).

A measure's form, execution and result card come from its declaration (``RUN``,
:class:`..fiftyone_layer.measure_runs.MeasureRun`, and ``RUN.app``, :class:`..fiftyone_layer.registry.Offered`).

A measure whose form needs nothing beyond the rater inputs, the run key and its parameters is
served by :func:`operator_class` (the registry makes one per measure); a measure whose form needs
more subclasses :class:`MeasureOperator` and overrides :meth:`~MeasureOperator.inputs` (its own
inputs) or :meth:`~MeasureOperator.steps` (what the form's values mean to the run).
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store, status_colors
from ..fiftyone_layer.measure_runs import MeasureRun, check_run, measure_run, measure_steps, run_params, source_params
from .cards import show_card, show_result, written_by
from .common import check_form, form, setup_inputs
from .forms import declared_inputs, param_inputs


# -- running steps in the App (every operator's execute) ------------------------------------------

def progress_op(ctx, progress: float, label: str):
    """Report progress from a generator ``execute``.

    Delegated runs store it on the operation now and return None; immediate runs
    return the ``set_progress`` trigger, which the caller must ``yield``::

        op = progress_op(ctx, 0.5, "halfway")
        if op is not None:
            yield op
    """
    if ctx.delegated:
        ctx.set_progress(progress=progress, label=label)
        return None
    return ctx.ops.set_progress(progress=progress, label=label)


def drive(ctx, steps):
    """``yield from`` this in a generator ``execute``: runs a ``(fraction, message)`` step
    generator, reporting each step with :func:`progress_op`; returns the steps' return value."""
    while True:
        try:
            fraction, message = next(steps)
        except StopIteration as stop:
            return stop.value
        op = progress_op(ctx, fraction, message)
        if op is not None:
            yield op


def report_errors(ctx, operations, title: str = "KaLOS: the operation failed"):
    """``yield from`` this in a generator ``execute`` around its work (``operations``: a generator
    of App operations, e.g. :func:`drive`); returns its value.

    An exception is shown to the user before it is raised again (the App shows nothing of an
    exception raised in a generator): the progress dialog is replaced by a card with ``title`` and
    the whole message (:func:`failure_card`), so that it never reads "100%" for a run that failed,
    and an error notification repeats the message. Delegated and Python runs get the exception as
    it is."""
    try:
        return (yield from operations)
    except Exception as e:
        message = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
        if not ctx.delegated:
            yield show_result(ctx, failure_card(title, message), {})
            yield ctx.ops.notify(f"KaLOS: {message}", variant="error")
        raise


def failure_card(title: str, message: str):
    """Outputs for :func:`show_result`: an error box headed ``title`` holding ``message``."""
    out = types.Object()
    out.view("failed", types.Error(label=title, description=message))
    return types.Property(out, view=types.View(label=title))


def finish_run(ctx, message: str, recolour: bool = False):
    """The last App operations of a run: progress done, reload (``recolour``: and the dataset's colour
    scheme applied, :func:`..fiftyone_layer.status_colors.refresh_app`), success note."""
    done = progress_op(ctx, 1.0, "done")
    if done is not None:
        yield done
    if not ctx.delegated:
        yield ctx.ops.reload_dataset()
        if recolour:
            yield status_colors.refresh_app(ctx)
        yield ctx.ops.notify(message, variant="success")


def run_or_delegate(operator, run, sample_collection, delegate: bool, params: dict):
    """An operator's Python entry: ``run(sample_collection, **params)`` here, or with
    ``delegate=True`` queue the operator for ``fiftyone delegated launch`` with the same params."""
    if not delegate:
        return run(sample_collection, **params)
    params.setdefault("layout", "rater_attribute" if params.get("label_field") else "rater_fields")
    return foo.execute_operator(operator.uri, dataset=sample_collection._dataset.name,
                                view=sample_collection.view(), params=params, request_delegation=True)


class MeasureOperator(foo.Operator):
    """A measure's operator: ``RUN`` is its declaration."""

    RUN: MeasureRun
    #: the run key must be given (False: an empty one means the declared default key)
    KEY_REQUIRED = True

    @property
    def config(self):
        app = self.RUN.app
        return foo.OperatorConfig(name=app.operator, label=app.label, dynamic=True, execute_as_generator=True,
                                  allow_delegated_execution=True, icon="/assets/icon.svg", description=app.description)

    def __call__(self, sample_collection, delegate=False, **params):
        """Python entry: the form's parameters as keywords; ``delegate=True`` queues the run for
        ``fiftyone delegated launch`` instead of running it here."""
        return run_or_delegate(self, self.run, sample_collection, delegate, params)

    def run(self, collection, progress=None, **params):
        """The run on ``collection`` (the Python entry's work)."""
        return measure_run(self.RUN, collection, progress, **params)

    # -- the form ---------------------------------------------------------------------------------
    def resolve_input(self, ctx):
        run, ds, p = self.RUN, ctx.dataset, ctx.params
        key = self.default_key(ctx)
        inputs, source = setup_inputs(
            ctx, key, lambda k: run_store.validate_key(ds, k, run.method, overwrite=bool(p.get("overwrite"))),
            existing=run_store.described(ds, run.method), required=self.KEY_REQUIRED,
            description=run.app.key_help)
        props = dict(inputs.properties)
        props.update(self.inputs(ctx, inputs, source))
        if source is not None:
            check_form(props, lambda: self.check(ctx, key))
        return form(inputs, run.app.label)

    def default_key(self, ctx) -> str:
        """The run key the form proposes: the declared one, or the first free one after it."""
        return run_store.unused_key(ctx.dataset, self.RUN.default_key, self.RUN.method)

    def inputs(self, ctx, inputs, source) -> dict:
        """The measure's own inputs after the rater inputs and the run key: its declared plugin-only
        inputs, then its parameters (:func:`.forms.param_inputs`, with :meth:`overrides`); returns the
        properties by name."""
        run = self.RUN
        props = declared_inputs(ctx, inputs, run.inputs) if run.inputs is not None else {}
        props.update(param_inputs(ctx, inputs, run.spec, skip=run.hidden + run.inherited,
                                  overrides=self.overrides(ctx, source)))
        return props

    def overrides(self, ctx, source) -> dict:
        """``{parameter: input options}`` that differ from the declaration's (choices known from the data)."""
        return {}

    def check(self, ctx, default_key: str):
        """Every check of a run set up as the form says (a refusal becomes a form error)."""
        return check_run(self.RUN, ctx.target_view(), **source_params(ctx.params),
                         **run_params(self.RUN, ctx.params, default_key))

    # -- the run ---------------------------------------------------------------------------------
    def steps(self, ctx):
        """The run the form's values set up, as progress steps (:func:`measure_steps`)."""
        return measure_steps(self.RUN, ctx.target_view(), **source_params(ctx.params),
                             **run_params(self.RUN, ctx.params))

    def run_key(self, ctx) -> str:
        """The key the run is stored under."""
        return ctx.params.get("run_key") or self.RUN.default_key

    def execute(self, ctx):
        app = self.RUN.app
        result = yield from report_errors(ctx, drive(ctx, self.steps(ctx)), app.failure)
        key = self.run_key(ctx)
        yield from self.finish(ctx, app.notice(result, key))
        title, rows, next_step = app.card(result, key)
        yield show_card(ctx, title, rows, written_by(ctx.dataset, key), key, next_step)

    def finish(self, ctx, message: str):
        """The App operations after a run: progress done, reload (with the new status colours where
        the run made them), the success notification."""
        yield from finish_run(ctx, message, recolour=self.RUN.app.recolours)


def operator_class(run: MeasureRun) -> type:
    """The generic operator of ``run`` (a measure that declares no operator class of its own)."""
    name = "".join(w.capitalize() for w in run.app.operator.split("_"))
    return type(name, (MeasureOperator,), {"RUN": run, "__module__": __name__,
                                           "__doc__": f"{run.app.label}: {run.app.description}"})
