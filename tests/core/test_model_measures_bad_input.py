"""The companion measures (label convergence, noise-aware evaluation, fit-noise, simulate) and
model-as-rater predictions under each class of bad or unusual input: a clear error naming the
field, prediction or rater at fault, or a right (hand-checked) answer; never a bare NaN in JSON.

The data are hand-built: three images with three 20x20 boxes each, every rater drawing the
same objects (``identical``) or shifted by its index in x (``shifted``).
"""

import json
import re

import numpy as np
import pytest

from kalos_core.agreement.model_rater import add_model_rater
from kalos_core.cli import main
from kalos_core.convergence import ConvergenceConfig, compute_convergence
from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.noise.fit import fit_noise_profile
from kalos_core.noise.generator import reference_from_dataset
from kalos_core.noise.simulate_measure import MAX_RATERS, SimulateConfig
from kalos_core.noise_aware import NoiseAwareConfig, noise_aware_evaluation
from kalos_core.params import ParamError

OBJECTS = [(5.0, 1), (40.0, 2), (70.0, 1)]


def dataset(raters=("a", "b"), shift=0.0, n_images=3, listed=()) -> MultiRaterDataset:
    """``raters`` draw every object, rater k shifted by ``k * shift`` px in x; ``listed`` raters
    are on every image but draw nothing."""
    images, aid = [], 1
    for i in range(1, n_images + 1):
        anns = []
        for k, r in enumerate(raters):
            for x, c in OBJECTS:
                anns.append(Annotation(aid, r, c, (x + k * shift, 10.0 + i, 20.0, 20.0)))
                aid += 1
        images.append(make_image(i, 100, 100, (*raters, *listed), anns))
    return MultiRaterDataset(images, {1: "cat", 2: "dog"}, "box")


def predictions(ds, rater="a", score=0.9):
    return [{"id": f"p{a.id}", "image_id": im.id, "category_id": a.category, "bbox": list(a.geometry),
             "score": score} for im in ds.images for a in im.annotations if a.rater == rater]


def no_nan(d) -> None:
    """The dict serialises as strict JSON (no NaN / Infinity token)."""
    json.dumps(d, allow_nan=False)


# -- predictions: one check for every reader -------------------------------------------------
BAD_PREDICTIONS = {
    "no category_id": (lambda p: p.pop("category_id"), "needs an integer 'category_id'"),
    "category_id text": (lambda p: p.update(category_id="cat"), "needs an integer 'category_id'"),
    "score NaN": (lambda p: p.update(score=float("nan")), "finite number in [0, 1]"),
    "score < 0": (lambda p: p.update(score=-0.5), "not a confidence in [0, 1]"),
    "score > 1": (lambda p: p.update(score=1.5), "not a confidence in [0, 1]"),
    "score text": (lambda p: p.update(score="high"), "finite number in [0, 1]"),
    "bbox short": (lambda p: p.update(bbox=[1, 2, 3]), "valid 'bbox'"),
    "bbox negative width": (lambda p: p.update(bbox=[1, 2, -3, 4]), "valid 'bbox'"),
    "unknown image": (lambda p: p.update(image_id=99), "image_id 99 is not an image"),
}


def _run_convergence(ds, preds):
    return compute_convergence(ds, ConvergenceConfig(bootstrap=0), predictions=preds)


def _run_noise_aware(ds, preds):
    return noise_aware_evaluation(ds, preds, "a")


def _run_model_rater(ds, preds):
    return add_model_rater(ds, preds)


READERS = {"convergence": _run_convergence, "noise-aware": _run_noise_aware, "model-as-rater": _run_model_rater}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", BAD_PREDICTIONS)
def test_a_bad_prediction_is_refused_naming_its_id_and_image(reader, case):
    ds = dataset(shift=1.0)
    preds = predictions(ds)
    change, message = BAD_PREDICTIONS[case]
    assert preds[4]["id"] == "p8" and preds[4]["image_id"] == 2
    change(preds[4])
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        READERS[reader](ds, preds)
    assert "1 invalid prediction(s)" in str(e.value)
    assert "prediction 'p8' (image " in str(e.value)


def test_model_as_rater_keeps_a_missing_score_as_one():
    ds = dataset(shift=1.0)
    preds = predictions(ds)
    for p in preds:
        del p["score"]
    out = add_model_rater(ds, preds)
    assert sum(a.rater == "model" for im in out.images for a in im.annotations) == 9


# -- identical raters: the known answers -----------------------------------------------------
def test_identical_raters_give_map_100_and_eq1_never_above_100():
    res = compute_convergence(dataset(("a", "b", "c")), ConvergenceConfig(bootstrap=20, fraction=0.7))
    d = res.to_dict()
    no_nan(d)
    assert d["full_set"]["map"] == 100.0
    assert d["alpha"]["full_set_alpha"] == pytest.approx(1.0)
    # Eq. 1 maps alpha 1 to 103.3 %: an mAP, so clipped to 100 (it was 103.3 before)
    assert d["alpha"]["eq1"]["mean"] == 100.0 and d["alpha"]["eq1"]["ci_normal"][1] == 100.0


@pytest.mark.parametrize("shift", [0.0, 1.0, 3.0])
def test_noise_aware_bounds_contain_the_ap_and_identical_raters_fit_no_noise(shift):
    ds = dataset(shift=shift)
    preds = predictions(dataset(("a", "b"), shift=2.0), rater="b")   # a model 2 px off
    res = noise_aware_evaluation(ds, preds, "a")
    d = res.to_dict()
    no_nan(d)
    for key, v in d["ap"].items():
        assert v["lower"] <= v["ap"] <= v["upper"], key
    if shift == 0.0:   # no noise: sigma 0 (it was NaN), every bound equals the AP
        assert set(d["noise"]["sigma"].values()) == {0.0} and set(d["noise"]["M"].values()) == {0.0}
        assert all(v["lower"] == v["ap"] == v["upper"] for v in d["ap"].values())
    assert d["by_size"]["large"]["50"] == {"lower": None, "ap": None, "upper": None}   # no large boxes


# -- raters that exist nowhere, one rater, no labels -----------------------------------------
@pytest.mark.parametrize("run, message", [
    (lambda ds: compute_convergence(ds, ConvergenceConfig(bootstrap=0, raters=("a", "zz"))),
     "raters: 'zz' is not a rater of the data; its raters are: a, b"),
    (lambda ds: noise_aware_evaluation(ds, predictions(ds), "zz"), "reference rater: 'zz' is not a rater"),
    (lambda ds: noise_aware_evaluation(ds, predictions(ds), "a", noise_raters=["yy", "zz"]),
     "noise raters: 'yy', 'zz' are not raters of the data; its raters are: a, b"),
    (lambda ds: fit_noise_profile(ds, reference_rater="zz"), "reference_rater: 'zz' is not a rater"),
    (lambda ds: reference_from_dataset(ds, rater="zz"), "reference_rater: 'zz' is not a rater"),
])
def test_unknown_rater_names_are_refused_listing_the_raters(run, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        run(dataset(shift=1.0))


@pytest.mark.parametrize("run", [
    lambda ds: compute_convergence(ds, ConvergenceConfig(bootstrap=0)),
    lambda ds: noise_aware_evaluation(ds, predictions(ds), "a"),
    lambda ds: fit_noise_profile(ds),
])
def test_one_rater_is_refused(run):
    with pytest.raises(ValueError, match="need at least 2 distinct raters|need a rater besides the reference"):
        run(dataset(("a",)))


def test_no_labels_are_refused_and_a_silent_rater_scores_zero():
    empty = dataset(("a", "b"), n_images=3)
    empty = MultiRaterDataset([im.__class__(**{**im.__dict__, "annotations": []}) for im in empty.images],
                              empty.categories, "box")
    with pytest.raises(ValueError, match="drew no labels"):
        compute_convergence(empty, ConvergenceConfig(bootstrap=0))
    with pytest.raises(ValueError, match="no labels"):
        fit_noise_profile(empty)
    # a rater listed on every image who labels nothing: each pair with it has mAP 0 (a right answer)
    d = compute_convergence(dataset(("a", "b"), listed=("c",)), ConvergenceConfig(bootstrap=0)).to_dict()
    assert {tuple(p["raters"]): p["full_set"]["map"] for p in d["pairs"]} == \
        {("a", "b"): 100.0, ("a", "c"): 0.0, ("b", "c"): 0.0}


# -- integer options: declared bounds, the same in the CLI, Python and the forms ---------------
@pytest.mark.parametrize("config, field, value", [
    (ConvergenceConfig, "bootstrap", 10_001), (ConvergenceConfig, "bootstrap", -1),
    (ConvergenceConfig, "bootstrap", 10 ** 20), (NoiseAwareConfig, "grid_points", 101),
    (NoiseAwareConfig, "quad_nodes", 17), (SimulateConfig, "n_raters", MAX_RATERS + 1),
    (SimulateConfig, "schools", (60, 41)), (SimulateConfig, "schools", (10 ** 11,)),
])
def test_enormous_or_negative_counts_are_refused_naming_the_parameter(config, field, value):
    with pytest.raises(ParamError) as e:
        config(**{field: value})
    assert e.value.param == field


def test_bootstrap_bound_is_a_cli_usage_error(tmp_path, capsys):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"images": [{"id": 1, "width": 10, "height": 10}], "annotations": [],
                                "categories": []}))
    with pytest.raises(SystemExit) as e:
        main(["convergence", str(path), "--bootstrap", "99999999999999999999"])
    assert e.value.code == 2 and "bootstrap must be in [0, 10000]" in capsys.readouterr().err


# -- many raters --------------------------------------------------------------------------------
def test_fifty_raters_on_one_image_give_every_pair():
    """(Its time is a benchmark's business, not a unit test's: benchmarks/many_raters.py.)"""
    ds = dataset(tuple(f"r{k:02d}" for k in range(50)), shift=0.2, n_images=1)
    d = compute_convergence(ds, ConvergenceConfig(bootstrap=0, alpha=False)).to_dict()
    assert len(d["pairs"]) == 50 * 49 // 2
    no_nan(d)
    assert np.isfinite(d["full_set"]["map"])
