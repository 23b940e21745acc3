"""What the tests over every registered operator and panel share (test_common_operators.py, test_common_panels.py)."""

import json

import numpy as np

from .constants import PLUGIN
from .datasets import model_dataset
from .operators import _uri, snapshot


# -- every registered operator and panel (test_common_operators.py, test_common_panels.py) -----------
# Built from what the plugin declares: FiftyOne's registry of the plugin's operators and panels, and
# each measure's declaration (fiftyone_layer/registry.py: the run kind and the operator that writes it).


def registered(kind: str) -> list:
    """The plugin's registered operators (``kind="operator"``) or panels (``"panel"``), as FiftyOne
    lists them, in registration order."""
    import fiftyone.operators as foo

    return [op for op in foo.list_operators(builtin=False, type=kind) if op.plugin_name == PLUGIN]


def run_writers() -> dict:
    """{run kind: the name of the operator that writes it}, for every measure the plugin declares."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry

    return {run.method: run.app.operator for run in registry.plugin_runs()}


def form_params(name: str, fields: list) -> dict:
    """The values an operator's form needs beyond its defaults on :func:`common_dataset` to show all
    its inputs and to run cheaply: the rater fields, with bootstrap off (``common_run_params``
    adds it where the form has one); the plugin-only inputs below are hand-written until each
    measure declares them."""
    extra = {
        "noise_aware_evaluation": {"predictions_field": "model", "reference_field": fields[0],
                                   "noise_fields": fields[1:]},
        "label_convergence": {"predictions_field": "model"},
        "simulate_raters": {"reference_field": fields[0]},
        "build_consensus": {"agreement_key": "kalos"},
        "compute_mask_agreement": {"mask_fields": [f"seg_{f}" for f in fields]},
    }
    return {"rater_fields": list(fields), **extra.get(name, {})}


def common_run_params(name: str, ds, fields: list, run_key: str) -> dict:
    """:func:`form_params` of a run-writing operator, under ``run_key`` where its form has a run
    key input, with bootstrap off where it has one (the cheapest run)."""
    params = form_params(name, fields)
    _, props = validation_errors(name, ds, params)
    if "run_key" in props:
        params["run_key"] = run_key
    if "bootstrap" in props:
        params["bootstrap"] = 0
    return params


def common_dataset(fo, data, seed=0):
    """The small dataset of the common tests: ``data``'s raters (image sizes, an ``embedding``
    vector on every rater label for BAE) and a ``model`` field with confidences, plus what a user
    keeps there: a field ``user_note``, a label attribute ``user_score`` and a saved view
    ``user_view``, which no run may change. Returns ``(dataset, rater fields)``."""
    ds, fields = model_dataset(fo, data, seed=seed)
    rng = np.random.default_rng(seed)
    for f in fields:
        rows = ds.values(f"{f}.detections")
        for row in rows:
            for d in row or ():
                d["embedding"] = [float(v) for v in rng.normal(size=4)]
                d["user_score"] = float(rng.random())
        ds.set_values(f, [None if row is None else fo.Detections(detections=row) for row in rows])
    ds.set_values("user_note", [f"note {k}" for k in range(len(ds))])
    for f in fields:   # one class map per rater and sample (compute_mask_agreement)
        ds.set_values(f"seg_{f}", [fo.Segmentation(mask=(rng.random((12, 16)) < 0.3).astype(np.uint8))
                                   for _ in range(len(ds))])
    ds.save_view("user_view", ds.limit(2))
    return ds, fields


def validation_errors(name: str, ds, params: dict) -> tuple[dict, dict]:
    """``({input: reason}, {input: property})``: the operator's form resolved with ``params`` and
    checked as FiftyOne checks it before executing (the plugin's form errors and FiftyOne's own
    type, choice and required checks)."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext, ValidationContext

    op = foo.get_operator(_uri(name))
    ctx = ExecutionContext({"dataset_name": ds.name, "params": params})
    prop = op.resolve_input(ctx)
    errors = ValidationContext(ctx, prop, op).errors
    return {e.path.lstrip("."): e.reason for e in errors}, prop.type.properties


def declared(name: str) -> list:
    """The engine's declared parameters (of every measure) called ``name``."""
    from kalos_core.measure import measures

    return [p for m in measures() for p in m.params if p.name == name]


def bad_values(name: str, prop) -> list:
    """Values the input ``name`` must refuse, from its type: text for a number, numbers outside
    every declared range of a parameter of that name, a name outside its choices, text that is
    no list of numbers where a parameter is one, a run key that is no plain name."""
    kind = type(prop.type).__name__
    params = declared(name)
    if kind == "Number":
        out = ["not a number"]
        bounds = [(0.0, 1.0) if p.kind == "fraction" else (p.lo, p.hi) for p in params
                  if p.kind in ("int", "float", "fraction")]
        if bounds and all(lo is not None for lo, _ in bounds):
            out.append(min(lo for lo, _ in bounds) - 1)
        if bounds and all(hi is not None for _, hi in bounds):
            out.append(max(hi for _, hi in bounds) + 1)
        return out
    if kind == "Enum":
        return ["not one of the choices"]
    if kind == "List" and getattr(prop.view, "choices", None):
        return [["not one of the choices"]]
    if kind == "String" and name == "run_key":
        return ["not a key!"]
    if kind == "String" and params and all(p.kind in ("fractions", "floats", "ints") for p in params):
        return ["no numbers"]
    return []


def run_state(ds) -> dict:
    """All a run may touch in ``ds``, by part (so that a difference names the part): each sample's
    stored document (but FiftyOne's ``last_modified_at``, which any write or delete moves on), the
    schema, runs, saved views, info, and the App config (its colour scheme's field entries in path
    order: the App looks an entry up by its path)."""
    from bson import json_util

    docs, schema, runs, views, info = snapshot(ds)
    samples = [{k: v for k, v in doc.items() if k != "last_modified_at"} for doc in json_util.loads(docs)]
    app = json.loads(json.dumps(ds.app_config.to_dict(), sort_keys=True, default=str))
    if (app.get("color_scheme") or {}).get("fields"):
        app["color_scheme"]["fields"].sort(key=lambda e: str(e.get("path")))
    state = {"samples": samples, "schema": schema, "runs": runs, "saved views": views, "info": info, "app config": app}
    if ds.media_type == "video":   # the frames' documents and schema too
        state["frames"] = [{k: v for k, v in frame.to_dict().items() if k != "last_modified_at"}
                           for sample in ds for frame in sample.frames.values()]
        state["frame schema"] = sorted(ds.get_frame_field_schema())
    return state


def import_tools():
    """A fresh copy of ``benchmarks/import_bad_input_table.py``, the writers of exports as the tools
    write them (and their spoiled forms) that the import tests and the imports' bad-input table share
    (a copy per test module: some of them set the writers' options)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "import_bad_input_table.py"
    spec = importlib.util.spec_from_file_location("import_bad_input_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
