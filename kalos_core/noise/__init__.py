"""The empirical noise generator and its fitting routine (docs/method.md §7, paper Sec. 9).

>>> from kalos_core.noise import reference_from_coco, simulate, fit_noise, load_profile
>>> sim = simulate(reference_from_coco("clean.json"), n_raters=5, magnitude=1.0, seed=0)
>>> profile = fit_noise(load_coco("multirater.json")).profile

No FiftyOne import here; the operator ``@kalos/agreement/simulate_raters`` wraps it.
"""

from .channels import ChannelStats, RefObject, SynthLabel
from .generator import Reference, RefImage, Simulation, reference_from_coco, reference_from_dataset, simulate
from .profile import NoiseProfile, builtin_profile, load_profile
from .schools import RaterSpec, plain_raters, school_raters

__all__ = [
    "ChannelStats", "NoiseProfile", "RaterSpec", "RefImage", "RefObject", "Reference", "Simulation", "SynthLabel",
    "builtin_profile", "load_profile", "plain_raters", "reference_from_coco", "reference_from_dataset",
    "school_raters", "simulate",
]
