"""KαLOS engine: inter-rater agreement for localisation labels (no FiftyOne import).

>>> from kalos_core import load_coco, compute_agreement, AgreementConfig
>>> result = compute_agreement(load_coco("labels.json", task="bbox"), AgreementConfig(threshold=0.5))
>>> result.mean_alpha, result.global_alpha
"""

from .agreement.pipeline import AgreementConfig, AgreementResult, compute_agreement
from .data import Annotation, ImageRecord, MultiRaterDataset, make_image
from .io.coco import load_coco
from .io.validation import InvalidInputError
from .io.yolo import load_yolo
from .reliability import NO_OBJECT, alpha

__all__ = [
    "AgreementConfig", "AgreementResult", "Annotation", "ImageRecord", "InvalidInputError",
    "MultiRaterDataset", "NO_OBJECT", "alpha", "compute_agreement", "load_coco", "load_yolo", "make_image",
]
__version__ = "0.1.0"
