"""Views the panels' click handlers set in the App: pure functions of the dataset and a run.

Every builder returns an unexecuted :class:`fiftyone.core.view.DatasetView` (building one
costs no database round trip). They read only what a run wrote: ``<run_key>_alpha`` on
samples and ``<run_key>_unit`` / ``<run_key>_status`` on the raters' labels.

One rule for every click (:func:`finish`), so every panel behaves alike:

- **the user's sort is kept**: when the view in the App (``current``, the handler's
  ``ctx.view``) is sorted (``sort_by`` / ``sort_by_similarity``), its last sort stage is
  applied to the click's samples; otherwise they are sorted by the run's per-sample α,
  ascending (worst first);
- **only the run's fields are shown**: the run's rater fields (or the one label field), its
  per-sample ``<run_key>_alpha`` and ``rater_list`` (a pair click narrows this to the pair);
- **a click about disagreement shows only disagreeing samples**: the rater, pair and class
  views keep the samples where the clicked rater / pair / class has a label that does not
  agree, and nothing else; the α-bin view is about α, not disagreement, and keeps its bin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fiftyone import ViewField as F

from kalos_core.measure import get_measure
from kalos_core.variations.types import TYPES

from . import run_store
from .errors import SetupError

from .view_rules import SORT_STAGES, finish, user_sort  # noqa: F401  (the one click rule; re-exported)

#: label statuses that mean "this label does not agree" (see .adapter.STATUSES)
DISAGREEING = ("class_disagreement", "unmatched")
_LIST_NAMES = {"Detections": "detections", "Polylines": "polylines", "Keypoints": "keypoints"}


@dataclass(frozen=True)
class RunLayout:
    """Where a run's raters and results live, read from its stored config."""

    run_key: str
    fields: tuple[str, ...]                 #: rater fields, or the one label field
    list_name: str = "detections"           #: detections | polylines | keypoints
    rater_attribute: str | None = None      #: set for the one-field layout
    raters: dict = field(default_factory=dict)  #: field -> rater name (rater-fields layout)

    @property
    def alpha_field(self) -> str:
        return f"{self.run_key}_alpha"

    @property
    def status_attr(self) -> str:
        return f"{self.run_key}_status"

    @property
    def unit_attr(self) -> str:
        return f"{self.run_key}_unit"

    def field_of(self, rater: str) -> str:
        """The label field holding ``rater``'s labels."""
        if self.rater_attribute:
            return self.fields[0]
        for f, name in self.raters.items():
            if str(name) == str(rater):
                return f
        if rater in self.fields:
            return rater
        raise KeyError(f"rater {rater!r} is not part of run {self.run_key!r}")

    @staticmethod
    def from_run(dataset, run_key: str) -> "RunLayout":
        cfg = dataset.get_run_info(run_key).config
        rater_attr = getattr(cfg, "rater_attribute", None)
        fields = tuple(cfg.rater_fields or []) if not rater_attr else (cfg.label_field,)
        raters = dict(getattr(cfg, "raters", None) or {})
        if not rater_attr:
            raters = {f: str(raters.get(f, f)) for f in fields}
        return RunLayout(run_key, fields, _LIST_NAMES.get(getattr(cfg, "label_type", None), "detections"),
                         rater_attr, raters)


def _is_rater(layout: RunLayout, rater: str):
    """Label filter: the label was drawn by ``rater`` (attribute layout; compared as text)."""
    return F(layout.rater_attribute).to_string() == str(rater)


def _run_samples(dataset, layout: RunLayout):
    """Samples the run processed (they carry ``<run_key>_alpha``)."""
    return dataset.exists(layout.alpha_field)


def run_fields(layout: RunLayout, fields=None) -> list[str]:
    """The fields a click shows: ``fields`` (default: the run's rater fields), the run's
    per-sample α and ``rater_list``."""
    return list(fields if fields is not None else layout.fields) + [layout.alpha_field, "rater_list"]


def _finish_run(view, dataset, layout: RunLayout, current=None, fields=None):
    return finish(view, dataset, run_fields(layout, fields), current, layout.alpha_field)


def alpha_range_view(dataset, layout: RunLayout, lo: float, hi: float, include_hi: bool = False, current=None):
    """Samples with ``lo <= α < hi`` (``<= hi`` when ``include_hi``), sorted by α.

    Samples whose α is undefined (NaN) are in no range.
    """
    a = F(layout.alpha_field)
    upper = (a <= hi) if include_hi else (a < hi)
    return _finish_run(dataset.match((a >= lo) & upper), dataset, layout, current)


def rater_disagreement_view(dataset, layout: RunLayout, rater: str, current=None):
    """Samples where ``rater`` has at least one label that is unmatched or of a disagreeing
    class; that rater's labels are filtered to those, other raters' labels stay visible."""
    status = F(layout.status_attr).is_in(list(DISAGREEING))
    if layout.rater_attribute:
        view = _run_samples(dataset, layout).filter_labels(layout.fields[0], _is_rater(layout, rater) & status,
                                                            only_matches=True)
    else:
        view = _run_samples(dataset, layout).filter_labels(layout.field_of(rater), status, only_matches=True)
    return _finish_run(view, dataset, layout, current)


def _unit_keys(layout: RunLayout, rater: str):
    """Expression: the rater's labels on a sample as ``"<unit>|<class>"`` strings."""
    if layout.rater_attribute:
        labels = F(f"{layout.fields[0]}.{layout.list_name}").if_null([]).filter(_is_rater(layout, rater))
    else:
        labels = F(f"{layout.field_of(rater)}.{layout.list_name}").if_null([])
    key = F(layout.unit_attr).to_string().concat("|", F("label").to_string())
    return labels.map(key)


def _assigned(dataset, layout: RunLayout, raters) -> object:
    """Expression: every one of ``raters`` was assigned to the sample."""
    if dataset.has_field("rater_list"):
        return F("rater_list").map(F().to_string()).contains([str(r) for r in raters], all=True)
    if layout.rater_attribute:
        return F(f"{layout.fields[0]}.{layout.list_name}").exists()
    cond = None
    for r in raters:
        c = F(f"{layout.field_of(r)}.{layout.list_name}").exists()
        cond = c if cond is None else cond & c
    return cond


def pair_disagreement_view(dataset, layout: RunLayout, rater_a: str, rater_b: str, current=None):
    """Samples assigned to both raters on which they disagree: some unit holds a label of one
    and none of the other, or their classes differ. Only the pair's labels are shown."""
    differ = ~_unit_keys(layout, rater_a).set_equals(_unit_keys(layout, rater_b))
    view = _run_samples(dataset, layout).match(_assigned(dataset, layout, (rater_a, rater_b)) & differ)
    if layout.rater_attribute:
        view = view.filter_labels(layout.fields[0], _is_rater(layout, rater_a) | _is_rater(layout, rater_b),
                                  only_matches=False)
        return _finish_run(view, dataset, layout, current)
    return _finish_run(view, dataset, layout, current, fields=[layout.field_of(rater_a), layout.field_of(rater_b)])


def class_view(dataset, layout: RunLayout, label: str, current=None):
    """Samples where some rater's label of class ``label`` does not agree (unmatched, or its
    unit holds another class); every rater field shows only those labels of that class.
    Samples where every ``label`` label agrees are left out (the click is about difficulty)."""
    cond = (F("label") == label) & F(layout.status_attr).is_in(list(DISAGREEING))
    view = _run_samples(dataset, layout).match_labels(filter=cond, fields=list(layout.fields))
    for f in layout.fields:
        view = view.filter_labels(f, cond, only_matches=False)
    return _finish_run(view, dataset, layout, current)


# -- label convergence and noise-aware runs ---------------------------------------------------------

#: IoU threshold keys of a convergence run's per-label ``<run_key>_matched`` flags, in order
CONVERGENCE_THRESHOLDS = tuple(f"{t / 100:.2f}" for t in range(50, 100, 5))
#: a noise-aware AP key -> index into its per-label ``<run_key>_status`` (None: any threshold)
NOISE_THRESHOLDS = {"50": 0, "75": 5, "95": 9, "50:95": None}


def _rater_fields(cfg) -> list[str]:
    return [cfg.label_field] if getattr(cfg, "rater_attribute", None) else list(cfg.rater_fields or [])


def _any_label(view, fields, list_name):
    return view.match(F.any([F(f"{f}.{list_name}").length() > 0 for f in fields]))


def convergence_unmatched_view(dataset, run_key: str, threshold: str, current=None):
    """Samples with a rater label unmatched at IoU ``threshold`` (``"0.50"`` ... ``"0.95"``) in a
    label-convergence run, showing only those labels."""
    cfg = dataset.get_run_info(run_key).config
    t = CONVERGENCE_THRESHOLDS.index(threshold)
    fields, view = _rater_fields(cfg), dataset.view()
    for f in fields:
        view = view.filter_labels(f, F(f"{run_key}_matched")[t] == False, only_matches=False)  # noqa: E712
    return finish(_any_label(view, fields, cfg.list_name), dataset, fields + ["rater_list"], current)


def convergence_class_view(dataset, run_key: str, label: str, current=None):
    """Samples where a rater of a label-convergence run used class ``label``, showing only those labels."""
    cfg = dataset.get_run_info(run_key).config
    fields, view = _rater_fields(cfg), dataset.view()
    for f in fields:
        view = view.filter_labels(f, F("label") == label, only_matches=False)
    return finish(_any_label(view, fields, cfg.list_name), dataset, fields + ["rater_list"], current)


def uncertain_view(dataset, run_key: str, threshold: str = "50:95", size: str | None = None, current=None):
    """Samples with predictions of a noise-aware run whose bounds disagree at IoU ``threshold``
    (``"50"``, ``"75"``, ``"95"``; ``"50:95"``: at some threshold), of COCO ``size`` when given,
    showing only those predictions."""
    cfg = dataset.get_run_info(run_key).config
    t = NOISE_THRESHOLDS.get(threshold)
    cond = F(f"{run_key}_uncertain") == True if t is None else F(f"{run_key}_status")[t] == "uncertain"  # noqa: E712
    if size in ("small", "medium", "large"):
        cond = cond & (F(f"{run_key}_size") == size)
    fields = [cfg.predictions_field, getattr(cfg, "reference_field", None), *(getattr(cfg, "noise_fields", None) or [])]
    return finish(dataset.filter_labels(cfg.predictions_field, cond), dataset, [f for f in fields if f], current)


# -- variation types (fiftyone_layer/measures/variations.py writes <run_key>_variation / _partner / _iou) -------------

def variation_attr(run_key: str, name: str) -> str:
    """A variation run's label attribute: ``<run_key>_variation`` / ``_partner`` / ``_iou``."""
    return f"{run_key}_{name}"


def _variation_fields(dataset, run_key):
    cfg = run_store.get_run(dataset, run_key, get_measure("variations").method).config
    return _rater_fields(cfg), cfg.list_name


def _variation_finish(view, dataset, run_key, current):
    """The one click rule (:func:`.view_rules.finish`): the user's sort in ``current``
    is kept (a variation run has no per-sample α, so without one the order is the dataset's),
    only the run's rater fields and ``rater_list`` are shown."""
    fields, _ = _variation_fields(dataset, run_key)
    return finish(view, dataset, list(fields) + ["rater_list"], current=current)


def label_count(view, dataset, run_key: str) -> int:
    """The rater labels ``view`` keeps (over the run's rater fields)."""
    fields, list_name = _variation_fields(dataset, run_key)
    return sum(view.count(f"{f}.{list_name}") for f in fields)


def type_view(dataset, run_key: str, vtype: str, rater: str | None = None, current=None):
    """Samples with labels of type ``vtype`` at the run's threshold (only those labels; one
    rater's when ``rater`` is given); the click rule of :func:`_variation_finish` with the App's ``current``."""
    if vtype not in TYPES:
        raise SetupError(f"unknown variation type {vtype!r}; choose among {list(TYPES)}", "type")
    fields, _ = _variation_fields(dataset, run_key)
    cfg = dataset.get_run_info(run_key).config
    view = dataset.load_run_view(run_key)
    for f in fields:
        cond = F(variation_attr(run_key, "variation")) == vtype
        if rater is not None and cfg.rater_attribute:
            cond = cond & (F(cfg.rater_attribute) == rater)
        elif rater is not None and (cfg.raters or {}).get(f) != rater:
            cond = F("_id") == None  # noqa: E711 - another rater's field: no label
        view = view.filter_labels(f, cond, only_matches=False)
    return _variation_finish(_any_label(view, fields, cfg.list_name), dataset, run_key, current)


def iou_bin_view(dataset, run_key: str, low: float, high: float, current=None):
    """Samples with agreed labels whose IoU lies in ``[low, high)`` (``high`` = 1 included); the
    click rule of :func:`_finish` with the App's ``current``."""
    fields, list_name = _variation_fields(dataset, run_key)
    view = dataset.load_run_view(run_key)
    iou = F(variation_attr(run_key, "iou"))
    upper = iou <= high if high >= 1 else iou < high
    for f in fields:
        view = view.filter_labels(f, (F(variation_attr(run_key, "variation")) == "agreed") & (iou >= low) & upper,
                                  only_matches=False)
    return _variation_finish(_any_label(view, fields, list_name), dataset, run_key, current)
