"""The gate (:mod:`kalos_core.gate`) on a dataset's stored runs: an agreement run and a scorecard run.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.gate import gate_run
    report = gate_run(dataset, "rules.toml", agreement_key="kalos", scorecard_key="scorecard")
    report["passed"]

The agreement run gives its stored mean and global α and per-class α, and each sample's α from
its ``<key>_alpha`` field; the scorecard run its stored rows. Nothing is written on the dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

from kalos_core.gate import evaluate, load_rules, report

from . import run_store
from .adapter import SetupError

SCORECARD = "kalos_scorecard"


def stored_results(dataset, agreement_key: str | None = None, scorecard_key: str | None = None) -> dict:
    """``{"agreement": dict, "scorecard": dict}`` (those named) as the gate reads result files."""
    out = {}
    if agreement_key:
        run_store.get_run(dataset, agreement_key, run_store.AGREEMENT)
        res = dataset.load_run_results(agreement_key)
        alphas = dataset.values(f"{agreement_key}_alpha") if dataset.has_sample_field(f"{agreement_key}_alpha") else []
        out["agreement"] = {"mean_alpha": getattr(res, "mean_alpha", None), "global_alpha": getattr(res, "global_alpha", None),
                            "class_difficulty": getattr(res, "class_difficulty", None) or {},
                            "class_difficulty_global": getattr(res, "class_difficulty_global", None) or {},
                            "per_image_alpha": dict(enumerate(a for a in alphas if a is not None))}
    if scorecard_key:
        run_store.get_run(dataset, scorecard_key, SCORECARD)
        res = dataset.load_run_results(scorecard_key)
        out["scorecard"] = {"rows": list(res.rows), "confusion": res.confusion}
    return out


def gate_run(dataset, rules_path, agreement_key: str | None = None, scorecard_key: str | None = None,
             report_path: str | None = None) -> dict:
    """The gate's report (``passed``, ``n_checks``, ``n_failed``, ``checks``) on the stored runs; written
    to ``report_path`` as JSON when given. A bad rules file or a rule without its run: :class:`SetupError`."""
    try:
        rules = load_rules(rules_path)
    except ValueError as e:
        raise SetupError(str(e), "rules_path") from None
    try:
        checks = evaluate(rules, stored_results(dataset, agreement_key, scorecard_key), str(rules_path))
    except SetupError:
        raise
    except ValueError as e:   # a rule whose run was not chosen
        raise SetupError(str(e), "agreement_key" if "agreement" in str(e) else "scorecard_key") from None
    runs = [k for k in (agreement_key, scorecard_key) if k]
    out = report(checks, rules_path, [f"run {k}" for k in runs])
    if report_path:
        Path(report_path).write_text(json.dumps(out, indent=1))
    return out
