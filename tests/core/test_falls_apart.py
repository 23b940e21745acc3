"""Units that fall apart at another threshold (kalos_core.agreement.falls_apart), hand-computed."""

import numpy as np

from kalos_core.agreement import AgreementConfig
from kalos_core.agreement.falls_apart import falls_apart, split_units
from kalos_core.data import Annotation, MultiRaterDataset, make_image


def test_a_unit_is_split_when_its_labels_land_in_different_units():
    base = np.array([0, 0, 1, 1, 2, 3, 3, 3])
    other = np.array([5, 6, 7, 7, 8, 1, 1, 2])   # unit 0 split, 1 kept, 2 a single label, 3 split
    assert split_units(base, other).tolist() == [True, True, False, False, False, True, True, True]
    assert split_units(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []


def test_falls_apart_names_the_samples_and_labels_per_threshold():
    # s1: IoU 0.6 (apart at 0.7 and 0.9), s2: IoU 0.8 (apart at 0.9), s3: one rater drew nothing
    boxes = {"s1": (10, 6), "s2": (10, 8), "s3": None}
    images = [make_image(s, 100, 100, ["a", "b"], [Annotation(f"a{s}", "a", 0, (0, 0, 10, 10))]
                         + ([Annotation(f"b{s}", "b", 0, (0, 0, *wh))] if wh else []))
              for s, wh in boxes.items()]
    out = falls_apart(MultiRaterDataset(images, {0: "x"}, "box"),
                      AgreementConfig(threshold=0.5, lsa_thresholds=(0.3, 0.7, 0.9), bootstrap=0))
    assert out == {"0.3": {"samples": [], "labels": []},
                   "0.7": {"samples": ["s1"], "labels": ["as1", "bs1"]},
                   "0.9": {"samples": ["s1", "s2"], "labels": ["as1", "bs1", "as2", "bs2"]}}


def _one_image_at_a_time(dataset, config):
    """The definition, image by image: ImageProblem.match at the run's threshold and at each other."""
    from kalos_core.agreement.problem import prepare_image
    from kalos_core.columns import ids_and_raters
    from kalos_core.matching.costs import get_cost
    from kalos_core.matching.solvers import get_solver
    from kalos_core.params import fraction_key

    thresholds = list(dict.fromkeys(float(t) for t in config.lsa_thresholds))
    out = {fraction_key(t): {"samples": [], "labels": []} for t in thresholds}
    spec, solver, cost = config.distance_spec(dataset.kind), get_solver(config.solver), get_cost(config.cost)
    for image in dataset.images:
        ip = prepare_image(image, spec, min((config.threshold, *thresholds)))
        if len(ip.annotations) < 2:
            continue
        base, ids = ip.match(config.threshold, solver, cost)[0], ids_and_raters(ip.annotations)[0]
        for t in thresholds:
            apart = np.flatnonzero(split_units(base, ip.match(t, solver, cost)[0]))
            if len(apart):
                out[fraction_key(t)]["samples"].append(str(image.id))
                out[fraction_key(t)]["labels"] += [str(ids[k]) for k in apart.tolist()]
    return out


def test_batched_matching_names_what_matching_each_image_alone_names(monkeypatch):
    """Several batches (BATCH lowered), three raters, jittered boxes, every ninth image drawn by one rater only."""
    import kalos_core.agreement.falls_apart as fa
    from kalos_core import load_coco
    from kalos_core.demo_data import make_synthetic_boxes

    raw = make_synthetic_boxes(40, 3, 6, seed=3, n_categories=4)
    raw["annotations"] = [a for a in raw["annotations"] if a["image_id"] % 9 or a["rater_id"] == "rater_1"]
    config = AgreementConfig(threshold=0.5, lsa_thresholds=(0.2, 0.5, 0.75, 0.95), bootstrap=0)
    monkeypatch.setattr(fa, "BATCH", 7)
    for columnar in (True, False):
        data = load_coco(raw, columnar=columnar)
        got = falls_apart(data, config)
        assert got == _one_image_at_a_time(data, config)
        assert len(got["0.95"]["samples"]) > len(got["0.75"]["samples"]) > 0 and not got["0.5"]["labels"]
