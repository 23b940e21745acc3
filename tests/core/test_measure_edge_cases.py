"""Agreement, variations and consensus on unusual-but-valid data and on bad settings (issue 22):
a known answer or a ParamError naming the setting, measure by measure (parametrised measure x case)."""

from __future__ import annotations

import pytest

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.consensus import ConsensusConfig, compute_consensus
from kalos_core.io.validation import InvalidInputError
from kalos_core.params import ParamError, fraction_key
from kalos_core.variations import VariationConfig, compute_variations

MEASURES = ("agreement", "variations", "consensus")


def box(aid, rater, cat, x, y=5.0, w=12.0, h=8.0):
    return Annotation(aid, rater, cat, (x, y, w, h))


def dataset(raters, anns, images=1):
    return MultiRaterDataset([make_image(i, 100, 100, raters, [a for a in anns if str(a.id).startswith(f"{i}:")])
                              for i in range(images)], {1: "A", 2: "B"}, "box")


def run(measure, ds, **settings):
    if measure == "agreement":
        return compute_agreement(ds, AgreementConfig(**{"bootstrap": 0, **settings}))
    if measure == "variations":
        return compute_variations(ds, VariationConfig(**settings))
    return compute_consensus(ds, config=ConsensusConfig(**settings))


def labels(raters, k=3):
    """Every rater draws the same k boxes (classes A, B, A, ...) on image 0."""
    return [box(f"0:{r}{j}", r, 1 + j % 2, 25.0 * j) for r in raters for j in range(k)]


def check_known(measure, res, ds, agreeing):
    """α 1, every label agreed, the consensus = the labels (of the raters that drew them)."""
    anns = [a for im in ds.images for a in im.annotations]
    if measure == "agreement":
        assert res.mean_alpha == 1.0 and set(res.per_image_alpha.values()) == {1.0}
        assert {res.status_of[a.id] for a in anns} <= {"agreed", "single"}
    elif measure == "variations":
        assert {res.labels[a.id].type for a in anns} <= {"agreed"} or not agreeing
        assert res.counts["0.5"]["agreed"] == (len(anns) if agreeing else 0)
    else:
        got = sorted((lab.category, lab.geometry) for lab in res.labels)
        want = sorted({(a.category, tuple(map(float, a.geometry))) for a in anns})
        assert got == (want if agreeing else []) and (agreeing or res.review)


# -- unusual but valid data: the known answers ------------------------------------------------------
@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("case", ["identical", "identical_many", "one_rater_labels", "silent_rater_listed",
                                  "class_one_rater_never_uses", "nobody_labels"])
def test_unusual_but_valid_data_gives_the_known_answer(measure, case):
    if case == "identical":
        ds, agreeing = dataset("abc", labels("abc")), True
    elif case == "identical_many":            # 50 raters on one image, identical: seconds, not minutes
        raters = [f"r{k:02d}" for k in range(50)]
        ds, agreeing = dataset(raters, labels(raters)), True
    elif case == "one_rater_labels":           # one rater: refused, saying why (variations too, issue 22)
        ds = dataset("a", labels("a"))
        with pytest.raises(InvalidInputError, match="two or more raters"):
            run(measure, ds)
        return
    elif case == "silent_rater_listed":        # c is listed but never labels: explicit absence, not agreement
        ds = dataset("abc", labels("ab"))
        res = run(measure, ds)
        if measure == "agreement":
            assert 0 < res.mean_alpha < 1 and res.vitality["c"] < 0 < res.vitality["a"]
        elif measure == "variations":
            assert set(res.by_rater["0.5"]) == {"a", "b"} and res.counts["0.5"]["agreed"] == 6
        else:
            assert len(res.labels) == 3 and all(lab.support == 2 and lab.n_assigned == 3 for lab in res.labels)
        return
    elif case == "class_one_rater_never_uses":  # b never uses class B: its B-box is missing -> not A
        anns = [box("0:a0", "a", 1, 0), box("0:a1", "a", 2, 40), box("0:b0", "b", 1, 0)]
        res = run(measure, dataset("ab", anns))
        if measure == "agreement":
            # units (A, A) and (B, NO_OBJECT): n = 4, Σo_cc = 2, Σn_c(n_c-1) = 2 -> (3*2 - 2) / (12 - 2)
            assert res.class_difficulty == {"A": 1.0, "B": 0.0} and res.per_image_alpha["0"] == pytest.approx(0.4)
        elif measure == "variations":
            assert res.labels["0:a1"].type in ("missed", "additional") and res.labels["0:a0"].type == "agreed"
        else:
            assert [lab.category for lab in res.labels] == [1] and [r.members for r in res.review] == [("0:a1",)]
        return
    else:                                       # raters listed, no labels anywhere
        ds, agreeing = dataset("ab", []), True
    check_known(measure, run(measure, ds), ds, agreeing)


# -- bad settings: a ParamError naming the setting --------------------------------------------------
BAD = {
    "agreement": [("distance", "no_such_distance"), ("threshold", 1.5), ("threshold", -0.1),
                  ("lsa_thresholds", (0.7, 0.1 * 7)), ("lsa_thresholds", (0.5, 0.5)), ("lsa_thresholds", (2.0,)),
                  ("bootstrap", -1), ("bootstrap", 10**9), ("seed", 2**64)],
    "variations": [("thresholds", (0.7, 0.1 * 7)), ("thresholds", (0.0,)), ("thresholds", (0.5, 1.2)),
                   ("threshold", 1.01)],
    "consensus": [("distance", "no_such_distance"), ("threshold", 1.5), ("support", -0.5), ("pixel_share", 0.0)],
}


@pytest.mark.parametrize("measure, name, value", [(m, n, v) for m, cases in BAD.items() for n, v in cases])
def test_a_bad_setting_is_refused_naming_it(measure, name, value):
    with pytest.raises(ParamError) as e:
        run(measure, dataset("ab", labels("ab")), **{name: value})
    assert e.value.param == name and name in str(e.value)


def test_thresholds_differing_in_the_last_float_digit_are_one_threshold_and_one_key():
    ds = dataset("ab", labels("ab") + [box("0:c", "a", 1, 80, w=6)])
    ref, noisy = run("variations", ds, thresholds=(0.5, 0.7)), run("variations", ds, thresholds=(0.5, 0.1 * 7))
    assert noisy.counts == ref.counts and list(noisy.counts) == ["0.5", "0.7"]
    assert sum(noisy.counts["0.7"].values()) == 7          # each label counted once, never twice
    with pytest.raises(ParamError, match=r"0\.7 and 0\.7000000000000001"):
        VariationConfig(thresholds=(0.7, 0.1 * 7))
    lsa = run("agreement", ds, lsa_thresholds=(0.1 * 3, 0.5))
    assert list(lsa.lsa) == ["0.3", "0.5"]
    assert fraction_key(0.1234561) != fraction_key(0.1234562)   # :g gave both "0.123456"
