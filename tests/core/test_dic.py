"""DIC between two pairwise-α matrices, clusters, aligned maps; a model as one more rater."""

import numpy as np
import pytest

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.dic import DICConfig, bae, clusters, compare_runs, procrustes_align
from kalos_core.agreement.model_rater import add_model_rater, rater_as_predictions

M = {"a": {"a": 1, "b": 0.8, "c": 0.7, "d": 0.1},
     "b": {"a": 0.8, "b": 1, "c": 0.65, "d": 0.2},
     "c": {"a": 0.7, "b": 0.65, "c": 1, "d": 0.3},
     "d": {"a": 0.1, "b": 0.2, "c": 0.3, "d": 1}}


def scaled(m, c):
    return {r: {q: c * v for q, v in row.items()} for r, row in m.items()}


def test_dic_of_a_matrix_with_itself_is_zero_and_the_maps_coincide():
    res = compare_runs(M, M)
    assert res.dic == 0.0 and res.procrustes_disparity == pytest.approx(0.0, abs=1e-12)
    assert max(res.shift.values()) == pytest.approx(0.0, abs=1e-9)
    assert res.clusters_first == res.clusters_second == [["a", "b", "c"], ["d"]]


def test_dic_is_scale_invariant_and_matches_the_formula():
    other = {r: {q: (v if {r, q} != {"a", "d"} else 0.6) for q, v in row.items()} for r, row in M.items()}
    d = compare_runs(M, other).dic
    m = np.array([[M[r][q] for q in "abcd"] for r in "abcd"], float)
    assert d == pytest.approx(np.sqrt(2 * 0.5 ** 2) / np.linalg.norm(m))
    assert compare_runs(scaled(M, 3.0), scaled(other, 3.0)).dic == pytest.approx(d)
    off = compare_runs(M, other, config=DICConfig(include_diagonal=False)).dic
    assert off > d


def test_raters_in_one_run_only_are_reported_and_thin_pairs_masked():
    second = {r: {q: v for q, v in row.items() if q != "d"} for r, row in M.items() if r != "d"}
    second["e"] = {"e": 1.0}
    res = compare_runs(M, second)
    assert res.raters == ["a", "b", "c"] and res.only_first == ["d"] and res.only_second == ["e"]
    n = {r: {q: (3 if {r, q} == {"a", "b"} else 50) for q in M if q != r} for r in M}
    res = compare_runs(M, scaled(M, 0.5), first_n=n, second_n=n)
    assert res.masked_pairs == [("a", "b")] and res.first[0][1] is None
    # the masked pair a-b is no link, but a and b stay connected through c
    assert res.clusters_first == [["a", "b", "c"], ["d"]]
    assert clusters(M, 0.68, mask=np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0] * 4, [0] * 4], bool)) == \
        [["a", "c"], ["b"], ["d"]]


def test_clusters_are_connected_components_above_the_level():
    assert clusters(M, 0.6) == [["a", "b", "c"], ["d"]]
    assert clusters(M, 0.75) == [["a", "b"], ["c"], ["d"]]


def test_procrustes_undoes_rotation_scale_and_shift():
    x = np.array([[0.0, 0], [1, 0], [0, 2], [3, 1]])
    rot = np.array([[0.0, -1], [1, 0]])
    aligned, disparity = procrustes_align(x, 2.5 * x @ rot + [4, -1])
    assert aligned == pytest.approx(x) and disparity == pytest.approx(0.0, abs=1e-12)


def test_bae_is_one_for_embeddings_that_reproduce_the_matrix():
    e = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
    assert bae({"a": {"a": 1, "b": 0.0}, "b": {"a": 0.0, "b": 1}}, e) == pytest.approx(1.0)


def box(aid, rater, cat, x, y):
    return Annotation(aid, rater, cat, (x, y, 10, 10))


def noisy_raters(n_images=12):
    rng = np.random.default_rng(0)
    images = []
    for i in range(n_images):
        anns = []
        for k in range(5):
            x, y = 15 * k, 10 + 5 * (i % 3)
            for r, s in (("a", 1.0), ("b", 3.0), ("c", 4.0)):
                if rng.random() < 0.85:
                    cat = 1 if rng.random() < 0.9 else 2
                    anns.append(box(f"{i}-{k}-{r}", r, cat, x + rng.normal(0, s), y + rng.normal(0, s)))
        images.append(make_image(i, 100, 100, "abc", anns))
    return MultiRaterDataset(images, {1: "cat", 2: "dog"}, "box")


def test_a_model_equal_to_a_rater_gets_that_raters_pairwise_alpha():
    ds = noisy_raters()
    with_model = add_model_rater(ds, rater_as_predictions(ds, "b", score=0.9), name="net", score_threshold=0.5)
    res = compute_agreement(with_model, AgreementConfig(bootstrap=0))
    assert res.models == ["net"]
    for other in ("a", "c"):
        assert res.collaboration["net"][other] == pytest.approx(res.collaboration["b"][other])
    assert res.collaboration["net"]["b"] == 1.0
    assert res.collaboration_n["net"]["a"] == 12
    # below the score threshold the model keeps nothing: every image is "nothing here"
    empty = add_model_rater(ds, rater_as_predictions(ds, "b", score=0.3), name="net", score_threshold=0.5)
    assert all(a.rater != "net" for im in empty.images for a in im.annotations)
    assert all("net" in im.raters for im in empty.images)
    with pytest.raises(ValueError):
        add_model_rater(ds, [], name="a")


def test_dic_between_runs_with_and_without_the_model():
    ds = noisy_raters()
    base = compute_agreement(ds, AgreementConfig(bootstrap=0))
    model = compute_agreement(add_model_rater(ds, rater_as_predictions(ds, "b"), name="net"),
                              AgreementConfig(bootstrap=0))
    res = compare_runs(base.collaboration, model.collaboration, base.collaboration_n, model.collaboration_n)
    assert res.dic == pytest.approx(0.0, abs=1e-12) and res.only_second == ["net"] and not res.masked_pairs
    strict = compare_runs(base.collaboration, model.collaboration, base.collaboration_n, model.collaboration_n,
                          DICConfig(min_shared=13))
    assert len(strict.masked_pairs) == 3 and np.isnan(strict.dic)
