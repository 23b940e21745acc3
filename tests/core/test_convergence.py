"""Label convergence (kalos_core.convergence): the LVIS known answers, exact re-accumulation
against COCOeval, Table 3's intervals, Eq. 1, identical raters, a model placed against the
interval, more than two raters, the CLI contract."""

import contextlib
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.cocoeval import COCOeval

from kalos_core import load_coco
from kalos_core.cli import main
from kalos_core.convergence import (ConvergenceConfig, alpha_from_map, compute_convergence, draw_subsets,
                                    interval_stats, map_from_alpha, normal_interval, place)
from kalos_core.convergence.accumulate import (_chunk_ap, _first_tp_needed, _flags, _kept, _packed, _runs, _unpacked,
                                               subset_ap, subsets_ap)
from kalos_core.convergence.cocoeval import _coco_gt, evaluate_direction, rater_labels
from kalos_core.convergence.engine import image_order, per_image_alpha, restrict_raters
from kalos_core.data import Annotation, MultiRaterDataset, make_image

#: Table 3 of the paper: (mean, SD, CI lower, CI upper) per dataset and task
TABLE3 = [(65.08, 1.25, 62.64, 67.52), (59.78, 1.26, 57.32, 62.24), (28.39, 1.55, 25.35, 31.43),
          (20.55, 1.64, 17.33, 23.75), (81.89, 0.82, 80.28, 83.50), (72.87, 0.92, 71.07, 74.66),
          (47.08, 1.51, 44.12, 50.05)]


def synthetic(n_images=30, raters=("r1", "r2"), jitter=3.0, seed=0, identical=False, crowded=0):
    """Boxes of 3 classes; every rater sees each object with corner jitter (none if identical);
    ``crowded`` adds that many boxes of class 1 to image 0 (beyond COCO's default maxDets 100)."""
    rng = np.random.default_rng(seed)
    images, aid = [], 1
    for i in range(n_images):
        objs = [(int(rng.integers(1, 4)), rng.uniform(0, 400), rng.uniform(0, 300), rng.uniform(10, 150),
                 rng.uniform(10, 150)) for _ in range(int(rng.integers(0, 6)))]
        if i == 0:
            objs += [(1, 5.0 * k, 2.0 * k, 20.0, 20.0) for k in range(crowded)]
        anns = []
        for r in raters:
            for c, x, y, w, h in objs:
                if not identical and rng.random() < 0.1:
                    continue
                d = np.zeros(4) if identical else rng.normal(0, jitter, 4)
                anns.append(Annotation(aid, r, c, (x + d[0], y + d[1], w + d[2] - d[0], h + d[3] - d[1])))
                aid += 1
        images.append(make_image(i + 1, 640, 480, raters, anns))
    return MultiRaterDataset(images, {1: "cat", 2: "dog", 3: "bird"}, "box")


@pytest.mark.realdata
@pytest.mark.parametrize("task, expected", [("bbox", 66.07), ("segm", 62.0)])
def test_lvis_full_set_two_direction_map_matches_the_known_answer(lvis_subset_path, task, expected):
    result = compute_convergence(load_coco(lvis_subset_path, task), ConvergenceConfig(task=task, bootstrap=0))
    d = result.to_dict()["full_set"]
    assert d["map"] == pytest.approx(expected, abs=0.3)
    if task == "bbox":
        assert d["ap50"] == pytest.approx(81.1, abs=0.1)
        assert d["ap75"] == pytest.approx(70.5, abs=0.1)
        # inside the paper's LVIS-5k interval
        assert 62.64 <= d["map"] <= 67.52
    else:  # segm: inside the paper's LVIS-5k segm interval
        assert 57.32 <= d["map"] <= 62.24


@pytest.mark.realdata
def test_lvis_has_no_box_pair_with_iou_one(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    best = 0.0
    for im in ds.images:
        a = [list(x.geometry) for x in im.annotations if x.rater == "r1"]
        b = [list(x.geometry) for x in im.annotations if x.rater == "r2"]
        if a and b:
            best = max(best, float(np.max(mask_utils.iou(a, b, [0] * len(b)))))
    assert 0.9 < best < 1.0


@pytest.mark.realdata
def test_subset_reaccumulation_equals_a_fresh_cocoeval_on_the_subset(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    ids = sorted(im.id for im in ds.images)
    a, b = rater_labels(ds, "r1", ids), rater_labels(ds, "r2", ids)
    table = evaluate_direction(ds, a, b, ids, "bbox")
    full = np.where(table.precision[:, 0, :] > -1, table.precision.mean(axis=1), np.nan)
    np.testing.assert_allclose(subset_ap(table), full, atol=1e-12)
    for mask in draw_subsets(len(ids), 3, 0.1, seed=5):
        sub = [i for i, m in zip(ids, mask) if m]
        fresh = evaluate_direction(ds, [d for d in a if d["image_id"] in sub], [d for d in b if d["image_id"] in sub],
                                   sub, "bbox")
        expect = np.full_like(full, np.nan)
        idx = np.searchsorted(table.cat_ids, fresh.cat_ids)
        expect[:, idx] = np.where(fresh.precision[:, 0, :] > -1, fresh.precision.mean(axis=1), np.nan)
        np.testing.assert_allclose(subset_ap(table, mask), expect, atol=1e-12)


def test_reaccumulation_matches_cocoeval_with_real_scores():
    ds = synthetic(40, seed=3)
    ids = [im.id for im in ds.images]
    gt = rater_labels(ds, "r1", ids)
    rng = np.random.default_rng(1)
    dt = [dict(d, score=float(rng.choice([0.3, 0.5, 0.9]))) for d in rater_labels(ds, "r2", ids)]
    table = evaluate_direction(ds, gt, dt, ids, "bbox")
    mask = np.arange(len(ids)) % 3 == 0
    sub = [i for i, m in zip(ids, mask) if m]
    with contextlib.redirect_stdout(io.StringIO()):
        cg = _coco_gt(ds, sub, [d for d in gt if d["image_id"] in sub], "bbox")
        ev = COCOeval(cg, cg.loadRes([{k: d[k] for k in ("image_id", "category_id", "bbox", "score")}
                                      for d in dt if d["image_id"] in sub]), "bbox")
        ev.params.imgIds, ev.params.catIds = sub, list(table.cat_ids)
        ev.params.areaRng, ev.params.areaRngLbl, ev.params.maxDets = [[0, 1e10]], ["all"], [1000]
        ev.evaluate()
        ev.accumulate()
    p = ev.eval["precision"][:, :, :, 0, 0]
    np.testing.assert_allclose(subset_ap(table, mask), np.where(p[:, 0] > -1, p.mean(axis=1), np.nan), atol=1e-12)


def test_identical_raters_give_map_100_even_beyond_100_boxes_per_image_and_class():
    ds = synthetic(20, identical=True, crowded=130)
    r = compute_convergence(ds, ConvergenceConfig(bootstrap=50, fraction=0.2))
    assert r.full_set.map == pytest.approx(1.0)
    assert r.full_set.ap50 == pytest.approx(1.0) and r.full_set.ap75 == pytest.approx(1.0)
    assert r.bootstrap.map.min == pytest.approx(1.0) and r.bootstrap.map.std == pytest.approx(0.0)
    assert all(v == pytest.approx(1.0) for v in r.full_set.per_class.values())
    assert len(r.pairs[0].matched) == ds.n_annotations and all(all(v) for v in r.pairs[0].matched.values())


def test_a_rater_who_drew_nothing_gives_map_zero_without_crashing():
    ds = synthetic(10)
    for im in ds.images:
        im.annotations = [a for a in im.annotations if a.rater == "r1"]
    r = compute_convergence(ds, ConvergenceConfig(bootstrap=20, fraction=0.5))
    assert r.full_set.map == 0.0
    assert not any(any(v) for v in r.pairs[0].matched.values())
    assert set(r.to_dict(include_labels=True)["pairs"][0]["matched"]) == {str(a.id) for im in ds.images
                                                                         for a in im.annotations}
    assert r.pairs[0].directions["r1->r2"].map == 0.0      # r1 as ground truth: every object missed
    assert np.isnan(r.pairs[0].directions["r2->r1"].map)   # r2 as ground truth: no class has any (COCO's -1)


@pytest.mark.parametrize("mean, sd, lo, hi", TABLE3)
def test_table3_intervals_follow_from_mean_and_sd(mean, sd, lo, hi):
    got = normal_interval(mean, sd, 0.95)
    assert got[0] == pytest.approx(lo, abs=0.015) and got[1] == pytest.approx(hi, abs=0.015)


def test_interval_stats_on_known_values():
    s = interval_stats([1.0, 2.0, 3.0, 4.0, 5.0, np.nan])
    assert (s.mean, s.min, s.max, s.n_valid) == (3.0, 1.0, 5.0, 5)
    assert s.std == pytest.approx(np.sqrt(2.5))
    assert s.ci_normal == pytest.approx((3 - 1.959964 * np.sqrt(2.5), 3 + 1.959964 * np.sqrt(2.5)))
    assert s.ci_percentile == pytest.approx((1.1, 4.9))
    assert place(0.5, (1, 2)) == "below" and place(1.5, (1, 2)) == "inside" and place(3, (1, 2)) == "above"


def test_eq1_and_its_inverse():
    assert map_from_alpha(0.0) == pytest.approx(0.197)
    assert map_from_alpha(1.0) == pytest.approx(1.033)
    assert map_from_alpha(0.6889) == pytest.approx(0.836 * 0.6889 + 0.197)
    a = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(alpha_from_map(map_from_alpha(a)), a)
    assert alpha_from_map(0.6607) == pytest.approx((0.6607 - 0.197) / 0.836)


def test_bootstrap_same_seed_same_numbers_other_seed_other_numbers():
    ds = synthetic(40, seed=2)
    cfg = ConvergenceConfig(bootstrap=100, fraction=0.25, seed=7)
    a, b = compute_convergence(ds, cfg), compute_convergence(ds, cfg)
    np.testing.assert_array_equal(a.bootstrap.map.values, b.bootstrap.map.values)
    assert a.to_dict()["bootstrap"] == b.to_dict()["bootstrap"]
    c = compute_convergence(ds, ConvergenceConfig(bootstrap=100, fraction=0.25, seed=8))
    assert not np.array_equal(a.bootstrap.map.values, c.bootstrap.map.values)
    assert (draw_subsets(40, 100, 0.25, 7).sum(axis=1) == 10).all()


@pytest.mark.realdata
def test_lvis_model_equal_to_one_rater_sits_inside_the_interval(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    preds = [{k: d[k] for k in ("image_id", "category_id", "bbox", "score")}
             for d in rater_labels(ds, "r1", [im.id for im in ds.images])]
    r = compute_convergence(ds, ConvergenceConfig(bootstrap=300), predictions=preds)
    m = r.model
    assert m.per_rater["r1"].map == pytest.approx(1.0)
    assert m.per_rater_placement["r2"] == {"ci_normal": "inside", "ci_percentile": "inside"}
    assert m.per_rater["r2"].map == pytest.approx(r.pairs[0].directions["r2->r1"].map)
    lo, hi = r.bootstrap.map.ci_normal
    assert lo < 0.6607 < hi


def test_three_raters_give_every_pair_alpha_mapping_and_refit():
    ds = synthetic(30, raters=("a", "b", "c"), seed=4)
    r = compute_convergence(ds, ConvergenceConfig(bootstrap=60, fraction=0.3))
    assert [p.raters for p in r.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert r.full_set.map == pytest.approx(np.mean([p.full_set.map for p in r.pairs]))
    al = r.alpha
    assert al is not None and 0.0 < al.full_set_alpha <= 1.0
    np.testing.assert_allclose(al.eq1_map.values, 0.836 * al.alpha.values + 0.197)
    assert al.refit["n"] == 600 and al.refit["r"] > 0.3
    d = json.loads(json.dumps(r.to_dict()))
    assert d["alpha"]["eq1"]["slope"] == 0.836 and len(d["pairs"]) == 3


def test_cli_writes_the_contract(tmp_path):
    from kalos_core.io.coco import dataset_to_coco

    ds = synthetic(30, seed=6)
    src = tmp_path / "raters.json"
    src.write_text(json.dumps(dataset_to_coco(ds)))
    preds = [{k: d[k] for k in ("image_id", "category_id", "bbox", "score")}
             for d in rater_labels(ds, "r2", [im.id for im in ds.images])]
    (tmp_path / "p.json").write_text(json.dumps(preds))
    out = tmp_path / "out.json"
    assert main(["convergence", str(src), "--task", "bbox", "--predictions", str(tmp_path / "p.json"),
                 "--bootstrap", "40", "--fraction", "0.2", "--seed", "1", "--output", str(out)]) == 0
    d = json.loads(out.read_text())
    assert {"map", "ap50", "ap75", "per_class"} <= set(d["full_set"])
    assert {"mean", "std", "min", "max", "ci_normal", "ci_percentile"} <= set(d["bootstrap"])
    assert len(d["bootstrap"]["values"]) == 40 and set(d["bootstrap"]["per_threshold"]) >= {"0.50", "0.75", "0.95"}
    assert d["pairs"][0]["raters"] == ["r1", "r2"] and d["model"]["per_rater"]["r2"]["map"] == 100.0
    assert 1.0 < d["full_set"]["map"] <= 100.0                                   # percent
    assert main(["convergence", str(src), "--raters", "r1,zz"]) == 2


def test_config_declares_its_rules_and_the_cli_its_alpha_switch(tmp_path):
    from kalos_core.measure import get_measure
    from kalos_core.params import ParamError

    with pytest.raises(ParamError, match="at least two raters") as e:
        ConvergenceConfig(raters=("r1",))
    assert e.value.param == "raters"
    with pytest.raises(ParamError, match=r"fraction must lie in \(0, 1\]"):
        ConvergenceConfig(fraction=0.0)
    assert get_measure("convergence").config is ConvergenceConfig
    from kalos_core.io.coco import dataset_to_coco

    src = tmp_path / "raters.json"
    src.write_text(json.dumps(dataset_to_coco(synthetic(12, seed=1))))
    for flag, want in (([], None), (["--alpha"], True), (["--no-alpha"], False)):
        out = tmp_path / "out.json"
        assert main(["convergence", str(src), "--bootstrap", "5", *flag, "--output", str(out)]) == 0
        d = json.loads(out.read_text())
        assert d["config"]["alpha"] is want and (d["alpha"] is not None) == bool(want)
    assert main(["convergence", str(src), "--predictions", str(tmp_path / "none.json")]) == 2


def _restrict_reference(dataset, raters):
    """restrict_raters as it was before the short cut: always copies, annotations as objects."""
    keep = set(raters)
    return dataclasses.replace(dataset, images=[
        dataclasses.replace(im, raters=tuple(r for r in im.raters if r in keep),
                            annotations=[a for a in im.annotations if a.rater in keep]) for im in dataset.images])


@pytest.mark.realdata
def test_alpha_per_threshold_on_all_raters_keeps_the_columns_and_every_bit(lvis_subset_path):
    ds = load_coco(lvis_subset_path)
    assert not isinstance(ds.images[0].annotations, list)          # column-held boxes
    assert restrict_raters(ds, ds.raters) is ds
    ids = image_order(ds)
    fast, ref = per_image_alpha(ds, ids), per_image_alpha(_restrict_reference(ds, ds.raters), ids)
    assert np.isfinite(fast).sum() > 100
    np.testing.assert_array_equal(fast, ref)                         # bit-identical, NaN where NaN


def _alpha_ten_runs(dataset, ids):
    """per_image_alpha as it was: one agreement run per threshold."""
    from kalos_core.agreement.pipeline import AgreementConfig, compute_agreement

    out = np.full((10, len(ids)), np.nan)
    for t, thr in enumerate(np.linspace(0.5, 0.95, 10)):
        per_image = compute_agreement(dataset, AgreementConfig(
            threshold=float(round(thr, 2)), bootstrap=0, vitality=False, class_difficulty=False, collaboration=False,
            intra_rater=False)).per_image_alpha
        out[t] = [per_image.get(str(i), np.nan) for i in ids]
    return out


@pytest.mark.realdata
def test_alpha_at_every_threshold_in_one_run_is_ten_runs_bit_for_bit(lvis_subset_path):
    """One map step with the nine higher thresholds as re-matches of the same candidate pairs gives
    every bit of ten runs: column-held boxes (LVIS), object-held ones with an image nobody labelled,
    a one-rater image and an image one of two raters left empty, and a rater dropped."""
    ds = load_coco(lvis_subset_path)
    ids = image_order(ds)
    fast = per_image_alpha(ds, ids)
    assert np.isfinite(fast).all() and len(np.unique(fast)) > 100
    assert fast.flags.c_contiguous     # the means over images (pairwise sums) depend on the layout, not only the bits
    assert fast.tobytes() == _alpha_ten_runs(ds, ids).tobytes()
    syn = synthetic(12, raters=("a", "b", "c"), seed=3)
    lone = Annotation(9001, "a", 1, (1.0, 1.0, 20.0, 20.0))
    syn = dataclasses.replace(syn, images=[*syn.images, make_image(100, 640, 480, ("a", "b", "c"), []),
                                           make_image(101, 640, 480, ("a",), [lone]),
                                           make_image(102, 640, 480, ("a", "b"), [lone])])
    ids = image_order(syn)
    for d in (syn, restrict_raters(syn, ["a", "b"])):
        fast = per_image_alpha(d, ids)
        assert fast.tobytes() == _alpha_ten_runs(d, ids).tobytes()
        assert (fast[:, -3:-1] == 1.0).all() and (fast[:, -1] == 0.0).all()   # nothing / one rater; a lone box
        assert (fast[0] != fast[-1]).any()                                         # the thresholds differ


@pytest.mark.realdata
def test_column_labels_are_the_dicts_and_evaluate_to_the_same_table(lvis_subset_path):
    """Boxes read as columns (BoxLabels) hold rater_labels' dicts in their order, on column-held
    (LVIS) and object-held boxes, on a part of the images too; evaluated, the same table bit for bit."""
    from kalos_core.convergence.cocoeval import label_columns, side_labels

    for ds in (load_coco(lvis_subset_path), synthetic(20, raters=("a", "b", "c"), seed=4)):
        ids = image_order(ds)
        part = ids[::3]
        columns = label_columns(ds, "bbox")
        cols = {r: side_labels(ds, r, ids, columns) for r in ds.raters[:2]}
        dicts = {r: rater_labels(ds, r, ids) for r in ds.raters[:2]}
        a, b = ds.raters[:2]
        assert len(cols[a]) > 30 and cols[a].as_dicts() == dicts[a]
        assert cols[b].on_images(part).as_dicts() == [d for d in dicts[b] if d["image_id"] in set(part)]
        for ids_, la, lb in ((ids, cols[a], cols[b]), (part, cols[a].on_images(part), cols[b].on_images(part))):
            fast = evaluate_direction(ds, la, lb, ids_, "bbox")
            _same_table(fast, evaluate_direction(ds, la.as_dicts(), lb.as_dicts(), ids_, "bbox"))
    assert label_columns(ds, "segm") is None


def test_restrict_raters_still_drops_a_rater_or_an_unassigned_one():
    ds = synthetic(4, raters=("a", "b", "c"), seed=1)
    two = restrict_raters(ds, ["a", "b"])
    assert two is not ds and {a.rater for im in two.images for a in im.annotations} == {"a", "b"}
    im = ds.images[0]
    stray = dataclasses.replace(ds, images=[dataclasses.replace(
        im, annotations=list(im.annotations) + [Annotation(999, "z", 1, (1.0, 1.0, 5.0, 5.0))])])
    kept = restrict_raters(stray, ["a", "b", "c"])
    assert kept is not stray and all(a.rater != "z" for a in kept.images[0].annotations)


@pytest.mark.realdata
def test_batched_subsets_give_every_bit_of_one_subset_at_a_time(lvis_subset_path):
    """Subsets in one padded batch, in chunks of any size, or one at a time: the same bits (each row
    keeps its own envelope offsets), and each equals a fresh COCOeval on the subset (within 1e-12)."""
    ds = load_coco(lvis_subset_path, "bbox")
    ids = sorted(im.id for im in ds.images)
    table = evaluate_direction(ds, rater_labels(ds, "r1", ids), rater_labels(ds, "r2", ids), ids, "bbox")
    masks = draw_subsets(len(ids), 60, 0.1, seed=2)
    masks[0] = False                                  # an empty subset: NaN everywhere
    batched = subsets_ap(table, masks)
    assert np.isnan(batched[0]).all() and np.isfinite(batched[1:]).any()
    assert batched.tobytes() == subsets_ap(table, masks, cells=1).tobytes()
    assert batched.tobytes() == np.stack([subset_ap(table, m) for m in masks]).tobytes()
    assert subsets_ap(table, masks[7:13], cells=5000).tobytes() == batched[7:13].tobytes()


def test_subsets_from_image_runs_keep_the_same_detections_and_bits():
    """A subset's detections read as the runs of its images, class by class (rater labels: equal
    scores), are the ones a flag per detection keeps, in the same order; same AP bits; with real
    scores (a model) the runs are not used."""
    ds = synthetic(60, raters=("a", "b"), seed=5)
    ids = image_order(ds)
    table = evaluate_direction(ds, rater_labels(ds, "a", ids), rater_labels(ds, "b", ids), ids, "bbox")
    runs = _runs(table)
    assert runs is not None and runs.shape == (len(table.cat_ids), len(ids) + 1)
    masks = draw_subsets(len(ids), 40, 0.2, seed=3)
    masks[0], masks[1] = False, True                   # an empty subset and a full one
    for a, b in zip(_kept(table, masks, runs), _kept(table, masks, None)):
        assert a.tobytes() == b.tobytes()
    assert len(set(masks[2:].sum(axis=1).tolist())) == 1               # subsets of one size: one block
    for a, b in zip(_kept(table, masks[2:], runs), _kept(table, masks[2:], None)):
        assert a.tobytes() == b.tobytes()
    flags, need = _flags(table), _first_tp_needed(int(table.npig.sum(axis=1).max()))
    fast = _chunk_ap(table, masks, flags, need, runs)
    assert fast.tobytes() == _chunk_ap(table, masks, flags, need, None).tobytes() and np.isfinite(fast[1]).any()
    scored = [dict(d, score=float(s)) for d, s in zip(rater_labels(ds, "b", ids), np.linspace(0.1, 0.9, 500))]
    assert _runs(evaluate_direction(ds, rater_labels(ds, "a", ids), scored, ids, "bbox")) is None


def _same_table(a, b):
    for f in ("cat_ids", "det_cat", "det_img", "matched", "ignored", "npig", "precision"):
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert (x.shape, x.dtype, x.tobytes()) == (y.shape, y.dtype, y.tobytes()), f
    assert (a.det_source, a.image_ids) == (b.det_source, b.image_ids)


@pytest.mark.realdata
def test_vectorised_box_evaluation_is_pycocotools_bit_for_bit_on_lvis(lvis_subset_path):
    ds = load_coco(lvis_subset_path, "bbox")
    ids = sorted(im.id for im in ds.images)
    a, b = rater_labels(ds, "r1", ids), rater_labels(ds, "r2", ids)
    for gt, dt in ((a, b), (b, a)):
        _same_table(evaluate_direction(ds, gt, dt, ids, "bbox"),
                    evaluate_direction(ds, gt, dt, ids, "bbox", pycocotools=True))


def test_vectorised_box_evaluation_is_pycocotools_bit_for_bit_on_the_corner_cases():
    """Scores with ties, 130 boxes of a class in one image, equal IoUs with two ground-truth boxes
    (COCOeval takes the last), and boxes beyond the area range (ignored ground truth, ignored
    unmatched detections)."""
    ds = synthetic(40, seed=3, crowded=130)
    ids = [im.id for im in ds.images]
    gt = rater_labels(ds, "r1", ids)
    rng = np.random.default_rng(1)
    dt = [dict(d, score=float(rng.choice([0.3, 0.5, 0.9]))) for d in rater_labels(ds, "r2", ids)]
    same = [10.0, 10.0, 50.0, 50.0]
    huge = [0.0, 0.0, 2e5, 1e5]
    gt += [{"image_id": 2, "category_id": 2, "bbox": same, "source_id": 9000 + k} for k in range(2)]
    gt += [{"image_id": 3, "category_id": 3, "bbox": huge, "source_id": 9002}]
    dt += [{"image_id": 2, "category_id": 2, "bbox": same, "score": 0.5, "source_id": 9100},
           {"image_id": 3, "category_id": 3, "bbox": huge, "score": 0.9, "source_id": 9101},
           {"image_id": 4, "category_id": 1, "bbox": huge, "score": 0.9, "source_id": 9102}]
    fast = evaluate_direction(ds, gt, dt, ids, "bbox")
    _same_table(fast, evaluate_direction(ds, gt, dt, ids, "bbox", pycocotools=True))
    assert fast.ignored.any() and fast.matched.any()


@pytest.mark.parametrize("T", [1, 8, 10, 16, 17, 64, 65])
def test_packed_flags_gather_the_same_bits_as_the_flags(T):
    """The bootstrap gathers a subset's flags once for all thresholds (one integer per detection);
    unpacked they are the (T, S, L) flags themselves, whatever the width of the integer."""
    flags = np.random.default_rng(T).random((T, 300)) < 0.4
    det = np.sort(np.random.default_rng(0).integers(0, 300, (4, 50)), axis=1)
    packed = _packed(flags)
    assert packed.ndim == (2 if T > 64 else 1)
    got = _unpacked(packed, det, T)
    assert got.dtype == bool and got.tobytes() == flags[:, det].tobytes()


def test_packed_gather_keeps_every_bit_with_ignored_detections(monkeypatch):
    """The corner-case table (ignored ground truth and detections beyond the area range, tied scores):
    the bootstrap AP with packed flags is the one with the plain flags, bit for bit."""
    ds = synthetic(40, seed=3, crowded=130)
    ids = [im.id for im in ds.images]
    rng = np.random.default_rng(1)
    dt = [dict(d, score=float(rng.choice([0.3, 0.5, 0.9]))) for d in rater_labels(ds, "r2", ids)]
    huge = [0.0, 0.0, 2e5, 1e5]
    gt = rater_labels(ds, "r1", ids) + [{"image_id": 3, "category_id": 3, "bbox": huge, "source_id": 9002}]
    dt += [{"image_id": 3, "category_id": 3, "bbox": huge, "score": 0.9, "source_id": 9101},
           {"image_id": 4, "category_id": 1, "bbox": huge, "score": 0.9, "source_id": 9102}]
    table = evaluate_direction(ds, gt, dt, ids, "bbox")
    assert table.ignored.any()
    masks = draw_subsets(len(ids), 40, 0.3, seed=4)
    packed = subsets_ap(table, masks)
    monkeypatch.setattr("kalos_core.convergence.accumulate._packed", lambda flags: flags)
    assert np.isfinite(packed).any() and packed.tobytes() == subsets_ap(table, masks).tobytes()


def test_interval_z_is_the_normal_quantile_without_importing_scipy_stats():
    """The interval's z is ``scipy.special.ndtri`` (what ``norm.ppf`` computes, bit for bit; at 95 % its
    value), so a default convergence run imports neither scipy.stats nor scipy.special; nor, reading
    boxes through noise-aware's inputs, the noise-aware engine's scipy.optimize and scipy.interpolate."""
    from scipy.stats import norm
    for confidence in [*np.linspace(0.0, 0.999, 1000), 0.9, 0.95, 0.99]:
        z = norm.ppf(0.5 + confidence / 2)
        assert normal_interval(10.0, 2.0, confidence) == (10.0 - z * 2.0, 10.0 + z * 2.0)
    code = ("import sys, kalos_core.convergence.engine, kalos_core.noise_aware.inputs; "
            "from kalos_core.convergence.stats import interval_stats; interval_stats([1.0, 2.0, 4.0]); "
            "assert not {'scipy.stats', 'scipy.special', 'scipy.optimize', 'scipy.interpolate'} & set(sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=str(Path(__file__).resolve().parents[2])).returncode == 0
