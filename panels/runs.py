"""The panels' way to the run store (``fiftyone_layer/run_store.py``, the one implementation of
listing and loading runs), and the run selector's labels (:func:`run_label`)."""

from __future__ import annotations

from kalos_core.thresholds import threshold_text

from ..fiftyone_layer import run_store as store

runs_of = store.runs_of
load_results = store.load_results
describe_run = store.describe_run

#: at most this many rater names in a label; more are counted ("5 raters")
MAX_NAMES = 2
#: a rater name longer than this is cut ("careful_annot…")
MAX_NAME = 12


def _short(name) -> str:
    name = str(name)
    return name if len(name) <= MAX_NAME else name[:MAX_NAME - 1] + "…"


def raters_text(cfg) -> str | None:
    """The run's raters, shortened: names when few, else their count and the first names;
    ``"raters by <attribute>"`` for the one-field layout (the names live on the labels)."""
    if getattr(cfg, "rater_attribute", None):
        return f"raters by {cfg.rater_attribute}"
    names = list((getattr(cfg, "raters", None) or {}).values()) or list(getattr(cfg, "rater_fields", None) or [])
    if not names:
        return None
    if len(names) <= MAX_NAMES:
        return ", ".join(_short(n) for n in names)
    return f"{len(names)} raters"


def run_label(dataset, run_key: str) -> str:
    """The run selector's text for ``run_key``: key · label type · raters · threshold · date
    (what the stored run info holds; parts it lacks are left out). The value stays the key."""
    try:
        info = dataset.get_run_info(run_key)
    except Exception:  # a run deleted meanwhile: its key alone
        return run_key
    cfg = info.config
    parts = [run_key]
    label_type = getattr(cfg, "label_type", None)
    if label_type:
        parts.append(str(label_type).lower())
    raters = raters_text(cfg)
    if raters:
        parts.append(raters)
    threshold = getattr(cfg, "threshold", None)
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        parts.append(f"threshold {threshold_text(threshold)}")
    if getattr(info, "timestamp", None):
        parts.append(info.timestamp.strftime("%Y-%m-%d"))
    return " · ".join(parts)


def run_labels(dataset, run_keys) -> dict:
    """``{run key: label}`` for the run selector."""
    return {k: run_label(dataset, k) for k in run_keys}


__all__ = ["describe_run", "load_results", "raters_text", "run_label", "run_labels", "runs_of", "store"]
