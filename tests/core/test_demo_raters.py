"""The demo's raters (kalos_core.demo_raters) come from the fitted profile and their habits show
up in the diagnostics, on the data ``make demo`` builds (build_demo, 40 images, seed 0)."""

import json

import numpy as np
import pytest

from kalos_core import load_coco
from kalos_core.agreement import AgreementConfig, compute_agreement
from kalos_core.demo_data import SMALL_AREA, build_demo, make_scenes
from kalos_core.demo_raters import demo_rater_specs
from kalos_core.noise import load_profile

CONFIG = AgreementConfig(threshold=0.5, bootstrap=0, collaboration=False, intra_rater=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = build_demo(tmp_path_factory.mktemp("demo"), n_images=40, seed=0, with_images=False)  # make demo's defaults
    return path, json.loads(path.read_text())


@pytest.fixture(scope="module", params=["segm", "bbox"])
def result(request, demo):
    return compute_agreement(load_coco(demo[0], request.param), CONFIG)


def test_demo_raters_are_modifications_of_the_fitted_profile(demo):
    fitted = load_profile(task="segm")
    assert demo[1]["info"]["kalos_simulation"]["profile"] == fitted.meta["source"]
    assert fitted.meta["file"].startswith("lvis_v1_val")
    specs = {s.name: s for s in demo_rater_specs()}
    assert [s for s in specs] == ["careful", "sloppy", "misses_small", "confuser"]
    assert specs["careful"].profile is None and specs["sloppy"].profile is None  # the fitted profile as it is
    assert specs["misses_small"].profile.localisation == fitted.localisation
    assert specs["confuser"].profile.unmatched == fitted.unmatched
    assert specs["careful"].magnitude < specs["sloppy"].magnitude == 1.0


def test_vitality_ranks_careful_then_sloppy_then_the_two_habits(result):
    v = result.vitality
    assert v["careful"] > v["sloppy"] > 0, v
    assert max(v["misses_small"], v["confuser"]) < 0, v  # the habits cost the most


def test_circles_and_ellipses_the_confuser_swaps_are_the_hardest_classes(result):
    d = result.class_difficulty
    hardest = sorted(d, key=d.get)[:2]
    assert set(hardest) == {"circle", "ellipse"}, d
    assert max(d["circle"], d["ellipse"]) < min(v for k, v in d.items() if k not in ("circle", "ellipse")) - 0.1


def test_misses_small_drops_small_objects_and_the_confuser_swaps_circles(demo):
    scenes = make_scenes(40, seed=0)
    coco = demo[1]
    small = {(s.image_id, k) for s in scenes for k, o in enumerate(s.objects) if o.area < SMALL_AREA}
    large = {(s.image_id, k) for s in scenes for k, o in enumerate(s.objects) if o.area >= SMALL_AREA}

    def recall(rater, refs):
        hit = {(a["image_id"], a["ref_index"]) for a in coco["annotations"] if a["rater_id"] == rater}
        return len(refs & hit) / len(refs)

    assert recall("misses_small", small) < 0.6 < 0.85 < min(recall("careful", small), recall("sloppy", small))
    assert recall("misses_small", large) - recall("misses_small", small) > 0.3  # aimed at small objects
    by_ref = {(s.image_id, k): o.category_id for s in scenes for k, o in enumerate(s.objects)}

    def swapped(rater):
        pairs = [(by_ref[(a["image_id"], a["ref_index"])], a["category_id"]) for a in coco["annotations"]
                 if a["rater_id"] == rater and a["ref_index"] >= 0]
        circles = [c for t, c in pairs if t == 1]
        others = [(t, c) for t, c in pairs if t not in (1, 5)]
        return np.mean([c == 5 for c in circles]), np.mean([t != c for t, c in others])

    share, other_flips = swapped("confuser")
    assert 0.6 <= share <= 0.9 and other_flips < 0.02
    assert swapped("careful")[0] < 0.05
