"""Attribute agreement: Krippendorff's α of the labels' attributes (``occluded``, ``pose``, a plate
number, ...) over the units an agreement run matches.

>>> from kalos_core.attributes import compute_attributes, AttributeConfig
>>> compute_attributes(dataset, {label_id: {"occluded": True}}, AttributeConfig()).attributes["occluded"]["alpha"]
"""

from .alpha import METRICS, group_alpha
from .engine import AttributeConfig, AttributeResult, attribute_steps, compare_attributes, compute_attributes

__all__ = ["AttributeConfig", "AttributeResult", "METRICS", "attribute_steps", "compare_attributes",
           "compute_attributes", "group_alpha"]
