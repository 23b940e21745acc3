"""Which images need another rater, by hand: the rater bootstrap's spread and the expected narrowing
of the interval (formula in docs/scorecards.md), and the ranking."""

import itertools
import math

import numpy as np
import pytest

from kalos_core import Annotation, MultiRaterDataset, make_image
from kalos_core.next_rater import NextRaterConfig, next_rater_steps
from kalos_core.next_rater.engine import drawn_alpha, image_need
from kalos_core.progress import run_steps
from kalos_core.reliability import NO_OBJECT

Z = 1.959963984540054
CAT, DOG = 1, 2


def box(aid, rater, cat, x):
    return Annotation(aid, rater, cat, (x, 0, 20, 20))


def ranked(images):
    return run_steps(next_rater_steps(MultiRaterDataset(images, {CAT: "cat", DOG: "dog"}, "box"), NextRaterConfig()))


def test_two_raters_spread_is_half_of_one_minus_alpha_and_the_ranking_puts_disagreement_first():
    # image 1: O1 both cat, O2 a cat / b dog (one unit), O3 a alone: α = (5·2 - 12) / (30 - 12) = -1/9
    disagree = make_image(1, 500, 500, ["a", "b"], [box(1, "a", CAT, 0), box(2, "b", CAT, 0), box(3, "a", CAT, 100),
                                                    box(4, "b", DOG, 100), box(5, "a", CAT, 200)])
    agree = make_image(2, 500, 500, ["a", "b"], [box(6, "a", CAT, 0), box(7, "b", CAT, 0)])
    alone = make_image(3, 500, 500, ["a"], [box(8, "a", CAT, 0)])          # one rater: not ranked
    res = ranked([agree, alone, disagree])
    assert [r["image"] for r in res.rows] == [1, 2]
    top = res.rows[0]
    assert top["alpha"] == pytest.approx(-1 / 9) and top["n_raters"] == 2
    assert top["spread"] == pytest.approx((1 + 1 / 9) / 2)                # draws aa, bb: α 1; ab, ba: α -1/9
    assert top["gain"] == pytest.approx(2 * Z * 5 / 9 * (1 - math.sqrt(2 / 3)))
    assert (res.rows[1]["alpha"], res.rows[1]["spread"], res.rows[1]["gain"]) == (1.0, 0.0, 0.0)
    assert res.csv_text().splitlines()[0] == "image,n_raters,alpha,spread,gain"


def test_three_raters_weigh_every_ordered_draw_once():
    # U1: all cat; U2: a, b cat, c dog. α = (5·4 - 20) / (30 - 20) = 0
    m = np.array([[CAT, CAT], [CAT, CAT], [CAT, DOG]], float)
    need = image_need(m, 0.95, 10, np.random.default_rng(0))
    assert need["alpha"] == 0.0
    every = np.array([drawn_alpha(m, d) for d in itertools.product(range(3), repeat=3)])   # the 27 ordered draws
    assert need["spread"] == pytest.approx(every.std())
    assert need["gain"] == pytest.approx(2 * Z * every.std() * (1 - math.sqrt(3 / 4)))


def test_a_unit_no_drawn_rater_labelled_is_left_out():
    m = np.array([[CAT, NO_OBJECT], [CAT, DOG]], float)       # U2 only b's: drawing a twice leaves U1 alone
    assert drawn_alpha(m, (0, 0)) == 1.0 and drawn_alpha(m, (1, 1)) == 1.0


def test_each_images_alpha_is_the_agreement_runs():
    from kalos_core.agreement.pipeline import AgreementConfig, compute_agreement
    from kalos_core.demo_data import demo_example

    ds = demo_example().dataset
    agreement = compute_agreement(ds, AgreementConfig(bootstrap=0))
    res = run_steps(next_rater_steps(ds, NextRaterConfig(), agreement.unit_of))
    assert len(res.rows) == sum(len(im.raters) >= 2 for im in ds.images) > 5
    for r in res.rows:
        assert r["alpha"] == pytest.approx(agreement.per_image_alpha[str(r["image"])], abs=1e-12), r["image"]
    assert [r["gain"] for r in res.rows] == sorted((r["gain"] for r in res.rows), reverse=True)
