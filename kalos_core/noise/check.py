"""Generated vs. real: does a profile reproduce the data it was fitted on?

For every image with at least two raters, the first rater (sorted) is the reference
and the second the real "noisy" rater. One synthetic rater is drawn from the
reference with the profile; then the pair (reference, real) and the pair
(reference, synthetic) are compared: match rate, class-flip rate and the IoU
distribution of matched pairs (two-sample KS test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..data import MultiRaterDataset
from .channels import RefObject
from .fit import PairStats, pair_statistics
from .generator import RefImage, Reference, simulate
from .profile import NoiseProfile

#: tolerances of the generated-vs-real check (used by the tests and stated in docs/noise.md)
TOLERANCES = {"match_rate": 0.05, "flip_rate": 0.015, "iou_ks": 0.10}


@dataclass
class ProfileCheck:
    real: PairStats
    synthetic: PairStats
    iou_ks: float
    iou_ks_p: float

    def deviations(self) -> dict[str, float]:
        return {"match_rate": abs(self.real.match_rate - self.synthetic.match_rate),
                "flip_rate": abs(self.real.flip_rate - self.synthetic.flip_rate), "iou_ks": self.iou_ks}

    def passed(self, tolerances: dict | None = None) -> bool:
        tol = tolerances or TOLERANCES
        return all(v <= tol[k] for k, v in self.deviations().items())

    def to_dict(self) -> dict:
        return {"real": {"match_rate": self.real.match_rate, "flip_rate": self.real.flip_rate,
                         "median_iou": float(np.median(self.real.ious)) if len(self.real.ious) else None},
                "synthetic": {"match_rate": self.synthetic.match_rate, "flip_rate": self.synthetic.flip_rate,
                              "median_iou": float(np.median(self.synthetic.ious)) if len(self.synthetic.ious)
                              else None},
                "iou_ks": self.iou_ks, "iou_ks_p": self.iou_ks_p, "deviations": self.deviations()}


def _first_two(image) -> tuple[str, str] | None:
    rows = sorted(image.raters)
    return (rows[0], rows[1]) if len(rows) >= 2 else None


def check_profile(ds: MultiRaterDataset, profile: NoiseProfile, seed: int = 0, threshold: float = 0.5) -> ProfileCheck:
    """Compare real pairs with reference -> synthetic pairs (box IoU; see the module docstring)."""
    if ds.kind not in ("box", "polygon", "keypoints"):
        raise ValueError(f"check_profile supports boxes, polygons and keypoints (through boxes), not {ds.kind}")
    from .fit import rel_boxes

    images = []
    for im in ds.images:
        who = _first_two(im)
        if who is None:
            continue
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
    real = pair_statistics(ds, _first_two, threshold)
    synth = pair_statistics(synthetic, lambda im: ("reference", "rater_1"), threshold)
    if len(real.ious) and len(synth.ious):
        ks = stats.ks_2samp(real.ious, synth.ious)
        return ProfileCheck(real, synth, float(ks.statistic), float(ks.pvalue))
    return ProfileCheck(real, synth, 1.0, 0.0)
