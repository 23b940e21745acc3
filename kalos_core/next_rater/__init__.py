"""Which images need another rater: images ranked by how much one more rater is expected to narrow
their α's interval (:mod:`.engine`)."""

from .engine import COLUMNS, NextRaterConfig, NextRaterResult, image_need, next_rater_steps

__all__ = ["COLUMNS", "NextRaterConfig", "NextRaterResult", "image_need", "next_rater_steps"]
