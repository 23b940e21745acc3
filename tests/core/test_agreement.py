"""The pipeline on small hand-checked data sets."""

import numpy as np
import pytest

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.data import session_row

FAST = dict(bootstrap=0)


def box(aid, rater, cat, x, y, w=10, h=10):
    return Annotation(aid, rater, cat, (x, y, w, h))


def dataset(*images, kind="box"):
    return MultiRaterDataset(list(images), {1: "cat", 2: "dog"}, kind)


def test_identical_raters_give_one():
    anns = [box(f"{r}{k}", r, 1 + k % 2, 20 * k, 5) for r in "abc" for k in range(4)]
    res = compute_agreement(dataset(make_image(1, 100, 100, "abc", anns)), AgreementConfig(**FAST))
    assert res.mean_alpha == 1.0 and res.global_alpha == 1.0
    assert set(res.status_of.values()) == {"agreed"}
    assert all(v == 0.0 for v in res.vitality.values())


def test_empty_images_count_as_perfect_and_enter_global_as_one_virtual_unit():
    disagree = make_image(1, 100, 100, "ab", [box(1, "a", 1, 0, 0), box(2, "b", 2, 0, 0)])
    empty = make_image(2, 100, 100, "ab", [])
    res = compute_agreement(dataset(disagree, empty), AgreementConfig(**FAST))
    assert res.per_image_alpha == {"1": 0.0, "2": 1.0}
    assert res.mean_alpha == 0.5
    # global matrix: [[1, NO], [2, NO]] -> n=4, o_cc = 2 (NO/NO), n_c = 1,1,2 -> (3*2 - 2)/(12 - 2)
    assert res.global_alpha == pytest.approx(0.4)


def test_hand_checked_three_raters():
    # unit 1: a,b,c boxes overlap (IoU >= .8), classes 1,1,2; unit 2: only a -> NO, NO
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 1, 1, 0), box(3, "c", 2, 0, 1), box(4, "a", 1, 50, 50)]
    res = compute_agreement(dataset(make_image(1, 100, 100, "abc", anns)), AgreementConfig(**FAST))
    assert res.mean_alpha == pytest.approx(2 / 22)
    assert res.unit_of[1] == res.unit_of[2] == res.unit_of[3] != res.unit_of[4]
    assert res.status_of[4] == "unmatched" and res.status_of[1] == "class_disagreement"
    # pair a-c on its own: [[1, 1], [2, NO]] -> -0.2
    assert res.collaboration["a"]["c"] == pytest.approx(-0.2)
    assert res.collaboration["c"]["a"] == res.collaboration["a"]["c"]
    # without b: [[1,1],[2,NO]] = -0.2 -> vitality of b = 2/22 + 0.2
    assert res.vitality["b"] == pytest.approx(2 / 22 + 0.2)
    assert res.class_difficulty["dog"] == pytest.approx(0.0)   # unit 1 alone: [[1],[1],[2]]


def test_unassigned_rater_is_missing_not_no_object():
    # c is assigned on image 2 only; on image 1 c's absence must not count against a and b
    im1 = make_image(1, 100, 100, "ab", [box(1, "a", 1, 0, 0), box(2, "b", 1, 0, 0)])
    im2 = make_image(2, 100, 100, "abc", [box(3, "a", 1, 0, 0), box(4, "b", 1, 0, 0), box(5, "c", 1, 0, 0)])
    res = compute_agreement(dataset(im1, im2), AgreementConfig(**FAST))
    assert res.global_alpha == 1.0 and res.mean_alpha == 1.0


def test_localisation_sensitivity_falls_with_a_stricter_threshold():
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 1, 3, 0)]   # IoU = 70/130 = 0.538
    res = compute_agreement(dataset(make_image(1, 100, 100, "ab", anns)),
                            AgreementConfig(lsa_thresholds=(0.5, 0.6), **FAST))
    assert res.lsa == {"0.5": 1.0, "0.6": pytest.approx(-0.5)}
    assert res.lsa_delta == pytest.approx(1.5)


def test_intra_rater_alpha_over_sessions():
    rows = (session_row("a", 0), session_row("a", 1), "b")
    anns = [box(1, rows[0], 1, 0, 0), box(2, rows[1], 1, 0, 0), box(3, rows[0], 1, 50, 50), box(4, "b", 1, 0, 0)]
    im = make_image(1, 100, 100, rows, anns, row_rater={rows[0]: "a", rows[1]: "a"})
    res = compute_agreement(dataset(im), AgreementConfig(**FAST))
    # session 0 drew an extra box that session 1 did not: [[1, 1], [1, NO]] -> 0
    assert res.intra_rater == {"a": pytest.approx(0.0)}


def test_bootstrap_ci_is_seeded():
    images = [make_image(k, 100, 100, "ab", [box(2 * k, "a", 1, 0, 0), box(2 * k + 1, "b", 1 + k % 2, 0, 0)])
              for k in range(20)]
    cfg = AgreementConfig(bootstrap=300, seed=3)
    a, b = compute_agreement(dataset(*images), cfg), compute_agreement(dataset(*images), cfg)
    assert a.mean_alpha_ci == b.mean_alpha_ci
    lo, hi = a.mean_alpha_ci
    assert lo <= a.mean_alpha <= hi and lo < hi


def test_result_json_contract():
    res = compute_agreement(dataset(make_image(7, 10, 10, "ab", [])), AgreementConfig(lsa_thresholds=(0.5,)))
    d = res.to_dict()
    for key in ("mean_alpha", "global_alpha", "per_image_alpha", "vitality", "class_difficulty",
                "collaboration", "lsa", "n_images", "n_annotations", "config"):
        assert key in d
    assert d["per_image_alpha"] == {"7": 1.0}


@pytest.mark.parametrize("bad", [dict(threshold=1.5), dict(solver="x"), dict(cost="y"), dict(lsa_thresholds=(2,))])
def test_config_is_validated(bad):
    with pytest.raises(ValueError):
        AgreementConfig(**bad)


def test_progress_callback_reaches_the_end():
    seen = []
    images = [make_image(k, 10, 10, "ab", []) for k in range(3)]
    compute_agreement(dataset(*images), AgreementConfig(**FAST), progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (3, 3)


def test_polygons_and_keypoints_run_through_the_same_pipeline():
    sq = lambda x: [[x, 0, x + 10, 0, x + 10, 10, x, 10]]
    poly = make_image(1, 100, 100, "ab", [Annotation(1, "a", 1, sq(0)), Annotation(2, "b", 1, sq(2))])
    assert compute_agreement(dataset(poly, kind="polygon"), AgreementConfig(**FAST)).mean_alpha == 1.0
    kp = make_image(1, 100, 100, "ab", [Annotation(1, "a", 1, [10, 10, 2, 20, 20, 2]),
                                        Annotation(2, "b", 1, [11, 10, 2, 20, 21, 2])])
    assert compute_agreement(dataset(kp, kind="keypoints"), AgreementConfig(**FAST)).mean_alpha == 1.0
    assert np.isclose(compute_agreement(dataset(kp, kind="keypoints"),
                                        AgreementConfig(threshold=0.999, **FAST)).mean_alpha, -0.5)


def test_oks_sigmas_are_reachable_from_the_config():
    # two 2-joint sets 5 px apart per joint inside 30 x 30 boxes: OKS depends on the sigmas
    kp = make_image(1, 100, 100, "ab", [Annotation(1, "a", 1, [10, 10, 2, 30, 30, 2], bbox=(5, 5, 30, 30)),
                                        Annotation(2, "b", 1, [15, 10, 2, 30, 35, 2], bbox=(5, 5, 30, 30))])
    data = dataset(kp, kind="keypoints")
    oks = dict(distance="oks", threshold=0.5, **FAST)
    loose = compute_agreement(data, AgreementConfig(keypoint_sigmas=(0.2, 0.2), **oks))
    strict = compute_agreement(data, AgreementConfig(keypoint_sigmas=(0.01, 0.01), **oks))
    assert loose.mean_alpha == 1.0 and strict.mean_alpha == -0.5          # one unit vs two
    assert loose.to_dict()["config"]["keypoint_sigmas"] == [0.2, 0.2]
    with pytest.raises(ValueError, match="2 joints"):
        compute_agreement(data, AgreementConfig(keypoint_sigmas=(0.1, 0.1, 0.1), **oks))
    with pytest.raises(ValueError, match="oks distance only"):
        compute_agreement(data, AgreementConfig(keypoint_sigmas=(0.1, 0.1), distance="mpjpe", **FAST))
    with pytest.raises(ValueError, match="positive numbers"):
        AgreementConfig(keypoint_sigmas=(0.1, -1.0))


def test_distance_options_must_be_parameters_of_the_similarity():
    from kalos_core.geometry import get_distance

    spec = get_distance("keypoints", "oks", sigmas=np.full(2, 0.2))
    assert spec.name == "oks" and spec.similarity.keywords["sigmas"].tolist() == [0.2, 0.2]
    with pytest.raises(ValueError, match="takes no option 'sigmas'"):
        get_distance("box", "iou", sigmas=[0.1])


def test_worker_processes_give_identical_results():
    from kalos_core.demo_data import make_synthetic_boxes
    from kalos_core.io import load_coco
    ds = load_coco(make_synthetic_boxes(n_images=80, n_raters=3, objects_per_image=6, seed=2), "bbox")
    cfg = AgreementConfig(bootstrap=50, lsa_thresholds=(0.3, 0.7))
    one, two = compute_agreement(ds, cfg, workers=1), compute_agreement(ds, cfg, workers=2)
    assert one.to_dict(include_labels=True) == two.to_dict(include_labels=True)
