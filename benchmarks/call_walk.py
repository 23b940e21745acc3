"""How far a reader walks to follow one operator's ``execute``: the plugin modules it passes through.

Runs an operator's ``execute`` as the App does (a real dataset, a private MongoDB) under a profiler
that records every call into the plugin's own code (``operators/``, ``panels/``, ``fiftyone_layer/``
and the top-level ``__init__.py``; the engine and FiftyOne are left out) and prints, per operator,
the distinct modules and the distinct functions entered, in first-call order::

    .venv/bin/python benchmarks/call_walk.py compute_agreement compute_bae

Without arguments it walks ``compute_agreement`` and ``compute_bae``. Needs ``../shared/data``.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"
PACKAGE = "fiftyone.plugins.orgs.kalos.agreement"


def walk(name: str, dataset, params: dict) -> list[tuple[str, str]]:
    """``(module, function)`` of every plugin function entered while ``execute`` runs, first-call order."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext(request_params={"dataset_name": dataset.name, "params": params, "delegated": True})
    seen: dict[tuple[str, str], None] = {}

    def profile(frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith(PACKAGE):
                seen.setdefault((module[len(PACKAGE) + 1:] or "__init__", frame.f_code.co_name), None)

    operator = foo.get_operator(f"@kalos/agreement/{name}")
    sys.setprofile(profile)
    try:
        for _ in operator.execute(ctx):
            pass
    finally:
        sys.setprofile(None)
    return list(seen)


def main(argv: list[str]) -> int:
    if not LVIS.exists():
        print(f"needs {LVIS}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # the tests' private mongod and plugins folder, before FiftyOne is imported

    conftest.pytest_configure(None)
    import fiftyone as fo
    import fiftyone.operators as foo
    import numpy as np

    dataset = fo.Dataset()
    foo.get_operator("@kalos/agreement/import_multirater_coco")(dataset, str(LVIS), placeholders=False)
    fields = sorted(f for f in dataset.get_field_schema() if f.startswith("raters_"))
    rng = np.random.default_rng(0)
    for f in fields:
        n = [len(d.detections) if d else 0 for d in dataset.values(f)]
        dataset.set_values(f"{f}.detections.embedding", [[rng.normal(size=4).tolist() for _ in range(k)] for k in n])
    params = {"compute_agreement": {"rater_fields": fields, "run_key": "walk_a", "bootstrap": 0},
              "compute_bae": {"rater_fields": fields, "run_key": "walk_b", "embedding_attribute": "embedding"}}
    for name in argv or ["compute_agreement", "compute_bae"]:
        calls = walk(name, dataset, params.get(name, {"rater_fields": fields}))
        modules = list(dict.fromkeys(m for m, _ in calls))
        print(f"{name}: {len(modules)} plugin modules, {len(calls)} plugin functions")
        print("  " + ", ".join(modules))
    dataset.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
