"""Principled configuration (docs/method.md §5): calibrate the distance function and τ*.

>>> from kalos_core import load_coco
>>> from kalos_core.calibration import CalibrationConfig, calibrate
>>> result = calibrate(load_coco("labels.json", task="bbox"), CalibrationConfig(seed=0, bootstrap=100))
>>> result.recommended.distance, result.similarity_threshold

Modules: ``sampling`` (Do / De pairs), ``density`` (KDE, τ*), ``separation``
(KS, σ, summaries), ``bootstrap``, ``analysis`` (one pair of samples),
``recommend``, ``engine`` (the entry point), ``measure`` (the ``calibrate`` command's declaration),
``braylan`` and ``braylan_measure`` (Braylan's item-level measures, the ``braylan`` command).
"""

from .engine import calibrate, calibrate_steps, default_distances
from .types import (CalibrationConfig, CalibrationResult, DistanceCalibration, Recommendation, SampleSummary,
                    StratumCalibration)

__all__ = [
    "CalibrationConfig", "CalibrationResult", "DistanceCalibration", "Recommendation", "SampleSummary",
    "StratumCalibration", "calibrate", "calibrate_steps", "default_distances",
]
