"""Reference values on the public LVIS double-annotation subset (docs/method.md §9).

Skipped when ../shared/data is absent (a user's fresh clone).
"""

import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco

pytestmark = pytest.mark.realdata
CFG = AgreementConfig(threshold=0.5, solver="greedy", cost="soft", bootstrap=0,
                      vitality=False, collaboration=False, class_difficulty=False)


@pytest.mark.parametrize("task, mean, global_", [("bbox", 0.6889, 0.6483), ("segm", 0.7030, 0.6521)])
def test_published_values(lvis_subset_path, task, mean, global_):
    res = compute_agreement(load_coco(lvis_subset_path, task), CFG)
    assert res.n_images == 200
    assert round(res.mean_alpha, 4) == mean
    assert round(res.global_alpha, 4) == global_


def test_all_diagnostics_run_on_real_data(lvis_subset_path):
    res = compute_agreement(load_coco(lvis_subset_path, "bbox"),
                            AgreementConfig(lsa_thresholds=(0.3, 0.5, 0.7, 0.9), bootstrap=200))
    lo, hi = res.mean_alpha_ci
    assert lo < res.mean_alpha < hi
    assert res.lsa["0.3"] > res.lsa["0.9"]              # a strict threshold splits units
    assert len(res.collaboration) >= 2 and res.class_difficulty
