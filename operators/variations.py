"""Operator compute_variations: the form of :mod:`..fiftyone_layer.measures.variations` (the type of
each disagreement per rater pair and IoU threshold), with the raters offered as the reference."""

from __future__ import annotations

import fiftyone.operators.types as types

from ..fiftyone_layer.measures.variations import RUN
from .measure_operator import MeasureOperator


class ComputeVariations(MeasureOperator):
    RUN = RUN

    def overrides(self, ctx, source) -> dict:
        raters = sorted(source.raters.values()) if source is not None and source.rater_attribute is None else []
        view = types.Dropdown()
        for r in raters:
            view.add_choice(r, label=r)
        choices = {"reference": {"label": "Reference rater (two raters)", "view": view}} if raters else {}
        return {"threshold": {"label": "IoU threshold", "default": 0.5},
                "thresholds": {"label": "Thresholds to count at"}, **choices}
