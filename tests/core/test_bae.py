"""BAE (behaviour alignment, the multi_annotator_tendency_dic_bae paper's Eq. 7): hand-computed
values, invariance to rater names and image order, the declared parameters, the command line."""

import json
import math

import numpy as np
import pytest

from kalos_core import Annotation, MultiRaterDataset, make_image
from kalos_core.bae import BAEConfig, compare, compute_bae, rater_vectors
from kalos_core.cli import main
from kalos_core.dic import bae as dic_bae
from kalos_core.matching.params import MatchingConfig
from kalos_core.params import ParamError, params_of

S_TRUE = {"a": {"a": 1.0, "b": 0.8, "c": 0.2}, "b": {"a": 0.8, "b": 1.0, "c": 0.4},
          "c": {"a": 0.2, "b": 0.4, "c": 1.0}}
EMB = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 1.0]}


def box(aid, rater, cat, x, y, w=10, h=10):
    return Annotation(aid, rater, cat, (x, y, w, h))


def noisy(n_images=8, names=("a", "b", "c"), seed=0):
    """Three raters of growing box noise on the same objects (a and b close, c further off)."""
    rng = np.random.default_rng(seed)
    images, aid = [], 0
    for i in range(n_images):
        anns = []
        for k in range(4):
            for name, s in zip(names, (0.5, 1.5, 4.0)):
                aid += 1
                x, y = 20 * k + rng.normal(0, s), 10 + rng.normal(0, s)
                anns.append(box(aid, name, 1 + k % 2, x, y))
        images.append(make_image(i, 100, 100, list(names), anns))
    return MultiRaterDataset(images, {1: "A", 2: "B"}, "box")


def test_hand_computed_bae_of_a_three_rater_matrix():
    # S_model: cos(a, b) = 1/sqrt(2), cos(a, c) = 0, cos(b, c) = 1/sqrt(2); diagonals 1 in both
    c = 1 / math.sqrt(2)
    diff = math.sqrt(2 * ((c - 0.8) ** 2 + (0 - 0.2) ** 2 + (c - 0.4) ** 2))
    norm = math.sqrt(3 + 2 * (0.8 ** 2 + 0.2 ** 2 + 0.4 ** 2))          # sqrt(4.68)
    res = compare(S_TRUE, EMB)
    assert res.bae == pytest.approx(1 - diff / norm) == pytest.approx(0.752842, abs=1e-6)
    assert res.bae == pytest.approx(dic_bae(S_TRUE, EMB))                # the formula of kalos_core.dic
    assert res.raters == ["a", "b", "c"] and res.model[0][2] == pytest.approx(0.0)
    assert res.difference[1][2] == pytest.approx(abs(c - 0.4))
    # the model reproducing the structure: 1; scaling a rater's vector changes nothing (cosine)
    assert compare({"a": {"b": 0.0}, "b": {"a": 0.0}}, {"a": [1, 0], "b": [0, 3]}).bae == pytest.approx(1.0)


def test_a_pair_without_alpha_is_left_out_of_both_norms_and_unmatched_raters_reported():
    alphas = {"a": {"b": 0.8}, "b": {"a": 0.8, "c": 0.4}, "c": {"b": 0.4}}   # a and c share no image
    res = compare(alphas, {**EMB, "d": [1.0, 2.0]})
    c = 1 / math.sqrt(2)
    want = 1 - math.sqrt(2 * ((c - 0.8) ** 2 + (c - 0.4) ** 2)) / math.sqrt(3 + 2 * (0.8 ** 2 + 0.4 ** 2))
    assert res.bae == pytest.approx(want)
    assert res.masked_pairs == [["a", "c"]] and res.true[0][2] is None and res.model[0][2] is None
    assert res.only_embeddings == ["d"] and res.only_labels == []
    assert compare(S_TRUE, {"a": [1, 0], "b": [0, 1]}).only_labels == ["c"]


def test_identical_raters_end_to_end_known_answer():
    """Two raters with the same boxes: pairwise α = 1 (both scopes), so S_true is all ones."""
    anns = [box(k + 10 * j, r, 1, 20 * k, 5) for j, r in enumerate("ab") for k in range(3)]
    data = MultiRaterDataset([make_image(1, 100, 100, ["a", "b"], anns)], {1: "A"}, "box")
    for scope in ("global", "per_image"):
        orthogonal = compute_bae(data, {"a": [1.0, 0.0], "b": [0.0, 1.0]}, BAEConfig(scope=scope))
        assert orthogonal.true == [[1.0, 1.0], [1.0, 1.0]]
        assert orthogonal.bae == pytest.approx(1 - math.sqrt(2) / 2)     # ||[[0,1],[1,0]]|| / ||ones(2,2)||
        assert compute_bae(data, {"a": [2.0, 1.0], "b": [4.0, 2.0]}, BAEConfig(scope=scope)).bae == pytest.approx(1)
    assert orthogonal.n_images == 1 and orthogonal.n_annotations == 6 and orthogonal.config["scope"] == "per_image"


def test_invariant_to_rater_renaming_and_image_order():
    emb = {"a": [1.0, 0.2, 0.0], "b": [0.9, 0.4, 0.1], "c": [0.1, 0.3, 1.0]}
    base = compute_bae(noisy(), emb)
    assert 0 < base.bae < 1 and base.masked_pairs == []
    rename = {"a": "zed", "b": "yan", "c": "xia"}
    renamed = compute_bae(noisy(names=tuple(rename.values())), {rename[r]: v for r, v in emb.items()})
    assert renamed.bae == pytest.approx(base.bae, abs=1e-12)
    order = [2, 1, 0]   # xia, yan, zed in sorted order are c, b, a
    assert np.allclose(np.array(renamed.true, float), np.array(base.true, float)[np.ix_(order, order)])
    shuffled = noisy()
    shuffled.images = [shuffled.images[k] for k in np.random.default_rng(1).permutation(len(shuffled.images))]
    again = compute_bae(shuffled, emb)
    assert again.bae == pytest.approx(base.bae, abs=1e-12)
    assert np.allclose(np.array(again.true, float), np.array(base.true, float))


def test_per_sample_vectors_are_averaged_and_bad_vectors_refused():
    assert compare(S_TRUE, {"a": [[1, 0], [1, 0]], "b": [[2, 0], [0, 2]], "c": [0, 1]}).bae == \
        pytest.approx(compare(S_TRUE, EMB).bae)
    with pytest.raises(ValueError, match="zero vector"):
        rater_vectors({"a": [0.0, 0.0]})
    with pytest.raises(ValueError, match="differ in length"):
        rater_vectors({"a": [1.0, 0.0], "b": [1.0]})
    with pytest.raises(ValueError, match="two raters"):
        compare(S_TRUE, {"a": [1.0], "x": [1.0]})


def test_the_matching_parameters_are_the_agreement_declaration():
    """Threshold, distance, solver and cost: declared once (kalos_core.matching.params) and
    taken by BAE as they are; bad values are refused naming the parameter."""
    shared = {p.name: p for p in params_of(MatchingConfig)}
    mine = {p.name: p for p in params_of(BAEConfig)}
    assert all(mine[n] == p for n, p in shared.items())
    assert set(mine) - set(shared) == {"scope"}
    for bad in ({"threshold": 1.5}, {"solver": "nope"}, {"scope": "x"}):
        with pytest.raises(ParamError) as e:
            BAEConfig(**bad)
        assert e.value.param == next(iter(bad))


def coco_file(tmp_path):
    images = [{"id": i, "width": 100, "height": 100, "rater_list": ["a", "b"]} for i in (1, 2)]
    anns = [{"id": 10 * i + k + (5 if r == "b" else 0), "image_id": i, "category_id": 1, "rater_id": r,
             "bbox": [20 * k, 5, 10, 10]} for i in (1, 2) for r in "ab" for k in range(2)]
    p = tmp_path / "labels.json"
    p.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "cat"}]}))
    return p


def test_output_onto_the_embeddings_file_is_refused(tmp_path, capsys):
    labels, emb = coco_file(tmp_path), tmp_path / "emb.json"
    emb.write_text(json.dumps({"a": [1, 0], "b": [0, 1]}))
    with pytest.raises(SystemExit) as e:
        main(["bae", str(labels), "--embeddings", str(emb), "--output", str(emb)])
    assert e.value.code == 2 and "is the input file" in capsys.readouterr().err
    assert json.loads(emb.read_text()) == {"a": [1, 0], "b": [0, 1]}


def test_cli_end_to_end(tmp_path, capsys):
    labels, emb, out = coco_file(tmp_path), tmp_path / "emb.json", tmp_path / "bae.json"
    emb.write_text(json.dumps({"a": [[1, 0], [1, 0]], "b": [0, 1]}))
    assert main(["bae", str(labels), "--embeddings", str(emb), "--threshold", "0.5", "--output", str(out)]) == 0
    assert "BAE 0.2929" in capsys.readouterr().out
    d = json.loads(out.read_text())
    assert d["bae"] == pytest.approx(1 - math.sqrt(2) / 2) and d["raters"] == ["a", "b"]
    assert d["config"] == {"threshold": 0.5, "distance": None, "solver": "greedy", "cost": "soft", "scope": "global"}
    assert set(d) >= {"true", "model", "difference", "map_true", "map_model", "masked_pairs", "only_labels"}
    # no embeddings, unreadable embeddings, a bad parameter: usage errors (exit 2); no common rater: error line
    for argv in (["bae", str(labels)], ["bae", str(labels), "--embeddings", str(tmp_path / "nope.json")],
                 ["bae", str(labels), "--embeddings", str(emb), "--scope", "x"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    emb.write_text(json.dumps({"x": [1, 0], "y": [0, 1]}))
    assert main(["bae", str(labels), "--embeddings", str(emb)]) == 2
    assert "error: BAE needs two raters" in capsys.readouterr().err


# -- issue 22: bad input -------------------------------------------------------------------------
TABLE_EMB = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}   # the bad-input table's embeddings


@pytest.mark.parametrize("images, why", [
    ([], "no images: nothing to measure"),
    ([make_image(i, 100, 100, ["a"], [box(i, "a", 1, 10, 10)]) for i in range(2)], "two or more raters"),
    ([make_image(i, 100, 100, [r], [box(i, r, 1, 10, 10)]) for i, r in enumerate("abc")], "two or more raters"),
])
def test_nothing_to_measure_is_refused(images, why):
    from kalos_core.io import InvalidInputError

    with pytest.raises(InvalidInputError, match=why):
        compute_bae(MultiRaterDataset(images, {1: "A"}, "box"), TABLE_EMB)


def test_identical_three_raters_give_s_true_all_ones_and_the_hand_computed_bae():
    """α = 1 for every pair; S_model off-diagonals 0, 1/√2, 1/√2: ||S - 1||_F = sqrt(2 (1 + 2 (1 - 1/√2)²)), ||1||_F = 3."""
    anns = [box(k + 10 * j, r, 1, 20 * k, 5) for j, r in enumerate("abc") for k in range(3)]
    data = MultiRaterDataset([make_image(1, 100, 100, list("abc"), anns)], {1: "A"}, "box")
    res = compute_bae(data, TABLE_EMB)
    assert res.true == [[1.0] * 3] * 3
    want = 1 - math.sqrt(2 * (1 + 2 * (1 - 1 / math.sqrt(2)) ** 2)) / 3
    assert res.bae == pytest.approx(want) == pytest.approx(0.489755, abs=1e-6)
    # perfect agreement and parallel representations: BAE 1; the true map is one point (no disparity: null)
    same = compute_bae(data, {"a": [1.0, 1.0], "b": [2.0, 2.0], "c": [3.0, 3.0]})
    assert same.bae == pytest.approx(1.0, abs=1e-12)
    assert same.map_true == {r: [0.0, 0.0] for r in "abc"}
    d = same.to_dict()
    assert d["procrustes_disparity"] is None
    json.dumps(d, allow_nan=False)
