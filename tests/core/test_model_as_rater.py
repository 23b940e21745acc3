"""A model as one more rater: its pairwise α and vitality against the humans, engine and CLI."""

import json

import numpy as np
import pytest

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.cli import main
from kalos_core.agreement.model_rater import add_model_rater, compare_model, rater_as_predictions
from tests.core.helpers.agreement_reference import reference_agreement



def noisy_raters(n_images=12):
    """Three raters ``a``, ``b``, ``c`` drawing jittered boxes of two classes, seeded."""
    rng = np.random.default_rng(0)
    images = []
    for i in range(n_images):
        anns = []
        for k in range(4):
            x, y = rng.uniform(0, 80, 2)
            for r, s in zip("abc", (0.5, 1.5, 3.0)):
                if rng.random() < 0.85:
                    cat = 1 if rng.random() < 0.9 else 2
                    anns.append(Annotation(f"{i}-{k}-{r}", r, cat, (x + rng.normal(0, s), y + rng.normal(0, s), 10, 10)))
        images.append(make_image(i, 100, 100, "abc", anns))
    return MultiRaterDataset(images, {1: "cat", 2: "dog"}, "box")

M = {"a": {"b": 0.8, "c": 0.6}, "b": {"a": 0.8, "c": 0.7}, "c": {"a": 0.6, "b": 0.7},
     "net": {"a": 0.3, "b": 0.4, "c": 0.5}}


def test_the_verdict_compares_mean_model_human_with_mean_human_human_alpha():
    out = compare_model("net", M, {"net": -0.1}, ["net"])
    assert out["alpha_with_humans"] == {"a": 0.3, "b": 0.4, "c": 0.5}
    assert out["mean_model_human"] == pytest.approx(0.4) and out["mean_human_human"] == pytest.approx(0.7)
    assert out["disagrees_more"] is True
    assert "disagrees with the humans more than they disagree with each other" in out["verdict"]
    assert "0.400 vs mean human–human α 0.700" in out["verdict"] and "vitality -0.100" in out["verdict"]
    good = {**M, "net": {"a": 0.95, "b": 0.9, "c": 0.85}}
    assert compare_model("net", good, None, ["net"])["disagrees_more"] is False
    assert "less than" in compare_model("net", good, None, ["net"])["verdict"]


def test_a_model_copying_a_rater_is_compared_with_that_raters_numbers():
    ds = noisy_raters()
    res = compute_agreement(add_model_rater(ds, rater_as_predictions(ds, "b"), name="net"),
                            AgreementConfig(bootstrap=0))
    cmp = res.model_comparison["per_image"]["net"]
    assert cmp["alpha_with_humans"]["a"] == pytest.approx(res.collaboration["b"]["a"])
    assert cmp["alpha_with_humans"]["b"] == 1.0
    humans = [res.collaboration["a"]["b"], res.collaboration["a"]["c"], res.collaboration["b"]["c"]]
    assert cmp["mean_human_human"] == pytest.approx(sum(humans) / 3)
    assert cmp["vitality"] == res.vitality["net"]
    assert set(res.model_comparison) == {"per_image", "global"}
    assert res.to_dict()["model_comparison"]["global"]["net"]["verdict"].startswith("net (model)")
    # the reference implementation reports the same comparison
    ref = reference_agreement(add_model_rater(ds, rater_as_predictions(ds, "b"), name="net"),
                                      AgreementConfig(bootstrap=0))
    assert ref.model_comparison["per_image"]["net"]["mean_model_human"] == pytest.approx(cmp["mean_model_human"])


def test_no_model_no_comparison():
    assert compute_agreement(noisy_raters(), AgreementConfig(bootstrap=0)).model_comparison == {}


def _coco(ds):
    images = [{"id": im.id, "width": im.width, "height": im.height, "rater_list": list(im.raters)} for im in ds.images]
    anns = [{"id": k, "image_id": im.id, "category_id": a.category, "rater_id": a.rater, "bbox": list(a.geometry)}
            for k, (im, a) in enumerate((im, a) for im in ds.images for a in im.annotations)]
    return {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}


def test_cli_predictions_join_as_a_model_rater(tmp_path, capsys):
    ds = noisy_raters()
    src, preds, out = tmp_path / "raters.json", tmp_path / "net.json", tmp_path / "out.json"
    src.write_text(json.dumps(_coco(ds)))
    kept = [{**p, "bbox": list(p["bbox"]), "score": 0.9} for p in rater_as_predictions(ds, "b")]
    dropped = [{**p, "score": 0.2} for p in kept]   # below --score-threshold: never a label
    preds.write_text(json.dumps(kept + dropped))
    assert main(["agreement", str(src), "--task", "bbox", "--predictions", str(preds), "--score-threshold", "0.5",
                 "--bootstrap", "0", "--output", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["models"] == ["net"]
    assert res["collaboration"]["net"]["a"] == pytest.approx(res["collaboration"]["b"]["a"])
    assert res["collaboration"]["net"]["b"] == 1.0
    assert res["n_annotations"] == sum(len(im.annotations) for im in ds.images) + len(kept)
    printed = capsys.readouterr().out
    assert "net (model) disagrees with the humans" in printed
    assert "pairwise alpha (* model)" in printed and "\n  net*" in printed and "\n  net (model) " in printed
    assert main(["agreement", str(src), "--predictions", str(preds), "--model-name", "a", "--bootstrap", "0"]) == 2
    assert "taken" in capsys.readouterr().err
