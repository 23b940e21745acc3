"""Operator kalos_gate: pass/fail rules (a TOML file, :mod:`kalos_core.gate`) over the dataset's stored
agreement and scorecard runs; the result card says passed or FAILED and lists the failures."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from ..fiftyone_layer import run_store
from ..fiftyone_layer.adapter import SetupError
from ..fiftyone_layer.gate import SCORECARD, gate_run
from .cards import show_card
from .common import agreement_run_input, form, form_error
from .measure_operator import report_errors

SHOWN = 8   # failures listed on the card (the report holds them all)


class RunGate(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(name="kalos_gate", label="KaLOS: gate (pass/fail rules)", dynamic=True,
                                  view_target=False, execute_as_generator=True, icon="/assets/icon.svg")

    def resolve_input(self, ctx):
        inputs = types.Object()
        props = {"rules_path": inputs.str("rules_path", required=True, label="Rules file (TOML or JSON)",
                                          description="[overall] and [class.NAME] tables of min_alpha, "
                                                      "min_global_alpha, min_f1, tau + max_share_below_tau")}
        props["agreement_key"] = agreement_run_input(
            ctx, inputs, "agreement_key", "Agreement run", missing="No agreement run: its rules cannot be checked.")
        props["scorecard_key"] = agreement_run_input(
            ctx, inputs, "scorecard_key", "Scorecard run", method=SCORECARD,
            missing="No scorecard run: min_f1 rules cannot be checked.")
        inputs.str("report_path", required=False, label="Report (JSON, optional)",
                   description="where to write every check, for a CI system to keep")
        if ctx.params.get("rules_path"):
            try:
                gate_run(ctx.dataset, ctx.params["rules_path"], *self._keys(ctx))
            except SetupError as e:
                if props.get(e.param) is not None:
                    form_error(props[e.param], str(e))
        return form(inputs, "KaLOS: gate (pass/fail rules)")

    @staticmethod
    def _keys(ctx) -> tuple:
        pick = lambda name, method: ctx.params.get(name) or (run_store.runs_of(ctx.dataset, method) or [None])[-1]
        return pick("agreement_key", run_store.AGREEMENT), pick("scorecard_key", SCORECARD)

    def execute(self, ctx):
        yield from report_errors(ctx, self._gate(ctx), "KaLOS: the gate could not run")

    def _gate(self, ctx):
        path = ctx.params.get("report_path") or None
        out = gate_run(ctx.dataset, ctx.params.get("rules_path"), *self._keys(ctx), report_path=path)
        failed = [c for c in out["checks"] if not c["passed"]]
        rows = [("Checks that hold", f"{out['n_checks'] - out['n_failed']} of {out['n_checks']}")]
        rows += [(f"Fails ({k + 1})", c["message"]) for k, c in enumerate(failed[:SHOWN])]
        if len(failed) > SHOWN:
            rows.append(("More failures", f"{len(failed) - SHOWN} (all in the report)"))
        yield show_card(ctx, f"KaLOS: gate {'PASS' if out['passed'] else 'FAIL'}", rows,
                        f"report {path}" if path else "nothing (no report asked for)", None,
                        "Fix the failing classes or raters, recompute, and run the gate again." if failed
                        else "Ship the batch.", passed=out["passed"], n_failed=out["n_failed"])
