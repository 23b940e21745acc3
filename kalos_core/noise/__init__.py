"""The empirical noise generator and its fitting routine (docs/method.md §7, paper Sec. 9).

>>> from kalos_core.noise import reference_from_coco, simulate, load_profile
>>> from kalos_core.noise.fit import fit_noise_profile
>>> sim = simulate(reference_from_coco("clean.json"), n_raters=5, magnitude=1.0, seed=0)
>>> profile = fit_noise_profile(load_coco("multirater.json")).profile

The command-line ``simulate`` and ``fit-noise`` are declared in :mod:`.simulate_measure` and
:mod:`.fit_measure`. No FiftyOne import here; the operator ``@kalos/agreement/simulate_raters``
wraps :mod:`.simulate_measure`.
"""

from .channels import ChannelStats, RefObject, SynthLabel
from .generator import Reference, RefImage, Simulation, reference_from_coco, reference_from_dataset, simulate
from .profile import NoiseProfile, builtin_profile, load_profile
from .schools import RaterSpec, plain_raters, rater_specs, school_raters

__all__ = [
    "ChannelStats", "NoiseProfile", "RaterSpec", "RefImage", "RefObject", "Reference", "Simulation", "SynthLabel",
    "builtin_profile", "load_profile", "plain_raters", "rater_specs", "reference_from_coco", "reference_from_dataset",
    "school_raters", "simulate",
]
