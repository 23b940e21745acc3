"""compute_mask_agreement on a real database: one Segmentation field per rater, masks in the
database and as 8-bit PNG files on disk (as FiftyOne and CVAT write them); the per-sample α and
the consensus Segmentation are the engine's; the run deletes what it wrote; a colour PNG is
refused by name with nothing written; the panel's bars, its click and its Recompute."""

import uuid

import numpy as np
import pytest
from PIL import Image

from kalos_core.masks import MaskConfig, compute_masks, masks_dataset
from tests.fiftyone.helpers import Panel, refused, run_operator

RATERS = ("ann", "bob", "cy")


def class_map(shift, car=True):
    m = np.zeros((30, 40), np.uint8)
    m[4:20, 5 + shift:25 + shift] = 1
    if car:
        m[8:12, 10:16] = 2
    return m


@pytest.fixture()
def masks_ds(fo_isolated, tmp_path):
    """s1: masks in the database; s2: mask_path PNGs; s3: bob has no mask (missing)."""
    fo = fo_isolated
    ds = fo.Dataset(f"kalos-masks-{uuid.uuid4().hex[:8]}")
    maps = {}
    samples = []
    for k, name in enumerate(("s1", "s2", "s3")):
        s = fo.Sample(filepath=f"/nonexistent/{name}.jpg")
        for j, r in enumerate(RATERS):
            if name == "s3" and r == "bob":
                continue
            m = class_map(j + k, car=(r != "cy" or k != 1))
            maps.setdefault(r, {})[name] = m
            if name == "s2":
                path = tmp_path / r / f"{name}.png"
                path.parent.mkdir(exist_ok=True)
                Image.fromarray(m, mode="L").save(path)
                s[f"seg_{r}"] = fo.Segmentation(mask_path=str(path))
            else:
                s[f"seg_{r}"] = fo.Segmentation(mask=m)
        samples.append(s)
    ds.add_samples(samples)
    yield ds, maps, tmp_path
    ds.delete()


def test_the_run_writes_the_engines_alpha_and_consensus_and_deletes_them(masks_ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import run_store

    ds, maps, _ = masks_ds
    run_operator("compute_mask_agreement", ds, mask_fields=[f"seg_{r}" for r in RATERS], run_key="m1",
                 classes=["bg", "road", "car"], probabilities=True)
    by_name = {n: {r: maps[r][n] for r in maps if n in maps[r]} for n in ("s1", "s2", "s3")}
    flat = {r: {n: m[r] for n, m in by_name.items() if r in m} for r in RATERS}
    expected = compute_masks(masks_dataset(flat), flat, MaskConfig(classes=("bg", "road", "car"), probabilities=True))
    stored = ds.load_run_results("m1")
    assert stored.alpha == pytest.approx(expected.alpha) and stored.pairs.keys() == expected.pairs.keys()
    names = dict(zip(ds.values("id"), (p.split("/")[-1][:2] for p in ds.values("filepath"))))
    alpha = dict(zip(ds.values("id"), ds.values("m1_alpha")))
    rows = {row["image"]: row["alpha"] for row in expected.per_image}
    assert {names[i]: a for i, a in alpha.items()} == pytest.approx(rows)
    low = ds.sort_by("m1_alpha").first()
    assert low["m1_alpha"] == min(rows.values())
    for sample in ds:
        assert np.array_equal(sample["m1_consensus"].mask, expected.consensus[names[sample.id]])
    heat = ds.match({"filepath": {"$regex": "s1"}}).first()["m1_disagreement"]
    assert heat.range == [0, 100] and heat.map[4, 5] == 33 and heat.map[0, 0] == 0   # ann road, bob and cy not
    prob = ds.match({"filepath": {"$regex": "s1"}}).first()["m1_probability"]
    assert prob.map.shape == (30, 40) and np.array_equal(prob.map, expected.probability["s1"])
    run_store.delete_run(ds, "m1")
    assert not any(ds.has_sample_field(f"m1_{f}") for f in ("alpha", "consensus", "disagreement", "probability"))


def test_a_colour_png_is_refused_by_name_and_nothing_is_written(masks_ds):
    ds, _, tmp_path = masks_ds
    bad = tmp_path / "ann" / "s2.png"
    Image.new("RGB", (40, 30)).save(bad)
    refused("compute_mask_agreement", ds, "ann/s2.png: a RGB image, not a class map",
            mask_fields=[f"seg_{r}" for r in RATERS], run_key="m2")


def test_the_operator_runs_from_python_as_the_docs_show(masks_ds):
    import fiftyone.operators as foo

    ds, _, _ = masks_ds
    op = foo.get_operator("@kalos/agreement/compute_mask_agreement")
    result = op(ds, mask_fields=[f"seg_{r}" for r in RATERS], run_key="py", consensus="majority", boundary=False)
    assert ds.sort_by("py_alpha").first()["py_alpha"] == min(row["alpha"] for row in result.per_image)
    assert ds.get_run_info("py").config.method == "kalos_masks"


def test_fewer_than_two_mask_fields_is_a_form_error(masks_ds):
    ds, _, _ = masks_ds
    refused("compute_mask_agreement", ds, "at least two Segmentation fields", mask_fields=["seg_ann"],
            run_key="m3")


def test_an_rgb_mask_array_is_refused_naming_sample_and_field(masks_ds, fo_isolated):
    ds, _, _ = masks_ds
    sample = ds.first()
    sample["seg_cy"] = fo_isolated.Segmentation(mask=np.zeros((30, 40, 3), np.uint8))
    sample.save()
    refused("compute_mask_agreement", ds, f"sample {sample.id}, field seg_cy: a mask of shape (30, 40, 3)",
            mask_fields=[f"seg_{r}" for r in RATERS], run_key="m4")


def test_the_panel_draws_class_alpha_and_rater_bars_and_a_click_shows_the_disputed_samples(masks_ds):
    ds, _, _ = masks_ds
    fields = [f"seg_{r}" for r in RATERS]
    run_operator("compute_mask_agreement", ds, mask_fields=fields, run_key="m5", classes=["bg", "road", "car"])
    res = ds.load_run_results("m5")
    p = Panel(ds, "kalos_masks").call("on_load")
    assert p.state["run_key"] == "m5" and {"classes", "raters"} <= p.rendered()
    (bars,) = p.data["classes"]
    assert bars["x"] == ["bg", "road", "car"] and bars["y"] == pytest.approx(list(res.alpha_per_class.values()))
    sens, spec = p.data["raters"]
    assert sens["x"] == list(RATERS) and sens["y"] == pytest.approx([res.per_rater[r]["0"]["sensitivity"]
                                                                     for r in RATERS])
    car = sorted((row["alpha_per_class"]["2"], row["image"]) for row in res.per_image
                 if row["alpha_per_class"].get("2") is not None and row["alpha_per_class"]["2"] < 1)
    view = p.call("on_click_class", id="2").view()
    assert view.values("id") == [i for _, i in car] and len(car) == 1       # only s2: cy left the car out
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["params"]["mask_fields"] == fields and prompt["params"]["classes"] == ["bg", "road", "car"]


def test_without_declared_classes_the_fields_mask_targets_name_them(masks_ds):
    """seg_ann names 0, 1, 2; seg_cy takes the dataset's default targets (1, 2); seg_bob names 2
    otherwise ("truck"): 0 and 1 are named, 2 (named two ways) stays a number."""
    ds, _, _ = masks_ds
    ds.default_mask_targets = {1: "road", 2: "car"}
    ds.mask_targets = {"seg_ann": {0: "bg", 1: "road", 2: "car"}, "seg_bob": {1: "road", 2: "truck"}}
    run_operator("compute_mask_agreement", ds, mask_fields=[f"seg_{r}" for r in RATERS], run_key="m6")
    assert ds.load_run_results("m6").classes == {"0": "bg", "1": "road", "2": "2"}
    ds.mask_targets = {}
    run_operator("compute_mask_agreement", ds, mask_fields=[f"seg_{r}" for r in RATERS], run_key="m7")
    assert ds.load_run_results("m7").classes == {"0": "0", "1": "road", "2": "car"}
