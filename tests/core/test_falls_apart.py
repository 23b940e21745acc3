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
