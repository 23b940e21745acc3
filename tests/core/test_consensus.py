"""Consensus labels and the review queue, on hand-checked units."""

import json

import numpy as np
import pytest

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.consensus import ConsensusConfig, build_consensus, compute_consensus, needed_support
from kalos_core.geometry.masks import mask_utils


def box(aid, rater, cat, x, y, w=10, h=10, score=None):
    return Annotation(aid, rater, cat, (x, y, w, h), score=score)


def ds(anns, raters, kind="box"):
    return MultiRaterDataset([make_image(1, 100, 100, raters, anns)], {1: "A", 2: "B", 3: "C"}, kind)


def test_identical_raters_give_their_labels_back():
    anns = [box(f"{r}{k}", r, 1 + k % 2, 20 * k, 5, 12, 8) for r in "ab" for k in range(3)]
    res = compute_consensus(ds(anns, "ab"))
    assert not res.review
    got = sorted((lab.category, lab.geometry, lab.confidence, lab.support, lab.raters) for lab in res.labels)
    want = sorted((1 + k % 2, (20.0 * k, 5.0, 12.0, 8.0), 1.0, 2, ("a", "b")) for k in range(3))
    assert got == want


def test_two_of_three_on_class_a_gives_a_with_confidence_two_thirds():
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 1, 1, 0), box(3, "c", 2, 0, 1)]
    data = ds(anns, "abc")
    units = compute_agreement(data, AgreementConfig(bootstrap=0)).unit_of
    assert units[1] == units[2] == units[3]
    (lab,) = build_consensus(data, units).labels
    assert lab.category == 1 and not lab.tie
    assert lab.confidence == pytest.approx(2 / 3) and lab.support == 2 and lab.raters == ("a", "b")
    assert lab.members == (1, 2, 3)
    assert lab.geometry == (0.5, 0.0, 10.0, 10.0)          # median of a's and b's boxes (c voted B)


def test_a_tie_is_flagged_not_guessed():
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 2, 0, 0)]
    res = compute_consensus(ds(anns, "ab"))
    assert not res.labels
    (item,) = res.review
    assert item.tie and item.votes == {1: 1, 2: 1} and item.support == 1
    lenient = compute_consensus(ds(anns, "ab"), config=ConsensusConfig(support=0.0))
    (lab,) = lenient.labels
    assert lab.tie and lab.category is None and lab.tied_categories == (1, 2) and lab.confidence == 0.5
    coco = lenient.to_coco(ds(anns, "ab"))
    assert coco["annotations"][0]["tie"] is True and coco["annotations"][0]["category_id"] is None


def test_units_below_support_go_to_review():
    # unit of a alone (1 of 3 raters), unit of a+b (2 of 3 -> kept)
    anns = [box(1, "a", 1, 0, 0), box(2, "a", 1, 50, 50), box(3, "b", 1, 50, 50)]
    res = compute_consensus(ds(anns, "abc"))
    assert [lab.members for lab in res.labels] == [(2, 3)]
    assert [r.members for r in res.review] == [(1,)]
    assert needed_support(2, 0.5) == 2 and needed_support(3, 0.5) == 2 and needed_support(4, 0.5) == 3
    assert needed_support(3, 1.0) == 3 and needed_support(3, 0.0) == 1


def test_score_weighted_box_fusion():
    anns = [box(1, "a", 1, 0, 0, score=3.0), box(2, "b", 1, 2, 0, score=1.0)]
    res = compute_consensus(ds(anns, "ab"), config=ConsensusConfig(box_fusion="weighted"))
    assert res.labels[0].geometry == pytest.approx((0.5, 0.0, 10.0, 10.0))


def test_polygon_consensus_is_the_pixel_majority():
    def sq(aid, r, x):
        return Annotation(aid, r, 1, [[x, 0, x + 20, 0, x + 20, 20, x, 20]])

    anns = [sq(1, "a", 0), sq(2, "b", 2), sq(3, "c", 4)]
    res = compute_consensus(ds(anns, "abc", kind="polygon"))
    (lab,) = res.labels
    m = mask_utils.decode({"size": lab.geometry["size"], "counts": lab.geometry["counts"].encode()})
    cols = np.flatnonzero(m.any(0))
    assert cols.min() == 2 and cols.max() == 21             # covered by at least 2 of the 3 squares
    d = json.loads(json.dumps(res.to_coco(ds(anns, "abc", kind="polygon"))))
    assert d["annotations"][0]["area"] == 20 * 20 and d["annotations"][0]["score"] == 1.0


def test_matching_parameters_are_the_shared_declaration_and_recorded():
    from kalos_core.matching.params import MatchingConfig
    from kalos_core.params import ParamError, params_of

    shared = {p.name: p for p in params_of(MatchingConfig)}
    mine = {p.name: p for p in params_of(ConsensusConfig)}
    assert all(mine[n] == p for n, p in shared.items())
    assert set(mine) - set(shared) == {"support", "box_fusion", "pixel_share"}
    with pytest.raises(ParamError) as e:
        ConsensusConfig(box_fusion="mean")
    assert e.value.param == "box_fusion"
    # the config's own matching makes the units; an explicit AgreementConfig replaces it (and is recorded)
    anns = [box(1, "a", 1, 0, 0), box(2, "b", 1, 3, 0)]           # IoU 7/13 = 0.54
    assert len(compute_consensus(ds(anns, "ab")).labels) == 1
    strict = compute_consensus(ds(anns, "ab"), config=ConsensusConfig(threshold=0.9))
    assert not strict.labels and len(strict.review) == 2 and strict.config["threshold"] == 0.9
    res = compute_consensus(ds(anns, "ab"), AgreementConfig(threshold=0.9, solver="shm"), ConsensusConfig())
    assert not res.labels and res.config["threshold"] == 0.9 and res.config["solver"] == "shm"
