"""Every measure run on FiftyOne reports the same read / compute / write split
(``measure_runs.Clock``): the three laps on the returned result, each non-negative, together
no more than the wall time measured around the call (laps that overlapped, or a clock started
before the call, would exceed it)."""

import time

import numpy as np
import pytest

from kalos_core import load_coco
from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import model_dataset

P = "fiftyone.plugins.orgs.kalos.agreement"


@pytest.fixture(scope="module")
def ds(fo_isolated, tmp_path_factory):
    demo = load_coco(build_demo(tmp_path_factory.mktemp("demo"), n_images=10, seed=4, with_images=False), "bbox")
    ds, fields = model_dataset(fo_isolated, demo)
    rng = np.random.default_rng(0)
    for f in fields:   # a vector on every rater label, for BAE
        rows = ds.values(f"{f}.detections.id")
        ds.set_values(f"{f}.detections.emb", [None if r is None else rng.random((len(r), 3)).tolist() for r in rows])
    return ds, fields


def runs(fields):
    """(name, call) of every operator's Python entry; agreement first (consensus fuses its units)."""
    from importlib import import_module

    def entry(module, name):
        return getattr(import_module(f"{P}.fiftyone_layer.measures.{module}"), name)

    return [
        ("agreement", lambda ds: entry("agreement", "compute_agreement_run")(ds, rater_fields=fields, run_key="ag",
                                                                       lsa_thresholds=(0.5,), bootstrap=20)),
        ("model rater", lambda ds: entry("agreement", "compute_agreement_run")(ds, rater_fields=fields, run_key="agm",
                                                                         model_fields=["model"], bootstrap=0)),
        ("calibrate", lambda ds: entry("calibrate", "calibrate_run")(ds, rater_fields=fields, bootstrap=20)),
        ("variations", lambda ds: entry("variations", "variations_run")(ds, rater_fields=fields)),
        ("consensus", lambda ds: entry("consensus", "consensus_run")(ds, agreement_key="ag")),
        ("convergence", lambda ds: entry("convergence", "convergence_run")(
            ds, rater_fields=fields, predictions_field="model", bootstrap=20)),
        ("noise-aware", lambda ds: entry("noise_aware", "noise_aware_run")(
            ds, predictions_field="model", reference_field=fields[0], noise_fields=fields[1:])),
        ("bae", lambda ds: entry("bae", "bae_run")(ds, rater_fields=fields, embedding_attribute="emb")),
    ]


def test_every_run_reports_read_compute_write_within_its_wall_time(ds):
    ds, fields = ds
    seen = []
    for name, call in runs(fields):
        t = time.perf_counter()
        result = call(ds)
        wall = time.perf_counter() - t
        split = {k: result.timings.get(k) for k in ("read_s", "compute_s", "write_s")}
        assert all(isinstance(v, float) and v >= 0 for v in split.values()), (name, result.timings)
        assert split["read_s"] > 0 and split["write_s"] > 0, (name, split)   # both talk to the database
        assert sum(split.values()) <= wall, (name, split, wall)
        seen.append(name)
    assert len(seen) == 8


def test_agreement_lsa_lap_is_separate_and_within_the_wall_time(ds):
    from importlib import import_module

    ds, fields = ds
    run = import_module(f"{P}.fiftyone_layer.measures.agreement").compute_agreement_run
    t = time.perf_counter()
    result = run(ds, rater_fields=fields, run_key="ag", overwrite=True, lsa_thresholds=(0.3, 0.7), bootstrap=0)
    wall = time.perf_counter() - t
    assert set(result.timings) == {"read_s", "compute_s", "lsa_falls_apart_s", "write_s"}
    assert sum(result.timings.values()) <= wall


def test_the_clock_laps_never_overlap():
    from importlib import import_module

    Clock = import_module(f"{P}.fiftyone_layer.measure_runs").Clock

    class Result:
        def __init__(self):
            self.timings = {"engine_s": 1.0}

    t = time.perf_counter()
    clock = Clock()
    time.sleep(0.02)
    clock.lap("read_s")
    time.sleep(0.03)          # left out: skipped
    clock.skip()
    time.sleep(0.01)
    clock.lap("write_s")
    wall = time.perf_counter() - t
    result = clock.stamp(Result())
    assert result.timings["engine_s"] == 1.0                 # kept
    assert result.timings["read_s"] >= 0.02 and result.timings["write_s"] >= 0.01
    assert result.timings["read_s"] + result.timings["write_s"] <= wall - 0.03
