"""What one agreement run produces; ``AgreementResult.to_dict()`` is the JSON contract (docs/cli.md).

The diagnostics' fields (vitality, class difficulty, ...) are filled by their ``reduce``
(:mod:`.diagnostic_defs`); :func:`check_diagnostic_fields` refuses, at import, a registered
diagnostic whose result fields are not declared here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..jsonsafe import json_safe
from ..reliability import interpret
from .diagnostics import result_fields


@dataclass
class AgreementResult:
    """Everything one agreement run produces.

    ``per_image_alpha`` maps image id (str) to α; ``unit_of`` / ``status_of`` map annotation id to
    its unit / status (read-only mappings built on first read, :class:`.label_map.LabelMap`);
    ``config`` is the run's config with the resolved distance and the geometry kind.
    """

    mean_alpha: float
    global_alpha: float
    mean_alpha_ci: tuple[float, float] | None
    per_image_alpha: dict[str, float]
    n_images: int
    n_annotations: int
    n_units: int
    config: dict
    unit_of: Mapping = field(default_factory=dict)
    status_of: Mapping = field(default_factory=dict)
    vitality: dict = field(default_factory=dict)                 #: per scope: rater -> V_r
    vitality_global: dict = field(default_factory=dict)
    vitality_images: dict = field(default_factory=dict)          #: rater -> image id -> V_r on that image
    class_difficulty: dict = field(default_factory=dict)         #: class -> mean α of its units
    class_difficulty_global: dict = field(default_factory=dict)
    class_difficulty_images: dict = field(default_factory=dict)  #: class -> image id -> its α there
    collaboration: dict = field(default_factory=dict)            #: rater -> rater -> pairwise α
    collaboration_global: dict = field(default_factory=dict)
    collaboration_n: dict = field(default_factory=dict)
    lsa: dict = field(default_factory=dict)                      #: threshold -> mean α
    lsa_delta: Any = None                                        #: α(τ*) - α(strictest threshold)
    intra_rater: dict = field(default_factory=dict)              #: rater -> α among its sessions
    models: list = field(default_factory=list)                   #: raters that are models (.model_rater)
    #: per scope and model: α with each human, mean model-human vs mean human-human α, verdict
    model_comparison: dict = field(default_factory=dict)
    rater_summary: dict = field(default_factory=dict)
    n_skipped: int = 0
    skipped: list = field(default_factory=list)
    n_single_rater_images: int = 0
    #: coercions of the input and caveats of the result: [{"message", "count", "examples"}]
    warnings: list = field(default_factory=list)

    @property
    def interpretation(self) -> str:
        return interpret(self.mean_alpha)

    def to_dict(self, include_labels: bool = False) -> dict:
        """The JSON contract; ``include_labels`` adds every annotation's unit and status."""
        # no asdict(): it deep-copies the per-label maps (300k entries: seconds)
        skip = () if include_labels else ("unit_of", "status_of")
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}
        if include_labels:
            d["unit_of"] = {str(k): v for k, v in self.unit_of.items()}
            d["status_of"] = {str(k): v for k, v in self.status_of.items()}
        d["interpretation"] = self.interpretation
        d["mean_alpha_ci"] = list(self.mean_alpha_ci) if self.mean_alpha_ci else None
        return json_safe(d)


def check_diagnostic_fields() -> None:
    """Every result field a registered diagnostic fills is declared on :class:`AgreementResult`."""
    names = {f.name for f in dataclasses.fields(AgreementResult)}
    missing = [name for name, _ in result_fields() if name not in names]
    if missing:
        raise TypeError(f"diagnostic result field(s) {', '.join(missing)} are not declared on AgreementResult")


check_diagnostic_fields()
