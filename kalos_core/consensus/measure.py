"""The consensus measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core consensus FILE.json --task bbox --output OUT.json`` writes plain COCO
(``ConsensusResult.coco_text``, the text of ``to_coco``): each annotation with ``score`` = confidence, ``unit``,
``support``, ``raters`` and ``tie``; units below the support level under ``review``.
"""

from __future__ import annotations

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..measure import Measure, MeasureData
from .engine import ConsensusConfig, ConsensusResult, build_consensus, consensus_steps


def _fused(data: MeasureData, config: ConsensusConfig):
    yield 0.0, "fusing the units"
    return build_consensus(data.dataset, data.options["units"], config)


def steps(data: MeasureData, config: ConsensusConfig):
    """Consensus of ``data.dataset`` as progress steps (:func:`kalos_core.consensus.consensus_steps`);
    ``data.options`` may give ``workers`` and ``executor`` (where the matching's chunks of images run),
    or ``units`` (annotation id -> unit id, an agreement run's: those units are fused, nothing is matched)."""
    if data.options.get("units") is not None:
        return _fused(data, config)
    return consensus_steps(data.dataset, config, **executor_args(data.options))


def summary(result: ConsensusResult, seconds: float | None = None) -> str:
    """Plain text: labels, ties, review queue and the mean confidence."""
    labels = result.label_columns(("unit", "tie", "confidence"))   # no label object is made for a summary
    lines = [f"consensus labels {len(labels.unit)}   ties {sum(labels.tie)}   review queue {len(result.review)} units"
             + (f"   ({seconds:.2f} s)" if seconds is not None else "")]
    if labels.unit:
        conf = sum(labels.confidence) / len(labels.unit)
        lines.append(f"mean confidence {conf:.4f}")
    return "\n".join(lines)


MEASURE = Measure(
    name="consensus", help="one consensus label per supported unit, plus a review queue",
    config=ConsensusConfig, steps=steps, result=ConsensusResult, method="kalos_consensus", conventions=("fraction",), summary=summary,
    cli_options=EXECUTOR_OPTIONS, output=lambda result, data, args: result.coco_text(data.dataset),
    result_conventions=False)
