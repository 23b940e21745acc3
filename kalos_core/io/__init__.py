"""Readers for multi-rater label files, with validation at the edge."""

from .coco import TASK_KINDS, dataset_to_coco, load_coco
from .jsonfile import read_json
from .records import check_measurable, validate_dataset
from .validation import InputWarnings, InvalidInputError, KalosInputError, Problem
from .yolo import load_yolo

__all__ = ["TASK_KINDS", "InputWarnings", "InvalidInputError", "KalosInputError", "Problem", "check_measurable",
           "dataset_to_coco", "load_coco", "load_yolo", "read_json", "validate_dataset"]
