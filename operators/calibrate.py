"""Operator ``calibrate``: the form of :mod:`..fiftyone_layer.measures.calibrate` (the distance function
and the threshold τ* from the raters' data), offering the distances of the chosen labels' kind."""

from __future__ import annotations

from kalos_core.calibration import default_distances
from kalos_core.geometry import distances_for

from ..fiftyone_layer.measures.calibrate import RUN
from .forms import param_inputs
from .measure_operator import MeasureOperator


class Calibrate(MeasureOperator):
    RUN = RUN
    KEY_REQUIRED = False

    def inputs(self, ctx, inputs, source) -> dict:
        """The parameters; the distances of the labels' kind to pick from (none before the labels are chosen)."""
        kind = source.kind if source is not None else None
        distances = {"distances": {"choices": list(distances_for(kind)), "default": list(default_distances(kind))}} \
            if kind else {}
        return param_inputs(ctx, inputs, RUN.spec, skip=() if kind else ("distances",), overrides=distances)
