"""Semantic masks: Krippendorff's α over pixels, Dice / Jaccard and boundary measures per class and
rater pair, STAPLE and majority-vote consensus (docs/masks.md).

>>> from kalos_core.masks import compute_masks, masks_dataset, MaskConfig
>>> masks = {"ann": {"img1": ann_map}, "bob": {"img1": bob_map}}
>>> compute_masks(masks_dataset(masks), masks, MaskConfig(tolerance=2)).alpha
"""

from .engine import MaskConfig, MaskResult, compute_masks, mask_steps, masks_dataset
from .label_studio import decode_brush_rle, read_label_studio_brush
from .staple import StapleFit, staple

__all__ = ["MaskConfig", "MaskResult", "StapleFit", "compute_masks", "decode_brush_rle", "mask_steps", "masks_dataset",
           "read_label_studio_brush", "staple"]
