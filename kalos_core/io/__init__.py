"""Readers for multi-rater label files, with validation at the edge."""

from .coco import TASK_KINDS, dataset_to_coco, load_coco
from .validation import InvalidInputError, Problem
from .yolo import load_yolo

__all__ = ["TASK_KINDS", "InvalidInputError", "Problem", "dataset_to_coco", "load_coco", "load_yolo"]
