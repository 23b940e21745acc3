"""Generated vs. real: does a profile reproduce the data it was fitted on?

For every image with at least two raters, the first rater (sorted) is the reference
and the second the real "noisy" rater. One synthetic rater is drawn from the
reference with the profile; then the pair (reference, real) and the pair
(reference, synthetic) are compared: match rate, class-flip rate, the IoU
distribution of matched pairs and the distribution of per-image KαLOS α (two-sample
KS tests). Geometry: boxes (polygons and keypoints through their boxes). The λ = 1
check of mean and global α is :mod:`kalos_core.noise.lambda_check`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

from ..agreement.pipeline import AgreementConfig, compute_agreement
from ..data import MultiRaterDataset
from .channels import RefObject
from .fit import PairStats, pair_images, pair_statistics, rel_boxes
from .generator import RefImage, Reference, simulate
from .profile import NoiseProfile

#: tolerances of the generated-vs-real check (used by the tests and stated in docs/noise.md)
TOLERANCES = {"match_rate": 0.05, "flip_rate": 0.015, "iou_ks": 0.10, "alpha_ks": 0.15}
_ALPHA_CONFIG = AgreementConfig(bootstrap=0, vitality=False, class_difficulty=False, collaboration=False,
                                intra_rater=False)


@dataclass
class ProfileCheck:
    real: PairStats
    synthetic: PairStats
    iou_ks: float
    iou_ks_p: float
    alpha_ks: float = 0.0          #: KS statistic of per-image α, real vs synthetic
    alpha_ks_p: float = 1.0
    real_alpha: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    synthetic_alpha: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def deviations(self) -> dict[str, float]:
        return {"match_rate": abs(self.real.match_rate - self.synthetic.match_rate),
                "flip_rate": abs(self.real.flip_rate - self.synthetic.flip_rate), "iou_ks": self.iou_ks,
                "alpha_ks": self.alpha_ks}

    def passed(self, tolerances: dict | None = None) -> bool:
        tol = tolerances or TOLERANCES
        return all(v <= tol[k] for k, v in self.deviations().items())

    def to_dict(self) -> dict:
        return {"real": {"match_rate": self.real.match_rate, "flip_rate": self.real.flip_rate,
                         "median_iou": float(np.median(self.real.ious)) if len(self.real.ious) else None},
                "synthetic": {"match_rate": self.synthetic.match_rate, "flip_rate": self.synthetic.flip_rate,
                              "median_iou": float(np.median(self.synthetic.ious)) if len(self.synthetic.ious)
                              else None},
                "iou_ks": self.iou_ks, "iou_ks_p": self.iou_ks_p, "alpha_ks": self.alpha_ks,
                "alpha_ks_p": self.alpha_ks_p,
                "mean_alpha": {"real": float(np.mean(self.real_alpha)) if len(self.real_alpha) else None,
                               "synthetic": float(np.mean(self.synthetic_alpha)) if len(self.synthetic_alpha)
                               else None},
                "deviations": self.deviations()}


def _first_two(image) -> tuple[str, str] | None:
    rows = sorted(image.raters)
    return (rows[0], rows[1]) if len(rows) >= 2 else None


def check_profile(ds: MultiRaterDataset, profile: NoiseProfile, seed: int = 0, threshold: float = 0.5) -> ProfileCheck:
    """Compare real pairs with reference -> synthetic pairs (box IoU; see the module docstring)."""
    if ds.kind not in ("box", "polygon", "keypoints"):
        raise ValueError(f"check_profile supports boxes, polygons and keypoints (through boxes), not {ds.kind}")
    images = []
    for im, who in pair_images(ds, _first_two):
        anns = [a for a in im.annotations if a.rater == who[0]]
        boxes = rel_boxes(im, anns)
        objs = []
        for a, b in zip(anns, boxes):
            x0, y0, x1, y1 = b * [im.width, im.height, im.width, im.height]
            bbox = (float(x0), float(y0), float(x1 - x0), float(y1 - y0))
            objs.append(RefObject(a.id, a.category, b, None, bbox, bbox))
        images.append(RefImage(im.id, im.width, im.height, im.file_name, objs))
    reference = Reference(images, dict(ds.categories), "bbox")
    synthetic = simulate(reference, n_raters=1, magnitude=1.0, seed=seed, profile=profile,
                         include_reference=True).dataset()
    real_boxes = _boxes_of_first_two(ds)
    real = pair_statistics(real_boxes, _first_two, threshold)
    synth = pair_statistics(synthetic, lambda im: ("reference", "rater_1"), threshold)
    real_alpha = _per_image_alpha(real_boxes, threshold)
    synth_alpha = _per_image_alpha(synthetic, threshold)
    a_ks = stats.ks_2samp(real_alpha, synth_alpha) if len(real_alpha) and len(synth_alpha) else None
    extra = {"alpha_ks": float(a_ks.statistic) if a_ks else 1.0, "alpha_ks_p": float(a_ks.pvalue) if a_ks else 0.0,
             "real_alpha": real_alpha, "synthetic_alpha": synth_alpha}
    if len(real.ious) and len(synth.ious):
        ks = stats.ks_2samp(real.ious, synth.ious)
        return ProfileCheck(real, synth, float(ks.statistic), float(ks.pvalue), **extra)
    return ProfileCheck(real, synth, 1.0, 0.0, **extra)


def _boxes_of_first_two(ds: MultiRaterDataset) -> MultiRaterDataset:
    """The first two raters of every image with two or more, as boxes."""
    images = []
    for im, who in pair_images(ds, _first_two):
        anns = [a for a in im.annotations if a.rater in who]
        boxes = rel_boxes(im, anns) * [im.width, im.height, im.width, im.height]
        anns = [replace(a, geometry=(float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])),
                        bbox=(float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])))
                for a, b in zip(anns, boxes)]
        images.append(replace(im, raters=who, annotations=anns, rater_classes=None, row_rater=None))
    return MultiRaterDataset(images, dict(ds.categories), "box")


def _per_image_alpha(ds: MultiRaterDataset, threshold: float) -> np.ndarray:
    res = compute_agreement(ds, replace(_ALPHA_CONFIG, threshold=threshold))
    return np.array(list(res.per_image_alpha.values()), float)
