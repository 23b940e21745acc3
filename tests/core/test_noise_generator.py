"""The noise generator: determinism, λ = 0 identity, monotone α, truth bookkeeping, schools."""

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco
from kalos_core.noise import builtin_profile, load_profile, reference_from_coco, school_raters, simulate
from kalos_core.noise.channels import ClassSampler
from kalos_core.noise.profile import ClassModel, NoiseProfile
from kalos_core.noise.testbed import lvis_like_reference, reference_to_coco

REPO_ROOT = Path(__file__).resolve().parents[2]
FAST = AgreementConfig(bootstrap=0, vitality=False, class_difficulty=False, collaboration=False, intra_rater=False)


@pytest.fixture(scope="module")
def boxes():
    return lvis_like_reference(40, seed=3)


def _mean_alpha(sim):
    return compute_agreement(sim.dataset(), FAST).mean_alpha


def test_same_seed_same_output_other_seed_differs(boxes):
    a = simulate(boxes, n_raters=3, magnitude=1.0, seed=7)
    b = simulate(boxes, n_raters=3, magnitude=1.0, seed=7)
    assert json.dumps(a.coco) == json.dumps(b.coco)
    assert a.coco["annotations"] != simulate(boxes, n_raters=3, magnitude=1.0, seed=8).coco["annotations"]


def test_adding_a_rater_leaves_the_others_unchanged(boxes):
    def by_rater(sim):
        out = defaultdict(list)
        for a in sim.coco["annotations"]:
            out[a["rater_id"]].append((a["image_id"], a["bbox"], a["category_id"]))
        return out
    three, four = by_rater(simulate(boxes, 3, seed=1)), by_rater(simulate(boxes, 4, seed=1))
    assert all(three[r] == four[r] for r in three) and "rater_4" in four


@pytest.mark.parametrize("kind", ["box", "polygon", "keypoints"])
def test_magnitude_zero_copies_the_reference_exactly(kind):
    ref = lvis_like_reference(15, seed=2, kind=kind)
    sim = simulate(ref, n_raters=4, magnitude=0.0, seed=0)
    clean = reference_to_coco(ref)["annotations"]
    key = {"box": "bbox", "polygon": "segmentation", "keypoints": "keypoints"}[kind]
    expected = sorted((a["image_id"], a["category_id"], json.dumps(a[key])) for a in clean)
    for rater in ("rater_1", "rater_2", "rater_3", "rater_4"):
        got = sorted((a["image_id"], a["category_id"], json.dumps(a[key]))
                     for a in sim.coco["annotations"] if a["rater_id"] == rater)
        assert got == expected
    assert all(a["truth_errors"] == [] for a in sim.coco["annotations"])
    assert sim.stats.ratio == 0.0
    task = {"box": "bbox", "polygon": "segm", "keypoints": "keypoints"}[kind]
    result = compute_agreement(load_coco(sim.coco, task), FAST)
    assert result.mean_alpha == 1.0 and result.global_alpha == 1.0


def test_alpha_decreases_strictly_with_magnitude(boxes):
    alphas = [_mean_alpha(simulate(boxes, n_raters=3, magnitude=lam, seed=0)) for lam in (0, 0.5, 1, 2, 4)]
    assert alphas[0] == 1.0
    assert all(a > b for a, b in zip(alphas, alphas[1:])), alphas
    assert alphas[-1] < 0.2


def test_truth_bookkeeping_is_complete_and_consistent(boxes):
    sim = simulate(boxes, n_raters=3, magnitude=3.0, seed=5)
    refs = {im.id: {o.id: o for o in im.objects} for im in boxes.images}
    errors = Counter(e for a in sim.coco["annotations"] for e in a["truth_errors"])
    for kind in ("localisation", "class", "fragment", "combination", "false_positive"):
        assert errors[kind] > 0, kind  # every channel fired at λ = 3
    for im in sim.coco["images"]:
        for rater in im["rater_list"]:
            anns = [a for a in sim.coco["annotations"] if a["image_id"] == im["id"] and a["rater_id"] == rater]
            used = Counter(r for a in anns for r in set(a["truth_ref_ids"]))
            missed = set(im["truth_missed"][rater])
            assert not missed & set(used)                      # a miss is absent from that rater's labels
            assert missed | set(used) == set(refs[im["id"]])   # every reference object accounted for
            for a in anns:
                e, ids = a["truth_errors"], a["truth_ref_ids"]
                if "false_positive" in e:
                    assert ids == [] and a["truth_category"] is None
                    continue
                truth = refs[im["id"]][ids[0]].category
                assert a["truth_category"] == truth
                if "class" in e:
                    assert a["category_id"] != truth            # a flip carries the flipped class
                else:
                    assert a["category_id"] == truth
                assert len(ids) == (2 if "combination" in e else 1)
                if "fragment" in e:
                    assert used[ids[0]] <= 2                    # at most two children per parent
                else:
                    assert used[ids[0]] == 1


def test_cannibalisation_grows_with_magnitude(boxes):
    ratios = [simulate(boxes, n_raters=3, magnitude=lam, seed=0).stats.ratio for lam in (0.25, 1, 5)]
    assert 0 <= ratios[0] < ratios[1] < ratios[2] < 0.6


def test_polygon_and_keypoint_output_loads_and_keeps_structure():
    for kind, task in (("polygon", "segm"), ("keypoints", "keypoints")):
        ref = lvis_like_reference(10, seed=4, kind=kind)
        sim = simulate(ref, n_raters=3, magnitude=2.0, seed=1)
        ds = load_coco(sim.coco, task)
        assert ds.n_annotations == len(sim.coco["annotations"]) > 0
        if kind == "keypoints":
            assert all(len(a["keypoints"]) == 15 for a in sim.coco["annotations"])
        else:
            assert all(len(r) >= 6 for a in sim.coco["annotations"] for r in a["segmentation"])


def test_school_conventions_are_systematic_and_balanced_splits_score_lower(boxes):
    raters = school_raters([2, 2], strength=0.4)
    sim = simulate(boxes, raters=raters, magnitude=0.0, seed=0)
    ref = {o.id: o.bbox for im in boxes.images for o in im.objects}
    for a in sim.coco["annotations"]:
        x, y, w, h = ref[a["truth_ref_ids"][0]]
        top = -0.2 if a["rater_id"] in ("rater_1", "rater_2") else 0.2  # school A: top edge moves down
        assert a["bbox"][1] == pytest.approx(max(y - top * h, 0.0), abs=0.02) or a["bbox"][1] <= 0.01
        assert a["truth_errors"][-1].startswith("school:")
    alpha = {sizes: _mean_alpha(simulate(boxes, raters=school_raters(sizes, strength=0.8), magnitude=0.5, seed=0))
             for sizes in ((5, 1), (3, 3))}
    assert alpha[(3, 3)] < alpha[(5, 1)]


def test_defiant_rater_is_the_odd_one_out(boxes):
    raters = school_raters([4], defiant=True)
    assert [r.name for r in raters][-1] == "defiant" and raters[-1].magnitude == 2.0
    res = compute_agreement(simulate(boxes, raters=raters, magnitude=1.0, seed=0).dataset(),
                            AgreementConfig(bootstrap=0))
    assert min(res.vitality, key=res.vitality.get) == "defiant"


def test_class_sampler_uses_observed_then_similarity_then_uniform():
    cats = {1: "cat", 2: "dog", 3: "car", 4: "bus"}
    rng = np.random.default_rng(0)
    observed = ClassSampler(cats, ClassModel(confusion={"cat": {"dog": 1.0}}))
    assert {observed.sample(1, rng) for _ in range(50)} == {2}
    sim = {"car": {"bus": 0.9, "cat": 0.1, "dog": 0.1}}
    similar = ClassSampler(cats, ClassModel(temperature=0.1), similarity=sim)
    draws = Counter(similar.sample(3, rng) for _ in range(400))
    assert draws[4] > 0.95 * 400 and 3 not in draws
    uniform = Counter(ClassSampler(cats, ClassModel()).sample(2, rng) for _ in range(600))
    assert set(uniform) == {1, 3, 4} and min(uniform.values()) > 150


def test_profile_json_round_trip_and_default(tmp_path):
    p = builtin_profile()
    path = p.save(tmp_path / "p.json")
    q = load_profile(path)
    assert q.to_dict() == p.to_dict()
    assert NoiseProfile.from_dict(json.loads(path.read_text())).topology.angle_alpha == 4.53
    default = load_profile()
    assert default.classes.rate > 0 and "source" in default.meta and default.fit_report
    with pytest.raises(ValueError):
        NoiseProfile.from_dict({**p.to_dict(), "bogus": 1})


def test_reference_from_coco_ignores_rater_keys(boxes):
    coco = reference_to_coco(boxes)
    for a in coco["annotations"]:
        a["rater_id"] = "someone"
    ref = reference_from_coco(coco)
    assert ref.n_objects == boxes.n_objects
    with pytest.raises(ValueError, match="'nobody' is not a rater of .*its raters are: someone"):
        reference_from_coco(coco, rater="nobody")   # a rater named nowhere in the file is refused, not empty


def test_noise_package_does_not_import_fiftyone():
    code = ("import sys, kalos_core.noise, kalos_core.noise.fit, kalos_core.noise.simulate_measure, "
            "kalos_core.noise.fit_measure; assert 'fiftyone' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)
