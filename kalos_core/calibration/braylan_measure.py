"""Braylan's item-level agreement, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core braylan FILE.json --task bbox ...`` writes ``BraylanResult.to_dict()``
(keys in docs/calibration.md, "Item-level agreement (Braylan)"). Boxes only, in pixel
coordinates. The FiftyOne plugin stores it inside a calibration run (results key ``braylan``),
so its run kind is the calibration's.
"""

from __future__ import annotations

from ..executor_options import EXECUTOR_OPTIONS, executor_args
from ..measure import Measure, MeasureData
from .braylan import BraylanConfig, BraylanResult, braylan_steps


def steps(data: MeasureData, config: BraylanConfig):
    """Braylan's measures of ``data.dataset`` (:func:`kalos_core.calibration.braylan.braylan_steps`)."""
    return braylan_steps(data.dataset, config, **executor_args(data.options))


def summary(result: BraylanResult, seconds: float | None = None) -> str:
    """Plain-text table, one row per distance (Table 1's columns, plus the KS D statistic)."""
    lines = [f"items {result.n_items}   raters {result.n_raters}   annotation sets {result.n_annotation_sets}   "
             f"annotations {result.n_annotations}   seed {result.seed}   convention {result.convention}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             "",
             f"{'distance':<10}{'alpha':>8}{'AUC':>8}{'sigma':>8}{'KS D':>8}{'n(Do)':>8}{'n(De)':>8}"]
    for name, d in result.distances.items():
        lines.append(f"{name:<10}{d.alpha:>8.4f}{d.auc:>8.4f}{d.sigma:>8.4f}{d.ks:>8.4f}{d.n_do:>8}{d.n_de:>8}")
    lines.append("\nAUC = P(De > Do) (Table 1's 'KS' column; ties as the convention below says); "
                 "KS D = max(F_Do - F_De)")
    return "\n".join(lines)


MEASURE = Measure(
    name="braylan", help="Braylan's item-level agreement: alpha, AUC, sigma, KS per distance",
    # stored inside calibration runs (results key "braylan"), never as a run of its own
    config=BraylanConfig, steps=steps, result=BraylanResult, method="kalos_braylan", conventions=("fraction",), tasks=("bbox",),
    summary=summary, cli_options=EXECUTOR_OPTIONS)
