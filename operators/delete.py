"""Operator delete_kalos_run: any KaLOS run, with exactly what it wrote (the run store's delete)."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from .cards import delete_and_confirm
from .measure_operator import report_errors
from .common import form, form_error


class DeleteKalosRun(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="delete_kalos_run", label="KaLOS: delete a run", dynamic=True,
                                  view_target=False, execute_as_generator=True, icon="/assets/icon.svg")

    def resolve_input(self, ctx):
        inputs = types.Object()
        runs = [k for m in run_store.kinds() for k in run_store.runs_of(ctx.dataset, m)]
        if not runs and ctx.params.get("run_key") is None:
            inputs.view("none", types.Warning(label="No KaLOS run on this dataset."))
            return form(inputs, "KaLOS: delete a run")
        choices = types.Dropdown()
        for k in runs:
            choices.add_choice(k, label=k, description=run_store.describe_run(ctx.dataset, k))
        prop = inputs.enum("run_key", choices.values(), required=True, label="Run to delete", view=choices)
        key = ctx.params.get("run_key")
        if key in runs:
            paths, views = run_store.owned(ctx.dataset, key)
            owned = paths + [f"saved view {v}" for v in views]
            inputs.view("fields", types.Notice(label=f"{run_store.describe_run(ctx.dataset, key)}. Removes: "
                                               + (", ".join(owned) or "the run only (it wrote no field)")))
        elif key is not None:
            form_error(prop, f"no KaLOS run {key!r} on this dataset")
        return form(inputs, "KaLOS: delete a run")

    def execute(self, ctx):
        yield from report_errors(ctx, delete_and_confirm(ctx, ctx.params.get("run_key")),
                                 "KaLOS: the run was not deleted")
