"""SHA-256 of every stored run the plugin's operators write on the real LVIS file.

The companion of :mod:`result_digests` (the command line's JSON) for the FiftyOne side: the LVIS
two-rater file is imported into a fresh dataset, every run-writing operator is called through its
Python entry (the operator registered under the plugin's URI, as a notebook calls it), and each
stored run is digested: its config (without the timestamp), its results (without the timings)
and the values of every field it wrote. A refactoring that must not change behaviour is checked
by running this before and after and comparing the two listings::

    .venv/bin/python benchmarks/run_digests.py > before.txt
    ... change the code ...
    .venv/bin/python benchmarks/run_digests.py > after.txt && diff before.txt after.txt

Needs ``../shared/data`` beside the checkout; runs a private MongoDB (the tests' own start-up).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"
PLUGIN = "@kalos/agreement"

#: (operator, its keyword arguments): every run-writing operator, with settings a stored run depends on
RUNS = [
    ("compute_agreement", {"run_key": "agree", "lsa_thresholds": "0.3,0.5,0.7"}),
    ("compute_agreement", {"run_key": "agree_ahc", "solver": "ahc", "distance": "giou", "threshold": 0.6,
                           "diagnostics": ["vitality"]}),
    ("calibrate", {"run_key": "cal", "bootstrap": 20}),
    ("compute_variations", {"run_key": "var"}),
    ("build_consensus", {"agreement_key": "agree"}),
    ("label_convergence", {"run_key": "conv", "bootstrap": 20, "predictions_field": "preds"}),
    ("noise_aware_evaluation", {"run_key": "na", "predictions_field": "preds"}),
    ("compute_bae", {"run_key": "bae", "embedding_attribute": "embedding"}),
]


def _plain(value):
    """A stored value as JSON-able data (ObjectIds and dates as text)."""
    return json.loads(json.dumps(value, default=str, sort_keys=True))


_OBJECT_ID = re.compile(r"\b[0-9a-f]{24}\b")


def id_names(dataset) -> dict:
    """Every sample and label id as a name that is the same on every import (ids are random):
    ``S<n>`` by COCO image id, ``L<n>`` in the fields' order of the labels."""
    names = {}
    order = sorted(zip(dataset.values("coco_id"), dataset.values("id")))
    names.update((sid, f"S{n}") for n, (_, sid) in enumerate(order))
    rank = {sid: n for n, (_, sid) in enumerate(order)}
    for f in sorted(dataset.get_field_schema(embedded_doc_type=fo.Detections)):
        rows = sorted(zip(dataset.values("id"), dataset.values(f"{f}.detections.id")), key=lambda r: rank[r[0]])
        for _, ids in rows:
            names.update((i, f"L{len(names)}") for i in ids or [])
    return names


def _named(obj, names: dict):
    """``obj`` with every id, in keys and in values, replaced by its name (keys sort by the names)."""
    sub = lambda text: _OBJECT_ID.sub(lambda m: names.get(m.group(0), "?id"), text)
    if isinstance(obj, dict):
        return {sub(k): _named(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_named(v, names) for v in obj]
    return sub(obj) if isinstance(obj, str) else obj


def run_digest(dataset, key: str, names: dict) -> str:
    """SHA-256 of a stored run: config less its timestamps, results less timings, owned fields' values
    (in sample order), every id replaced by its name (:func:`id_names`)."""
    info = dataset.get_run_info(key)
    config = {k: v for k, v in info.config.serialize().items() if k not in ("cls", "timestamp")}
    results = dataset.load_run_results(key, load_view=False).serialize()
    results.pop("timings", None)
    results.pop("seconds", None)   # the run time of each step (convergence)
    results.pop("cls", None)
    fields = sorted(config.get("fields") or [])
    view = dataset.sort_by("coco_id")
    values = {f: view.values(f, unwind=True) for f in fields}
    doc = _named(_plain({"config": config, "results": results, "fields": values}), names)
    blob = json.dumps(doc, sort_keys=True)
    if os.environ.get("KALOS_DIGEST_DUMP"):   # a folder: each run's digested document, to diff two listings
        Path(os.environ["KALOS_DIGEST_DUMP"], f"{key}.json").write_text(json.dumps(doc, sort_keys=True, indent=1))
    return hashlib.sha256(blob.encode()).hexdigest()


def prepare(dataset, rater_fields) -> None:
    """A model's predictions (one rater's boxes at score 0.9, as result_digests.py does) and a seeded
    vector on every rater label (BAE's embedding), written with plain field writes."""
    import fiftyone as fo
    import numpy as np

    rng = np.random.default_rng(0)
    last = rater_fields[-1]
    preds = []
    for dets in dataset.values(last):
        preds.append(fo.Detections(detections=[fo.Detection(label=d.label, bounding_box=d.bounding_box,
                                                            confidence=0.9) for d in (dets.detections if dets else [])]))
    dataset.set_values("preds", preds)
    for f in rater_fields:
        n = [len(d.detections) if d else 0 for d in dataset.values(f)]
        dataset.set_values(f"{f}.detections.embedding", [[rng.normal(size=4).tolist() for _ in range(k)] for k in n])


def main() -> int:
    if not LVIS.exists():
        print(f"needs {LVIS}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # the tests' private mongod and plugins folder, before FiftyOne is imported

    conftest.pytest_configure(None)
    global fo
    import fiftyone as fo
    import fiftyone.operators as foo

    dataset = fo.Dataset()
    foo.get_operator(f"{PLUGIN}/import_multirater_coco")(dataset, str(LVIS), placeholders=False)
    rater_fields = sorted(f for f in dataset.get_field_schema() if f.startswith("raters_"))
    prepare(dataset, rater_fields)
    for name, params in RUNS:
        params = dict(params)
        if name not in ("build_consensus",):
            params.setdefault("rater_fields", rater_fields)
        if name == "noise_aware_evaluation":
            params = {**{k: v for k, v in params.items() if k != "rater_fields"}, "reference_field": rater_fields[0],
                      "noise_fields": rater_fields[1:-1] or rater_fields[1:]}
        if name == "label_convergence":
            params["rater_fields"] = rater_fields
        try:
            foo.get_operator(f"{PLUGIN}/{name}")(dataset, **params)
        except Exception as e:   # a listing line, so that both listings still compare
            print(f"{name:24} failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    names = id_names(dataset)
    for key in sorted(dataset.list_runs()):
        method = dataset.get_run_info(key).config.method
        print(f"{key:16} {method:20} {run_digest(dataset, key, names)}")
    dataset.delete()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("FIFTYONE_DATABASE_DIR", tempfile.mkdtemp(prefix="kalos-fodb-"))
    sys.exit(main())
