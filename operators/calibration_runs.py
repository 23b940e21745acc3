"""Python entries for calibration runs: calibrate, load, list, find, delete.

What the ``calibrate`` operator calls, and what a notebook calls directly::

    from operators.calibration_runs import calibrate_run, load_calibration
    result = calibrate_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="kalos_calibration")
    load_calibration(dataset, "kalos_calibration")["recommended"]

A calibration is stored as a FiftyOne custom run (``config.method ==
"kalos_calibration"``) whose config carries the recommended
``similarity_threshold`` and ``distance`` (what ``compute_agreement``'s form
offers as defaults) and whose results hold ``CalibrationResult.to_dict()``
plus ``braylan``: Braylan's item-level measures (``BraylanResult.to_dict()``) for
boxes, or ``{"skipped": reason}`` (polygons and keypoints; boxes of samples
without ``metadata`` width/height, since the measures need pixel coordinates).
No sample field is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kalos_core.calibration import CalibrationConfig, CalibrationResult, calibrate_steps
from kalos_core.calibration.braylan import BraylanConfig, braylan_agreement
from kalos_core.data import MultiRaterDataset

from . import run_store
from .adapter import SetupError, read_dataset, resolve_source
from .common import run_steps

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


def calibration_runs(dataset) -> list[str]:
    """Run keys of the KaLOS calibration runs on the dataset, oldest first."""
    return run_store.runs_of(dataset, METHOD)


def _ref(dataset, key: str) -> CalibrationRef:
    cfg = dataset.get_run_info(key).config
    return CalibrationRef(key, float(cfg.similarity_threshold), getattr(cfg, "distance", None),
                          getattr(cfg, "label_type", None))


def latest_calibration(dataset, label_type: str | None = None) -> CalibrationRef | None:
    """The newest calibration run (of labels of ``label_type``, e.g. ``"Detections"``, if given)."""
    for key in reversed(calibration_runs(dataset)):
        ref = _ref(dataset, key)
        if label_type is None or ref.label_type == label_type:
            return ref
    return None


def matching_calibration(dataset, threshold: float, label_type: str | None = None) -> CalibrationRef | None:
    """The newest calibration whose recommended threshold is ``threshold`` (the one an agreement run used)."""
    for key in reversed(calibration_runs(dataset)):
        ref = _ref(dataset, key)
        if abs(ref.similarity_threshold - float(threshold)) <= SAME_THRESHOLD and (
                label_type is None or ref.label_type == label_type):
            return ref
    return None


def validate_calibration_key(dataset, run_key: str, overwrite: bool = False) -> None:
    """A plain name, not used by a run of another kind; an existing calibration under it is
    replaced only with ``overwrite=True`` (the form asks for it, describing the run)."""
    run_store.validate_key(dataset, run_key, METHOD, overwrite=overwrite)


def calibrate_run_steps(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                        run_key=DEFAULT_KEY, distances=None, seed=0, bootstrap=100, stratify=False,
                        overwrite=False):
    """:func:`calibrate_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    timings = {}
    t0 = time.perf_counter()
    source = resolve_source(collection, rater_fields, label_field, rater_attribute)
    validate_calibration_key(collection._dataset, run_key, overwrite)
    try:
        config = CalibrationConfig(distances=tuple(distances) if distances else None, seed=int(seed),
                                   bootstrap=int(bootstrap), stratify=bool(stratify))
    except ValueError as e:
        raise SetupError(str(e), "bootstrap") from None
    yield 0.0, "reading labels"
    data = read_dataset(collection, source)
    timings["read_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    steps = calibrate_steps(data, config)
    try:
        while True:
            fraction, message = next(steps)
            yield 0.05 + 0.9 * fraction, message
    except StopIteration as stop:
        result: CalibrationResult = stop.value
    except ValueError as e:      # unknown distance, too little data
        raise SetupError(str(e), "distances") from None
    timings["compute_s"] = time.perf_counter() - t1
    yield 0.95, "item-level agreement (Braylan)"
    t_b = time.perf_counter()
    braylan = braylan_summary(data, config.seed)
    timings["braylan_s"] = time.perf_counter() - t_b
    yield 0.97, "storing the run"
    t2 = time.perf_counter()
    store_calibration(collection, source, run_key, config, result, braylan)
    timings["write_s"] = time.perf_counter() - t2
    result.timings.update(timings)
    return result


def calibrate_run(collection, rater_fields=None, label_field=None, rater_attribute="rater_id",
                  run_key=DEFAULT_KEY, distances=None, seed=0, bootstrap=100, stratify=False,
                  overwrite=False, progress=None) -> CalibrationResult:
    """Calibrate the distance and threshold on ``collection``; store the run under ``run_key``.

    ``progress(fraction, message)`` is called along the way (optional).
    An existing calibration ``run_key`` is replaced only with ``overwrite=True``.
    """
    return run_steps(calibrate_run_steps(collection, rater_fields, label_field, rater_attribute, run_key,
                                         distances, seed, bootstrap, stratify, overwrite), progress)


def braylan_summary(data: MultiRaterDataset, seed: int = 0) -> dict:
    """Braylan's item-level measures (``BraylanResult.to_dict()``) of the boxes read by
    :func:`operators.adapter.read_dataset`, or ``{"skipped": reason}``.

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


def store_calibration(collection, source, run_key: str, config: CalibrationConfig,
                      result: CalibrationResult, braylan: dict | None = None) -> None:
    summary = result.to_dict()
    if braylan is not None:
        summary["braylan"] = braylan
    rec = summary["recommended"]
    run_store.save_run(
        collection, run_key, METHOD, summary,
        **source.run_config(),
        task=summary["task"], distances=list(summary["distances"]), seed=config.seed,
        bootstrap=config.bootstrap, confidence=config.confidence, stratify=config.stratify,
        similarity_threshold=summary["similarity_threshold"], distance=rec["distance"],
        tau_star=rec["tau_star"], standard_threshold=rec["standard_threshold"],
    )


def load_calibration(dataset, run_key: str = DEFAULT_KEY) -> dict:
    """The stored calibration (``CalibrationResult.to_dict()``), as a plain dict."""
    if run_store.run_method(dataset, run_key) != METHOD:
        raise SetupError(f"no KaLOS calibration run {run_key!r} on dataset {dataset.name!r}", "run_key")
    return run_store.load_results(dataset, run_key)


def delete_calibration_run(dataset, run_key: str) -> None:
    """Remove a calibration run (it wrote no fields)."""
    load_calibration(dataset, run_key)  # raises unless it is one
    run_store.delete_run(dataset, run_key)
