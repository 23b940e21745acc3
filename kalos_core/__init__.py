"""KαLOS engine: inter-rater agreement for localisation labels (no FiftyOne import).

>>> from kalos_core import load_coco, compute_agreement, AgreementConfig
>>> result = compute_agreement(load_coco("labels.json", task="bbox"), AgreementConfig(threshold=0.5))
>>> result.mean_alpha, result.global_alpha

Every measure is exported here (its entry function, config and result), and every measure is
also reachable the same way through the registry: ``get_measure(name).run(MeasureData(ds), config)``
(:mod:`kalos_core.measure`). Measures other than agreement are imported on first use, so that
``import kalos_core`` (and every command line run) pays only for what it uses.
"""

from .agreement.pipeline import AgreementConfig, AgreementResult, compute_agreement
from .data import Annotation, ImageRecord, MultiRaterDataset, make_image
from .io.coco import load_coco
from .io.validation import InvalidInputError
from .io.yolo import load_yolo
from .lazy import lazy_attributes
from .measure import MEASURE_MODULES, Measure, MeasureData, get_measure, measures
from .params import Config, Param, ParamError, param
from .reliability import NO_OBJECT, alpha

#: name -> the package it is imported from on first use (PEP 562)
_LAZY = {
    **dict.fromkeys(("calibrate", "CalibrationConfig", "CalibrationResult"), "calibration"),
    **dict.fromkeys(("braylan_agreement", "BraylanConfig", "BraylanResult"), "calibration.braylan"),
    **dict.fromkeys(("compute_variations", "VariationConfig", "VariationResult"), "variations"),
    **dict.fromkeys(("compute_consensus", "ConsensusConfig", "ConsensusResult"), "consensus"),
    **dict.fromkeys(("compute_convergence", "ConvergenceConfig", "ConvergenceResult"), "convergence"),
    **dict.fromkeys(("noise_aware_evaluation", "NoiseAwareConfig", "NoiseAwareResult"), "noise_aware"),
    **dict.fromkeys(("compute_bae", "BAEConfig", "BAEResult"), "bae"),
    **dict.fromkeys(("compare_runs", "DICConfig", "DICResult"), "dic"),
    **dict.fromkeys(("simulate", "reference_from_coco", "NoiseProfile", "load_profile", "Simulation"), "noise"),
    **dict.fromkeys(("SimulateConfig",), "noise.simulate_measure"),
    **dict.fromkeys(("fit_noise_profile", "FitNoiseConfig", "FitResult"), "noise.fit_measure"),
}


def _declared(name: str):
    """A measure's config or result class by its name (every registered measure's, without a line here)."""
    return next((cls for m in measures() for cls in (m.config, m.result) if cls.__name__ == name), None)


__getattr__ = lazy_attributes(__name__, _LAZY, globals(), fallback=_declared)


__all__ = [
    "AgreementConfig", "AgreementResult", "Annotation", "Config", "ImageRecord", "InvalidInputError",
    "MEASURE_MODULES", "Measure", "MeasureData", "MultiRaterDataset", "NO_OBJECT", "Param", "ParamError",
    "alpha", "compute_agreement", "get_measure", "load_coco", "load_yolo", "make_image", "measures", "param",
    *_LAZY,
]
__version__ = "0.1.0"
