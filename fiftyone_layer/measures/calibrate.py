"""Python entries for calibration runs: calibrate, load, list, find, delete.

What the ``calibrate`` operator calls, and what a notebook calls directly::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.calibrate import calibrate_run, load_calibration
    result = calibrate_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="kalos_calibration")
    load_calibration(dataset, "kalos_calibration")["recommended"]

A calibration is stored as a FiftyOne custom run (``config.method ==
"kalos_calibration"``) whose config carries every parameter of
:class:`kalos_core.calibration.CalibrationConfig` (``distances``: the ones compared), the
recommended ``similarity_threshold`` and ``distance`` (what ``compute_agreement``'s form
offers as defaults), ``task``, ``tau_star`` and ``standard_threshold``, and whose results hold
``CalibrationResult.to_dict()`` plus ``braylan``: Braylan's item-level measures
(``BraylanResult.to_dict()``) for boxes, or ``{"skipped": reason}`` (polygons and keypoints;
boxes of samples without ``metadata`` width/height, since the measures need pixel
coordinates), and ``drill``: the sample and label ids of the pairs in each Do / De histogram
bin (:mod:`kalos_core.calibration.drill`; what a click on a bar of the Calibration panel
selects). No sample field is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kalos_core.calibration import CalibrationConfig, CalibrationResult
from kalos_core.calibration.braylan import BraylanConfig, braylan_agreement
from kalos_core.calibration.drill import bin_pairs
from kalos_core.data import MultiRaterDataset
from kalos_core.geometry import distances_for
from kalos_core.measure import MeasureData
from kalos_core.thresholds import proposed, threshold_text

from .. import run_store
from ..adapter import SetupError
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered

METHOD = "kalos_calibration"
DEFAULT_KEY = "kalos_calibration"
#: two thresholds this close are the same threshold (the stored value is rounded to 6 digits)
SAME_THRESHOLD = 1e-6


@dataclass(frozen=True)
class CalibrationRef:
    """A stored calibration run: its key and the defaults it recommends."""

    key: str
    similarity_threshold: float
    distance: str | None
    label_type: str | None
    #: distance -> its calibrated similarity threshold, for every distance the run compared
    thresholds: dict


def calibration_runs(dataset) -> list[str]:
    """Run keys of the KaLOS calibration runs on the dataset, oldest first."""
    return run_store.runs_of(dataset, METHOD)


def _ref(dataset, key: str) -> CalibrationRef:
    cfg = dataset.get_run_info(key).config
    thresholds = getattr(cfg, "thresholds", None)
    if thresholds is None:   # a run stored before the config kept them: read its results once
        thresholds = {d: c["similarity_threshold"] for d, c in load_calibration(dataset, key)["distances"].items()}
    return CalibrationRef(key, float(cfg.similarity_threshold), getattr(cfg, "distance", None),
                          getattr(cfg, "label_type", None), {d: float(t) for d, t in thresholds.items()})


def threshold_for(dataset, distance: str, label_type: str | None = None) -> tuple[CalibrationRef | None, float | None]:
    """The newest calibration run (of ``label_type`` labels) that calibrated ``distance``, and
    the similarity threshold it found for it; ``(None, None)`` when none did."""
    for key in reversed(calibration_runs(dataset)):
        ref = _ref(dataset, key)
        if (label_type is None or ref.label_type == label_type) and distance in ref.thresholds:
            return ref, ref.thresholds[distance]
    return None, None


def latest_calibration(dataset, label_type: str | None = None) -> CalibrationRef | None:
    """The newest calibration run (of labels of ``label_type``, e.g. ``"Detections"``, if given)."""
    for key in reversed(calibration_runs(dataset)):
        ref = _ref(dataset, key)
        if label_type is None or ref.label_type == label_type:
            return ref
    return None


def matching_calibration(dataset, threshold: float, label_type: str | None = None,
                         distance: str | None = None) -> CalibrationRef | None:
    """The newest calibration whose threshold is ``threshold`` (the one an agreement run used), at full
    precision or as shown and proposed (:func:`kalos_core.thresholds.proposed`): the one it found for
    ``distance`` when it calibrated that distance, else its recommended one."""
    for key in reversed(calibration_runs(dataset)):
        ref = _ref(dataset, key)
        found = ref.thresholds.get(distance, ref.similarity_threshold)
        near = min(abs(found - float(threshold)), abs(proposed(found) - float(threshold)))   # as stored or as shown
        if near <= SAME_THRESHOLD and (label_type is None or ref.label_type == label_type):
            return ref
    return None


def validate_calibration_key(dataset, run_key: str, overwrite: bool = False) -> None:
    """A plain name, not used by a run of another kind; an existing calibration under it is
    replaced only with ``overwrite=True`` (the form asks for it, describing the run)."""
    run_store.validate_key(dataset, run_key, METHOD, overwrite=overwrite)


def _check(collection, source, config: CalibrationConfig, extras: dict) -> None:
    """The distances asked for must be distances of the labels' kind."""
    known = distances_for(source.kind)
    unknown = [d for d in config.distances or () if d not in known]
    if unknown:
        raise SetupError(f"not a {source.kind} distance: {', '.join(unknown)}", "distances")


def _more_results(result: CalibrationResult, data: MeasureData, config: CalibrationConfig) -> dict:
    """The run's ``braylan`` results (:func:`braylan_summary`) and ``drill``: the label pairs of each
    histogram bin (:func:`kalos_core.calibration.drill.bin_pairs`), both timed in ``result.timings``."""
    t0 = time.perf_counter()
    braylan = braylan_summary(data.dataset, config.seed)
    t1 = time.perf_counter()
    drill = bin_pairs(result.observations, {name: d.histogram for name, d in result.distances.items()})
    result.observations = None       # the pairs' arrays are no longer needed
    result.timings.update(braylan_s=t1 - t0, drill_s=time.perf_counter() - t1)
    return {"braylan": braylan, "drill": drill}


def _recommended(result: CalibrationResult) -> dict:
    """Run-config keys from the result: the distances compared and the recommendation (what
    compute_agreement's form offers as defaults)."""
    summary = result.to_dict()
    rec = summary["recommended"]
    return {"task": summary["task"], "distances": list(summary["distances"]),
            "thresholds": {d: c["similarity_threshold"] for d, c in summary["distances"].items()},
            "similarity_threshold": summary["similarity_threshold"], "distance": rec["distance"],
            "tau_star": rec["tau_star"], "standard_threshold": rec["standard_threshold"]}


def _card(result: CalibrationResult, key: str) -> tuple:
    rec = result.recommended
    best = result.distances[rec.distance]
    return "KaLOS: threshold calibrated", [
        ("Recommended distance", rec.distance), ("τ* (distance)", rec.tau_star),
        ("Similarity threshold t = 1 - τ*", threshold_text(rec.similarity_threshold)), ("KS separation", best.ks),
        ("Why", rec.reason)], \
        "Open the panel 'KaLOS: Calibration'; its buttons run 'KaLOS: compute agreement' at this threshold."


def _notice(result: CalibrationResult, key: str) -> str:
    rec = result.recommended
    std = f" (standard {rec.standard_threshold:g})" if rec.standard_threshold is not None else ""
    return (f"KaLOS calibration: {rec.distance}, τ* {rec.tau_star:.3f}, similarity threshold "
            f"{threshold_text(rec.similarity_threshold)}{std}")


RUN = MeasureRun(
    "calibrate", "calibration", DEFAULT_KEY, ("box", "polygon", "keypoints", "cuboids"), lambda source, key: [],
    check=_check, results=_more_results, more_config=_recommended,
    app=Offered(
        "KaLOS calibration", "calibrate", "KaLOS: calibrate threshold",
        "Choose the distance, its threshold τ* (a distance) and the similarity threshold 1 - τ* from same-image vs "
        "cross-image disagreement (KS separation, density crossing, bootstrap CI)",
        key_help="the calibration is stored as a custom run under this key", operator_class="calibrate:Calibrate",
        panels=("calibration:CalibrationPanel",), card=_card, notice=_notice, failure="KaLOS: calibration failed"))


def calibrate_run_steps(collection, **params):
    """:func:`calibrate_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def calibrate_run(collection, progress=None, **params) -> CalibrationResult:
    """Calibrate the distance and threshold on ``collection``; store the run under ``run_key``.

    Parameters
    ----------
    collection : a FiftyOne dataset or view.
    progress : optional ``progress(fraction, message)`` callback.
    **params : the rater source (``rater_fields``, or ``label_field`` + ``rater_attribute``),
        ``run_key`` (an existing calibration is replaced only with ``overwrite=True``) and the
        parameters of :class:`kalos_core.calibration.CalibrationConfig` (``distances``, ``seed``,
        ``bootstrap``, ``stratify``, ...); a bad one is a :class:`SetupError` naming it.
    """
    return measure_run(RUN, collection, progress, **params)


def braylan_summary(data: MultiRaterDataset, seed: int = 0) -> dict:
    """Braylan's item-level measures (``BraylanResult.to_dict()``) of the boxes read by
    :func:`fiftyone_layer.adapter.read_dataset`, or ``{"skipped": reason}``.

    Boxes only: the measures follow the paper's box conventions (inclusive pixel areas, corner
    L2 in pixels), so they need the pixel geometry the adapter reads when every sample has
    ``metadata`` width/height (it then builds images of their real size, not unit images).
    """
    if data.kind != "box":
        return {"skipped": "item-level agreement (Braylan) is computed for boxes only"}
    if not data.meta.get("pixel_geometry"):
        return {"skipped": "item-level agreement (Braylan) needs pixel sizes: some samples lack "
                           "metadata; run dataset.compute_metadata()"}
    try:
        return braylan_agreement(data, BraylanConfig(seed=int(seed))).to_dict()
    except ValueError as e:          # no image with two raters, a single item
        return {"skipped": str(e)}


def load_calibration(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored calibration (``CalibrationResult.to_dict()``), as a plain dict."""
    if run_store.run_method(dataset, run_key) != METHOD:
        raise SetupError(f"no KaLOS calibration run {run_key!r} on dataset {dataset.name!r}", "run_key")
    return run_store.load_results(dataset, run_key)
