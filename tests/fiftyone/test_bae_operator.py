"""compute_bae on a real database: the stored BAE is the engine's on the same labels with the
per-sample mean vectors (hand-checked), both label layouts, every parameter stored, form errors,
overwrite, and the panel (its matrices, summary and Recompute)."""

import math
import uuid

import numpy as np
import pytest

from kalos_core import load_coco
from kalos_core.bae import BAEConfig, compute_bae
from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import (THREE_RATER_FIELDS as FIELDS, Panel, form_errors as errors, rater_dataset as make_dataset,
                                   resolved_form as form, run_operator as execute, three_raters)

#: per rater field: the vectors of its labels, per sample (three_raters: r1 has 2 + 2 labels, r2 1 + 2, r3 1 + 2)
VECTORS = {"raters_r1": [[[1, 0], [0, 1]], [[1, 0], [1, 0]]],
           "raters_r2": [[[0, 1]], [[1, 0], [1, 0]]],
           "raters_r3": [[[0, 1]], [[0, 1], [0, 1]]]}
#: each rater's vector per sample: the mean of its labels' there (Eq. 5 then averages over samples)
PER_SAMPLE = {"r1": [[0.5, 0.5], [1, 0]], "r2": [[0, 1], [1, 0]], "r3": [[0, 1], [0, 1]]}


def with_vectors(ds, attr="emb"):
    for k, s in enumerate(ds.iter_samples(autosave=True)):
        for f in FIELDS:
            for d, v in zip(s[f].detections, VECTORS[f][k]):
                d[attr] = [float(x) for x in v]
    return ds


@pytest.fixture()
def ds(fo_isolated):
    return with_vectors(three_raters(fo_isolated))


def engine_data(ds, **source):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.adapter import read_dataset, resolve_source

    fields = None if source.get("label_field") else source.get("rater_fields", FIELDS)
    return read_dataset(ds, resolve_source(ds, fields, source.get("label_field"), "rater_id"), columnar=False)


def test_bae_is_the_engine_on_the_per_sample_mean_vectors(ds):
    execute("compute_bae", ds, rater_fields=FIELDS, run_key="bae", embedding_attribute="emb")
    res = ds.load_run_results("bae")
    want = compute_bae(engine_data(ds), PER_SAMPLE)
    assert res.bae == pytest.approx(want.bae) and res.raters == ["r1", "r2", "r3"]
    assert res.true == want.true and np.allclose(res.model, want.model)
    # by hand: F_r1 = (0.75, 0.25), F_r2 = (0.5, 0.5) (per sample first, not over the 3 labels), F_r3 = (0, 1)
    assert res.model[0][1] == pytest.approx((0.75 * 0.5 + 0.25 * 0.5) / (math.hypot(0.75, 0.25) * math.hypot(0.5, 0.5)))
    assert res.model[1][2] == pytest.approx(1 / math.sqrt(2))
    true, model = np.array(res.true, float), np.array(res.model, float)
    assert res.bae == pytest.approx(1 - np.linalg.norm(model - true) / np.linalg.norm(true))
    cfg = ds.get_run_info("bae").config
    assert (cfg.threshold, cfg.distance, cfg.solver, cfg.cost, cfg.scope) == (0.5, None, "greedy", "soft", "global")
    assert cfg.embedding_attribute == "emb" and cfg.rater_fields == FIELDS and res.bae_config["scope"] == "global"
    assert not ds.has_field("raters_r1.detections.bae")   # nothing written on the labels


def test_one_field_layout_on_demo_data(fo_isolated, tmp_path):

    demo = load_coco(build_demo(tmp_path, n_images=6, seed=3, with_images=False), "bbox")
    ds, _ = make_dataset(fo_isolated, demo, layout="rater_attribute")
    onehot = {r: np.eye(len(demo.raters))[k] + 0.1 for k, r in enumerate(demo.raters)}
    for s in ds.iter_samples(autosave=True):
        for d in s["raters"].detections:
            d["embedding"] = onehot[d["rater_id"]].tolist()
    execute("compute_bae", ds, label_field="raters", rater_attribute="rater_id", run_key="b", scope="per_image")
    res = ds.load_run_results("b")
    want = compute_bae(engine_data(ds, label_field="raters"), onehot, BAEConfig(scope="per_image"))
    assert res.bae == pytest.approx(want.bae) and res.raters == demo.raters and res.n_images == 6
    # the operator reads columns; on one object per label, with the same per-sample means, the
    # engine gives the same numbers bit for bit
    data = engine_data(ds, label_field="raters")
    vectors = {i: v for ids, vs in zip(*ds.values(["raters.detections.id", "raters.detections.embedding"]))
               for i, v in zip(ids, vs)}
    per_sample = {}
    for im in data.images:
        rows = {}
        for a in im.annotations:
            rows.setdefault(im.base_rater(a.rater), []).append(np.asarray(vectors[a.id], float))
        for rater, vs in rows.items():
            per_sample.setdefault(rater, []).append(np.mean(vs, axis=0))
    exact = compute_bae(data, per_sample, BAEConfig(scope="per_image")).to_dict()
    assert (res.bae, res.true, res.model, res.n_annotations) == (exact["bae"], exact["true"], exact["model"],
                                                                 exact["n_annotations"])


def test_form_errors_overwrite_and_delete(ds):
    base = dict(rater_fields=FIELDS, run_key="b")
    assert errors(form("compute_bae", ds, **base, embedding_attribute="emb")) == {}
    assert "embedding_attribute" in errors(form("compute_bae", ds, **base))            # no label has "embedding"
    assert "scope" in errors(form("compute_bae", ds, **base, embedding_attribute="emb", scope="x"))
    assert "distance" in errors(form("compute_bae", ds, **base, embedding_attribute="emb", distance="oks"))
    execute("compute_bae", ds, **base, embedding_attribute="emb")
    assert "overwrite" in errors(form("compute_bae", ds, **base, embedding_attribute="emb"))
    with pytest.raises(Exception, match="confirm overwriting"):
        execute("compute_bae", ds, **base, embedding_attribute="emb")
    execute("compute_bae", ds, **base, embedding_attribute="emb", overwrite=True, threshold=0.9)
    assert ds.get_run_info("b").config.threshold == 0.9
    execute("delete_kalos_run", ds, run_key="b")
    assert "b" not in ds.list_runs()


def test_panel_shows_the_stored_matrices_and_recomputes_with_every_parameter(ds, fo_isolated):

    empty = fo_isolated.Dataset(f"kalos-empty-{uuid.uuid4().hex[:6]}")
    p = Panel(empty, "kalos_bae").call("on_load")
    assert {"empty_state", "open_operator"} <= p.rendered()
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == "@kalos/agreement/compute_bae"

    execute("compute_bae", ds, rater_fields=FIELDS, run_key="bae", embedding_attribute="emb", scope="per_image",
            solver="shm")
    res = ds.load_run_results("bae")
    p = Panel(ds, "kalos_bae").call("on_load")
    assert p.state["run_key"] == "bae" and {"summary", "true", "model", "difference", "maps"} <= p.rendered()
    (true,), (model,) = p.data["true"], p.data["model"]
    assert true["z"] == res.true and true["x"] == ["r1", "r2", "r3"] and np.allclose(model["z"], res.model)
    assert f"{res.bae:.4f}" in p.state["summary"] and "mean over samples" in p.state["summary"]
    links, labels, modelled = p.data["maps"]
    assert labels["ids"] == ["r1", "r2", "r3"] and len(links["x"]) == 9
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    params = prompt["params"]
    assert params["run_key"] == "bae" and params["rater_fields"] == FIELDS and params["embedding_attribute"] == "emb"
    assert (params["scope"], params["solver"], params["threshold"], params["cost"]) == ("per_image", "shm", 0.5, "soft")
