"""Variation types of disagreement between raters (label convergence paper, Fig. 2, App. C).

>>> from kalos_core.variations import compute_variations, VariationConfig
>>> res = compute_variations(dataset, VariationConfig(thresholds=(0.5, 0.75)))
>>> res.counts["0.5"]["wrong_class"], res.labels[ann_id].type
"""

from .engine import classify_image, compute_variations, image_merges, pair_outcomes, variation_steps
from .geometry import MERGERS, image_geometry, merge_candidates
from .pair import classify_pair
from .types import DEFAULT_THRESHOLDS, TYPES, LabelVariation, VariationConfig, VariationResult, threshold_key

__all__ = [
    "DEFAULT_THRESHOLDS", "MERGERS", "TYPES", "LabelVariation", "VariationConfig", "VariationResult",
    "classify_image", "classify_pair", "compute_variations", "image_geometry", "image_merges",
    "merge_candidates", "pair_outcomes",
    "threshold_key", "variation_steps",
]
