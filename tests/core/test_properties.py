"""Property tests: α range, permutation invariance, deterministic Greedy."""


import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kalos_core import AgreementConfig, Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.reliability import alpha

CFG = AgreementConfig(bootstrap=0, vitality=True, collaboration=False, class_difficulty=False)

values = st.one_of(st.just(np.nan), st.integers(-1, 3).map(float))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5).flatmap(lambda r: st.lists(st.lists(values, min_size=r, max_size=r), min_size=1, max_size=8)))
def test_alpha_stays_in_range(columns):
    a = alpha(np.array(columns, dtype=float).T)
    assert -1.0 - 1e-12 <= a <= 1.0 + 1e-12


box = st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(3, 30), st.integers(3, 30), st.integers(1, 3))


@st.composite
def images(draw):
    n_raters = draw(st.integers(2, 4))
    raters = [f"r{k}" for k in range(n_raters)]
    anns = []
    for r in raters:
        for x, y, w, h, c in draw(st.lists(box, max_size=5)):
            anns.append(Annotation(len(anns), r, c, (x, y, w, h)))
    return make_image(0, 100, 100, raters, anns)


def run(image):
    return compute_agreement(MultiRaterDataset([image], {1: "a", 2: "b", 3: "c"}, "box"), CFG)


@settings(max_examples=80, deadline=None)
@given(images(), st.randoms(use_true_random=False))
def test_permuting_raters_and_annotations_changes_nothing(image, rnd):
    base = run(image)
    anns = list(image.annotations)
    rnd.shuffle(anns)
    raters = list(image.raters)
    rnd.shuffle(raters)
    shuffled = run(make_image(0, 100, 100, raters, anns))
    assert shuffled.mean_alpha == base.mean_alpha
    assert shuffled.global_alpha == base.global_alpha
    assert shuffled.vitality == base.vitality
    groups = lambda res: sorted(sorted(k for k, u in res.unit_of.items() if u == unit) for unit in set(res.unit_of.values()))
    assert groups(shuffled) == groups(base)


@settings(max_examples=40, deadline=None)
@given(images())
def test_greedy_gives_the_same_units_on_every_run(image):
    assert run(image).unit_of == run(image).unit_of


@settings(max_examples=60, deadline=None)
@given(images())
def test_a_rater_copied_from_another_never_lowers_their_pairwise_alpha(image):
    a = [x for x in image.annotations if x.rater == "r0"]
    copy = [Annotation(f"c{x.id}", "copy", x.category, x.geometry) for x in a]
    res = compute_agreement(MultiRaterDataset([make_image(0, 100, 100, ["r0", "copy"], a + copy)],
                                              {1: "a", 2: "b", 3: "c"}, "box"), CFG)
    assert res.mean_alpha == 1.0
