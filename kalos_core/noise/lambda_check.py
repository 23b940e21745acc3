"""The λ = 1 validity check (paper Sec. 9.4, "empirical baseline").

A profile fitted on real rater pairs describes the disagreement of a *pair* of raters, so at
λ = 1 one synthetic rater simulated from one real rater (the reference) must disagree with
that reference as much as the second real rater does: KαLOS α(reference, synthetic) ≈
α(reference, other), for the mean of per-image α and for global α. Use held-out images
(``image_ids``) to guard against over-fitting.

>>> check = lambda_one_check("lvis.json", load_profile(), task="bbox", seeds=range(5))
>>> check.synthetic_mean - check.real_mean
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from scipy import stats

from ..agreement.pipeline import AgreementConfig, compute_agreement
from ..io.coco import load_coco
from .generator import reference_from_coco, simulate
from .profile import NoiseProfile

#: agreement settings of the check (docs/method.md §9: IoU 0.5, Greedy, ψsoft)
CHECK_CONFIG = AgreementConfig(threshold=0.5, bootstrap=0, vitality=False, class_difficulty=False,
                               collaboration=False, intra_rater=False)


@dataclass
class LambdaCheck:
    """Real α(reference, other) next to α(reference, synthetic) per seed."""

    task: str
    n_images: int
    real_mean: float
    real_global: float
    synthetic: list[tuple[float, float]]            #: (mean, global) per seed
    real_per_image: np.ndarray = field(repr=False)
    synthetic_per_image: np.ndarray = field(repr=False)  #: all seeds pooled

    @property
    def synthetic_mean(self) -> float:
        return float(np.mean([s[0] for s in self.synthetic]))

    @property
    def synthetic_global(self) -> float:
        return float(np.mean([s[1] for s in self.synthetic]))

    @property
    def per_image_ks(self) -> float:
        """Two-sample KS statistic of the per-image α distributions (real vs pooled synthetic)."""
        return float(stats.ks_2samp(self.real_per_image, self.synthetic_per_image).statistic)

    def to_dict(self) -> dict:
        return {"task": self.task, "n_images": self.n_images, "real_mean_alpha": self.real_mean,
                "real_global_alpha": self.real_global, "synthetic_mean_alpha": self.synthetic_mean,
                "synthetic_global_alpha": self.synthetic_global,
                "synthetic_per_seed": [list(s) for s in self.synthetic],
                "per_image_alpha_ks": self.per_image_ks}


def subset_coco(coco: dict, image_ids: Iterable[Any]) -> dict:
    """The images ``image_ids`` of a COCO dict and their annotations."""
    keep = set(image_ids)
    return {**coco, "images": [im for im in coco["images"] if im["id"] in keep],
            "annotations": [a for a in coco["annotations"] if a["image_id"] in keep]}


def _alphas(coco: dict, task: str) -> tuple[float, float, np.ndarray]:
    res = compute_agreement(load_coco(coco, task), CHECK_CONFIG)
    return res.mean_alpha, res.global_alpha, np.array(list(res.per_image_alpha.values()), float)


def lambda_one_check(source: str | Path | dict, profile: NoiseProfile, task: str = "bbox",
                     seeds: Iterable[int] = range(5), image_ids: Iterable[Any] | None = None,
                     reference_rater: str = "r1", other_rater: str = "r2") -> LambdaCheck:
    """Simulate one rater from ``reference_rater`` at λ = 1 (one run per seed) and compare
    α(reference, synthetic) with the real α(reference, other) on the same images."""
    coco = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    if image_ids is not None:
        coco = subset_coco(coco, image_ids)
    pair = {reference_rater, other_rater}
    real_coco = {**coco, "images": [{**im, "rater_list": [r for r in im["rater_list"] if r in pair]}
                                    for im in coco["images"]],
                 "annotations": [a for a in coco["annotations"] if str(a.get("rater_id")) in pair]}
    real_mean, real_global, real_per = _alphas(real_coco, task)
    reference = reference_from_coco(coco, task, rater=reference_rater)
    synthetic, per = [], []
    for seed in seeds:
        sim = simulate(reference, n_raters=1, magnitude=1.0, seed=int(seed), profile=profile,
                       include_reference=True, reference_name=reference_rater)
        m, g, p = _alphas(sim.coco, task)
        synthetic.append((m, g))
        per.append(p)
    return LambdaCheck(task, len(coco["images"]), real_mean, real_global, synthetic, real_per, np.concatenate(per))
