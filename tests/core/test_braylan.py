"""Braylan's item-level agreement (kalos_core.calibration.braylan): hand-computed items, the
conventions of the paper's Table 1, the CLI contract, and the LVIS subset."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import gaussian_kde, ks_2samp, mannwhitneyu

from kalos_core import load_coco
from kalos_core.calibration.braylan import (CONVENTIONS, BraylanConfig, alpha_from_samples, annotation_sets,
                                            auc_de_above_do, box_distance, braylan_agreement, draw_de_pairs,
                                            kde_threshold, measure, set_distances, sigma_from_samples)
from kalos_core.cli import main
from kalos_core.conventions import conventions_of
from kalos_core.data import Annotation, MultiRaterDataset, make_image
from kalos_core.demo_data import build_demo
from kalos_core.params import ParamError

REPO = Path(__file__).resolve().parents[2]
CONTRACT_KEYS = {"alpha", "auc", "sigma", "ks", "n_do", "n_de"}


def corners(*boxes):
    """COCO (x, y, w, h) boxes -> the engine's inclusive pixel corners."""
    return np.array([(x, y, x + w, y + h) for x, y, w, h in boxes], float)


def box_set_data(images):
    """A box data set from ``{image id: {rater: [(x, y, w, h), ...]}}`` (every listed rater assigned)."""
    recs, k = [], 0
    for iid, by_rater in images.items():
        anns = []
        for r, boxes in by_rater.items():
            for b in boxes:
                anns.append(Annotation(k, r, 1, tuple(float(v) for v in b)))
                k += 1
        recs.append(make_image(iid, 640, 480, list(by_rater), anns))
    return MultiRaterDataset(recs, {1: "thing"}, "box")


def pair_distance(a_boxes, b_boxes, name, floor=False):
    data = box_set_data({0: {"a": a_boxes, "b": b_boxes}})
    sets = annotation_sets(data)
    return float(set_distances(sets, sets.do_a, sets.do_b, name, floor)[0])


# -- single boxes, by hand ----------------------------------------------------------------------

def test_box_distances_by_hand_with_inclusive_pixel_areas():
    a = corners((0, 0, 9, 9))                  # pixels 0..9: area 10 x 10 = 100
    shifted = corners((5, 0, 9, 9))            # overlap 5 x 10 = 50, union 150, hull 15 x 10 = union
    far = corners((20, 0, 9, 9))               # disjoint: hull 30 x 10 = 300, union 200
    assert box_distance("iou", a, shifted)[0] == pytest.approx(2 / 3)
    assert box_distance("giou", a, shifted)[0] == pytest.approx(2 / 3)
    assert box_distance("iou", a, far)[0] == pytest.approx(1.0)
    assert box_distance("giou", a, far)[0] == pytest.approx(1 + 100 / 300)     # unrescaled: above 1
    # L2: both corners move by (5, 0): RMSE sqrt(25 / 2) each, summed, / 20
    assert box_distance("l2", a, shifted)[0] == pytest.approx(2 * np.sqrt(12.5) / 20)
    assert box_distance("l2", a, far)[0] == pytest.approx(2 * np.sqrt(200) / 20)   # unbounded (> 1)
    for name in ("iou", "giou", "l2"):
        assert box_distance(name, a, a)[0] == 0.0


def test_touching_boxes_share_a_pixel_column():
    # (0,0,9,9) and (9,0,9,9) share the column x = 9 under the inclusive convention: 10 / 190
    assert box_distance("iou", corners((0, 0, 9, 9)), corners((9, 0, 9, 9)))[0] == pytest.approx(1 - 10 / 190)
    # a zero-size box is one pixel, identical to itself
    assert box_distance("iou", corners((3, 4, 0, 0)), corners((3, 4, 0, 0)))[0] == 0.0


# -- multi-object distance ---------------------------------------------------------------------

def test_multi_object_distance_is_the_pooled_mean_of_nearest_neighbours():
    a = [(0, 0, 9, 9), (100, 100, 9, 9)]
    b = [(0, 0, 9, 9)]
    # nearest distances: a1 -> b1 0, a2 -> b1 1, b1 -> a1 0; pooled mean 1/3
    # (the paper's (Δ(A,B) + Δ(B,A)) / 2 would give (0.5 + 0) / 2 = 0.25)
    assert pair_distance(a, b, "iou") == pytest.approx(1 / 3)
    assert pair_distance(b, a, "iou") == pytest.approx(1 / 3)
    # giou: a2 -> b1 is 1 + (hull - union) / hull for disjoint boxes
    hull, union = 110 * 110, 200
    assert pair_distance(a, b, "giou") == pytest.approx((1 + (hull - union) / hull) / 3)
    assert pair_distance(a, b, "count") == 1.0


def test_empty_sides():
    box = [(0, 0, 9, 9)]
    for name in ("iou", "giou", "l2"):
        assert pair_distance(box, [], name) == 1.0
        assert pair_distance([], box, name) == 1.0
        assert pair_distance([], [], name) == 0.0
    assert pair_distance(box * 3, [], "count") == 3.0     # count: the count difference, not 1
    assert pair_distance([], [], "count") == 0.0


def test_vectorised_set_distances_equal_a_plain_loop():
    rng = np.random.default_rng(5)
    images = {}
    for i in range(12):
        images[i] = {r: [tuple(rng.uniform(0, 200, 2)) + tuple(rng.uniform(0, 60, 2))
                         for _ in range(rng.integers(0, 4))] for r in ("a", "b", "c")}
    sets = annotation_sets(box_set_data(images))
    sa, sb = draw_de_pairs(sets, 60, np.random.default_rng(1))
    sa, sb = np.concatenate([sets.do_a, sa]), np.concatenate([sets.do_b, sb])
    for name, floor in [(n, False) for n in ("iou", "giou", "l2", "count")] + [("giou", True)]:
        got = set_distances(sets, sa, sb, name, floor)
        for k in range(len(sa)):
            A = sets.corners[sets.start[sa[k]]: sets.start[sa[k]] + sets.count[sa[k]]]
            B = sets.corners[sets.start[sb[k]]: sets.start[sb[k]] + sets.count[sb[k]]]
            if name == "count":
                want = abs(len(A) - len(B))
            elif len(A) == 0 or len(B) == 0:
                want = 0.0 if len(A) == len(B) else 1.0
            else:
                d = np.array([[box_distance(name, a[None], b[None])[0] for b in B] for a in A])
                d = np.minimum(d, 1.0) if floor else d
                want = np.concatenate([d.min(axis=1), d.min(axis=0)]).mean()
            assert got[k] == pytest.approx(want, abs=1e-12), (name, k)


def test_set_distances_do_not_depend_on_the_block_size(monkeypatch):
    """Blocks of a few box pairs (every pair of sets cut apart from its neighbours) give the same bits as one
    block holding everything."""
    import kalos_core.calibration.braylan as braylan_module
    rng = np.random.default_rng(7)
    images = {i: {r: [tuple(rng.uniform(0, 200, 2)) + tuple(rng.uniform(0, 60, 2)) for _ in range(rng.integers(0, 5))]
                  for r in ("a", "b", "c")} for i in range(30)}
    sets = annotation_sets(box_set_data(images))
    sa, sb = draw_de_pairs(sets, 80, np.random.default_rng(2))
    floors = {"iou": True, "giou": True, "l2": False, "count": False}
    whole = braylan_module.set_distances_by_name(sets, sa, sb, floors)
    for block in (1, 5):
        monkeypatch.setattr(braylan_module, "SET_BLOCK", block)
        cut = braylan_module.set_distances_by_name(sets, sa, sb, floors)
        for name in floors:
            assert whole[name].tobytes() == cut[name].tobytes(), (name, block)


# -- items and pairs -----------------------------------------------------------------------------

def test_items_pairs_and_counts():
    data = box_set_data({
        "two": {"a": [(0, 0, 9, 9)], "b": []},                       # b assigned, drew nothing
        "three": {"a": [(0, 0, 9, 9)], "b": [(1, 1, 9, 9)], "c": [(2, 2, 9, 9), (50, 50, 5, 5)]},
        "alone": {"a": [(0, 0, 9, 9)]},                              # one rater: not an item
    })
    sets = annotation_sets(data)
    assert sets.n_items == 2 and len(sets.count) == 5 and sets.n_raters == 3
    assert len(sets.do_a) == 1 + 3                                    # every same-item rater pair
    res = braylan_agreement(data, BraylanConfig(seed=0))
    assert (res.n_items, res.n_raters, res.n_annotation_sets, res.n_annotations) == (2, 3, 5, 5)
    assert all(d.n_do == d.n_de == 4 for d in res.distances.values())


def test_two_sessions_of_one_rater_are_not_a_pair():
    anns = [Annotation(0, "al (S1)", 1, (0, 0, 9, 9)), Annotation(1, "al (S2)", 1, (0, 0, 9, 9)),
            Annotation(2, "bo", 1, (5, 0, 9, 9))]
    im = make_image(0, 100, 100, ["al (S1)", "al (S2)", "bo"], anns,
                    row_rater={"al (S1)": "al", "al (S2)": "al", "bo": "bo"})
    sets = annotation_sets(MultiRaterDataset([im], {1: "x"}, "box"))
    assert len(sets.do_a) == 2 and sets.n_raters == 2


def test_de_pairs_are_seeded_and_always_cross_items():
    images = {i: {"a": [(i, i, 5, 5)] * (i % 3), "b": [(0, 0, 5, 5)]} for i in range(7)}
    sets = annotation_sets(box_set_data(images))
    a1, b1 = draw_de_pairs(sets, 5000, np.random.default_rng(3))
    a2, b2 = draw_de_pairs(sets, 5000, np.random.default_rng(3))
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert np.all(sets.item[a1] != sets.item[b1])
    # each set is drawn uniformly: 14 sets, 5000 draws -> about 357 each
    assert np.bincount(b1, minlength=14).min() > 280 and np.bincount(b1, minlength=14).max() < 440


# -- the measures --------------------------------------------------------------------------------

def test_alpha_auc_ks_by_hand():
    assert alpha_from_samples(np.array([0.2, 0.4]), np.array([0.8, 1.0])) == pytest.approx(1 - 0.3 / 0.9)
    do, de = np.array([0.0, 0.5, 1.0]), np.array([0.5, 1.0, 1.0])
    # De > Do: 0.5 beats 0 (1) ties 0.5 (1/2); each 1.0 beats 0 and 0.5 (2) ties 1 (1/2) -> 6.5 / 9
    assert auc_de_above_do(do, de) == pytest.approx(6.5 / 9)
    assert auc_de_above_do(do, de) == pytest.approx(mannwhitneyu(de, do).statistic / 9)
    m = measure(np.array([0.1, 0.2]), np.array([0.15, 0.9]))
    assert m.ks == pytest.approx(0.5)            # F_Do - F_De at 0.1 and at 0.2
    assert m.auc == pytest.approx(3 / 4)


def test_ks_is_the_one_sided_d_statistic():
    rng = np.random.default_rng(0)
    do, de = rng.beta(2, 5, 300), rng.beta(5, 2, 280)
    assert measure(do, de).ks == pytest.approx(ks_2samp(do, de, alternative="greater").statistic, abs=1e-12)


def test_sigma_against_scipy_gaussian_kde():
    rng = np.random.default_rng(1)
    de = np.concatenate([rng.beta(6, 2, 250), np.ones(50)])
    do = np.concatenate([rng.beta(1.5, 8, 250), rng.uniform(0, 1, 50)])
    kde = gaussian_kde(de)                        # Scott's rule
    d_star = kde_threshold(de, 0.05)
    assert kde.integrate_box_1d(0.0, d_star) == pytest.approx(0.05, abs=1e-9)
    sigma, same = sigma_from_samples(do, de, 0.05)
    per_value = np.mean([kde.integrate_box_1d(0.0, d) < 0.05 for d in do])
    assert same == d_star and sigma == pytest.approx(per_value)
    assert 0.3 < sigma < 1.0


def test_sigma_with_a_constant_de_is_a_point_mass():
    sigma, d_star = sigma_from_samples(np.array([0.1, 0.6, 0.9]), np.full(5, 0.6))
    assert d_star == 0.6 and sigma == pytest.approx(1 / 3)


def test_perfect_agreement():
    images = {i: {"a": [(10 * i, 0, 9, 9)], "b": [(10 * i, 0, 9, 9)]} for i in range(6)}
    res = braylan_agreement(box_set_data(images), BraylanConfig(distances=("iou", "l2"), seed=2))
    for d in res.distances.values():
        assert d.mean_do == 0.0 and d.alpha == 1.0 and d.sigma == 1.0
        assert d.auc == 1.0 and d.ks == 1.0       # disjoint boxes across items: every De > 0


@pytest.mark.parametrize("kwargs, field", [
    ({"distances": ("centroid",)}, "distances"), ({"distances": ()}, "distances"), ({"p": 0.0}, "p"),
    ({"p": 1.0}, "p"), ({"p": 1.5}, "p"), ({"p": -0.1}, "p"), ({"convention": "ks"}, "convention"),
    ({"seed": -1}, "seed")])
def test_bad_parameters_name_their_field(kwargs, field):
    with pytest.raises(ParamError) as e:
        BraylanConfig(**kwargs)
    assert e.value.param == field and field in str(e.value)


BOX = [(0, 0, 9, 9)]


@pytest.mark.parametrize("images, message", [
    ({}, "has no images"),
    ({0: {"a": BOX}, 1: {"a": BOX}}, r"only one rater \('a'\)"),
    ({0: {"a": BOX}, 1: {"b": BOX}}, "each image was labelled by one rater only"),    # no shared image
    ({0: {"a": BOX, "b": BOX}, 1: {"a": BOX}}, "only one image has two raters"),
    ({0: {"a": [], "b": []}, 1: {"a": [], "b": []}}, "no rater drew a box"),
])
def test_data_without_do_or_de_is_a_clear_error(images, message):
    with pytest.raises(ValueError, match=message) as e:
        braylan_agreement(box_set_data(images))
    assert "raters" in str(e.value) or "label field" in str(e.value)     # says what to fix


def test_only_boxes():
    with pytest.raises(ValueError, match="need boxes"):
        annotation_sets(MultiRaterDataset([], {}, "polygon"))


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_rater_who_drew_nothing_is_an_empty_set(convention):
    # a and b agree exactly, c drew nothing: Do per item (a,b) 0, (a,c) 1, (b,c) 1 -> mean 2/3
    images = {i: {"a": [(20 * i, 0, 9, 9)], "b": [(20 * i, 0, 9, 9)], "c": []} for i in range(3)}
    res = braylan_agreement(box_set_data(images), BraylanConfig(convention=convention))
    for name in ("iou", "giou", "l2"):
        assert res.distances[name].n_do == 9 and res.distances[name].mean_do == pytest.approx(2 / 3)
    assert res.distances["count"].mean_do == pytest.approx(2 / 3)      # |1 - 0| on the pairs with c


# -- the two conventions ------------------------------------------------------------------------

def test_braylan_floors_the_nearest_neighbour_giou_similarity_at_zero():
    a, far = [(0, 0, 9, 9)], [(20, 0, 9, 9)]
    # disjoint: IoU 0, union 200, hull 30 x 10 = 300 -> GIoU = 0 - 100/300 = -1/3 (negative)
    assert pair_distance(a, far, "giou") == pytest.approx(4 / 3)                 # midrank: 1 - GIoU
    assert pair_distance(a, far, "giou", floor=True) == 1.0                      # braylan: 1 - max(GIoU, 0)
    assert pair_distance(a, far, "iou", floor=True) == 1.0                       # IoU >= 0: no-op
    # a nearest neighbour with a positive GIoU is untouched: (0,0,9,9) vs (5,0,9,9) -> 2/3
    assert pair_distance(a, [(5, 0, 9, 9)], "giou", floor=True) == pytest.approx(2 / 3)
    # end to end: item 0 disjoint (Do 4/3, floored 1), item 1 identical (Do 0)
    data = box_set_data({0: {"a": a, "b": far}, 1: {"a": a, "b": a}})
    mean_do = {c: braylan_agreement(data, BraylanConfig(convention=c)).distances["giou"].mean_do
               for c in CONVENTIONS}
    assert mean_do == {"braylan": pytest.approx(0.5), "midrank": pytest.approx(2 / 3)}


def test_braylan_does_not_floor_l2_or_count():
    a, far = [(0, 0, 9, 9)], [(100, 0, 9, 9)]   # both corners move (100, 0): RMSE 100/√2, L2 = 2 · 100/√2 / 20 > 1
    data = box_set_data({0: {"a": a, "b": far}, 1: {"a": a, "b": a * 3}})
    for c in CONVENTIONS:
        d = braylan_agreement(data, BraylanConfig(convention=c)).distances
        assert d["l2"].mean_do == pytest.approx(5 * np.sqrt(2) / 2) and d["count"].mean_do == pytest.approx(2 / 2)


def test_auc_ties_count_half_under_midrank_and_not_at_all_under_braylan():
    do, de = np.array([0.0, 1.0]), np.array([0.0, 1.0, 2.0])       # count differences: integers, ties
    # De > Do: 0 -> {1, 2}, 1 -> {2}: 3 of 6 pairs; ties: (0, 0), (1, 1): 2 of 6
    assert auc_de_above_do(do, de, ties=0.0) == pytest.approx(3 / 6)
    assert auc_de_above_do(do, de) == pytest.approx(4 / 6)
    assert measure(do, de, ties=0.0).auc == pytest.approx(3 / 6)
    # end to end: every set holds one box, so every count difference (Do and De) is 0: all ties
    images = {i: {"a": [(20 * i, 0, 9, 9)], "b": [(20 * i + 2, 0, 9, 9)]} for i in range(4)}
    auc = {c: braylan_agreement(box_set_data(images), BraylanConfig(convention=c)).distances["count"].auc
           for c in CONVENTIONS}
    assert auc == {"braylan": 0.0, "midrank": 0.5}


def test_the_result_names_its_convention():
    images = {i: {"a": [(20 * i, 0, 9, 9)], "b": [(20 * i + 2, 0, 9, 9)]} for i in range(4)}
    assert BraylanConfig().convention == "braylan"
    for c in CONVENTIONS:
        assert braylan_agreement(box_set_data(images), BraylanConfig(convention=c)).to_dict()["convention"] == c


def test_de_draws_follow_image_ids_and_rater_names_not_the_file_order():
    rng = np.random.default_rng(2)
    images = {i: {r: [tuple(rng.uniform(0, 200, 2)) + tuple(rng.uniform(5, 60, 2)) for _ in range(rng.integers(1, 4))]
                  for r in ("a", "b", "c")} for i in range(15)}
    shuffled = {i: dict(reversed(images[i].items())) for i in reversed(list(images))}
    for seed in (0, 7):
        first, second = (braylan_agreement(box_set_data(d), BraylanConfig(seed=seed)).to_dict()
                         for d in (images, shuffled))
        assert first == second


# -- CLI contract ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("braylandemo"), n_images=20, seed=3, with_images=False)


def test_cli_writes_the_contract(demo_path, tmp_path, capsys):
    out = tmp_path / "braylan.json"
    rc = main(["braylan", str(demo_path), "--task", "bbox", "--distances", "iou,count", "--seed", "4",
               "--output", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert {"distances", "n_items", "n_raters", "n_annotations"} <= set(res)
    assert list(res["distances"]) == ["iou", "count"]
    assert res["n_items"] == 20 and res["seed"] == 4
    direct = braylan_agreement(load_coco(demo_path, "bbox"), BraylanConfig(distances=("iou", "count"), seed=4))
    assert res.pop("conventions") == conventions_of("kalos_braylan", direct.to_dict())
    assert res == direct.to_dict()
    for d in res["distances"].values():
        assert CONTRACT_KEYS <= set(d) and d["n_do"] == d["n_de"] > 0
    assert "AUC" in capsys.readouterr().out


def test_cli_rejects_unknown_distances_and_missing_files(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["braylan", str(tmp_path / "x.json"), "--distances", "centroid"])
    assert e.value.code == 2
    assert main(["braylan", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_runs_as_a_module(demo_path, tmp_path):
    out = tmp_path / "b.json"
    proc = subprocess.run([sys.executable, "-m", "kalos_core", "braylan", str(demo_path), "--output", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(out.read_text())["distances"]) == ["iou", "giou", "l2", "count"]


# -- LVIS subset ----------------------------------------------------------------------------------

@pytest.mark.realdata
def test_lvis_item_level_agreement(lvis_subset_path):
    res = braylan_agreement(load_coco(lvis_subset_path, "bbox"), BraylanConfig(seed=0)).to_dict()
    assert (res["n_items"], res["n_raters"], res["n_annotations"], res["n_annotation_sets"]) == (200, 2, 3521, 400)
    d = res["distances"]
    assert all(v["n_do"] == v["n_de"] == 200 for v in d.values())
    assert 0 < d["iou"]["alpha"] < 1 and 0.5 < d["iou"]["auc"] <= 1
    assert d["iou"]["mean_do"] == pytest.approx(0.186239, abs=1e-6)   # Do does not depend on the seed
    # fine-grained beats coarse, as in the paper's Table 1: GIoU, IoU > L2 > Count Diff
    assert min(d["iou"]["auc"], d["giou"]["auc"]) > d["l2"]["auc"] > d["count"]["auc"]
    assert d["iou"]["sigma"] > d["count"]["sigma"]
