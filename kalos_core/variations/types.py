"""Configuration and result of a variation-type run (the JSON contract is ``to_dict()``).

Type names (``TYPES``, in the order of the classification steps, which is also the
tie-break order when several pairwise types of one label are equally frequent):

``agreed``              same class, IoU >= t (the IoU is the boundary quality)
``merged``              one rater's two same-class pieces (merged) match the other's one label
``wrong_class``         IoU >= t, different classes
``merged_wrong_class``  two merged pieces match a label of another class
``missed``              no partner; the object is real (the reference rater's / the unit
                        majority's label) and the other rater missed it
``additional``          no partner; the object is not supported (the other rater's / a unit
                        minority's label)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


from ..jsonsafe import json_safe
from ..params import Config, ParamError, canonical_fraction, fraction_key, param

TYPES = ("agreed", "merged", "wrong_class", "merged_wrong_class", "missed", "additional")

#: the paper's range of thresholds, 0.5:0.95 in steps of 0.05 (Fig. 4)
DEFAULT_THRESHOLDS = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))

#: histogram bins of the boundary-quality IoU of agreed pairs
IOU_BINS = tuple(round(0.05 * k, 2) for k in range(21))


def threshold_key(t: float) -> str:
    """JSON key of a threshold: ``0.5 -> "0.5"``, ``0.75 -> "0.75"`` (:func:`kalos_core.params.fraction_key`)."""
    return fraction_key(t)


@dataclass(frozen=True)
class VariationConfig(Config):
    """Settings of a variation-type run."""

    thresholds: tuple[float, ...] = param(DEFAULT_THRESHOLDS, "fractions", "IoU thresholds to count at "
                                          "(default 0.5:0.95 in steps of 0.05)", lo_open=True)
    threshold: float | None = param(None, "fraction", "the run's threshold: each label's type is given at it "
                                    "(default: the lowest of thresholds)", lo_open=True, optional=True)
    distance: str | None = param(None, "str", "distance name (default: the kind's, IoU)", optional=True,
                                 advanced=True)
    #: with two raters on an image, the rater whose unmatched labels count as *missed* (by the
    #: other); None = the first row in sorted order. Ignored with >= 3 raters (unit majority).
    reference: str | None = param(None, "str", "two raters: whose unmatched labels count as missed "
                                  "(default: the first in sorted order)", optional=True, advanced=True)
    merge: bool = param(True, "bool", "steps 2 and 4: a rater's two same-class pieces merged "
                        "(off: pairs of originals only)")

    def check(self) -> None:
        if not self.thresholds:
            raise ParamError("thresholds", "thresholds must not be empty")
        threshold = min(self.thresholds) if self.threshold is None else canonical_fraction(self.threshold)
        if self.threshold is not None and threshold == 0:
            raise ParamError("threshold", f"threshold must lie in (0, 1], got {self.threshold!r}")
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "thresholds", tuple(sorted({*self.thresholds, threshold})))


@dataclass(frozen=True)
class LabelVariation:
    """The type of one label at the run's threshold, with its partner(s) and the IoU."""

    type: str
    partners: tuple = ()             #: ids of the other rater's label(s) it was matched with
    iou: float | None = None         #: IoU with the partner (merged: with the merged pieces)
    rater: str = ""
    category: int | None = None

    @property
    def partner(self) -> Any:
        """The first partner id (``None`` for missed / additional)."""
        return self.partners[0] if self.partners else None


class LabelTable(Mapping):
    """Annotation id -> :class:`LabelVariation`, in the order the parts were added; a part is
    ``fill(into: dict)``, run on first use (a command line run without ``--include-labels``
    never builds the per-label objects)."""

    def __init__(self) -> None:
        self._parts: list[Callable[[dict], None]] = []
        self._built: dict | None = None

    def add(self, fill: Callable[[dict], None]) -> None:
        self._parts.append(fill)
        self._built = None

    def extend(self, other: LabelTable) -> None:
        """The parts of ``other`` after these."""
        self._parts.extend(other._parts)
        self._built = None

    def _dict(self) -> dict:
        if self._built is None:
            self._built = {}
            for fill in self._parts:
                fill(self._built)
        return self._built

    def __getitem__(self, key):
        return self._dict()[key]

    def __iter__(self):
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __repr__(self) -> str:
        return f"LabelTable({self._dict()!r})"


@dataclass
class VariationResult:
    """Counts by type x threshold (overall, per rater, per class), boundary IoU, per-label types.

    ``counts[t][type]``, ``by_rater[t][rater][type]`` and ``by_class[t][class name][type]``
    count labels (each label has one type per threshold: the per-label majority convention);
    ``by_pair[t][a][b][type]`` counts each label of rater ``a`` by its type in the pair with
    rater ``b`` alone (the per-pair convention: ``by_pair[t][a][b]["missed"]`` are the labels of
    ``a`` that ``b`` missed; :meth:`missed_by` sums them per rater); ``boundary_iou[t]`` is the
    histogram of the IoU of agreed labels over ``IOU_BINS``; ``labels`` maps annotation id
    to its :class:`LabelVariation` at ``config.threshold``.
    """

    config: dict
    n_images: int
    n_annotations: int
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    by_rater: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    by_class: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    by_pair: dict[str, dict[str, dict[str, dict[str, int]]]] = field(default_factory=dict)
    boundary_iou: dict[str, list[int]] = field(default_factory=dict)
    labels: Mapping[Any, LabelVariation] = field(default_factory=dict)

    def shares(self, threshold: float) -> dict[str, float]:
        """Share of each type among all labels at a threshold."""
        c = self.counts[threshold_key(threshold)]
        total = sum(c.values())
        return {k: (v / total if total else float("nan")) for k, v in c.items()}

    def missed_by(self, key: str) -> dict[str, int]:
        """Per rater: the other raters' labels it missed at threshold ``key`` (per pair, summed over its pairs)."""
        out: dict[str, int] = {}
        for row in self.by_pair.get(key, {}).values():
            for b, counts in row.items():
                out[b] = out.get(b, 0) + counts["missed"]
        return dict(sorted(out.items()))

    def to_dict(self, include_labels: bool = False) -> dict:
        d = {
            "types": list(TYPES), "config": self.config, "n_images": self.n_images,
            "n_annotations": self.n_annotations, "counts": self.counts, "by_rater": self.by_rater,
            "by_class": self.by_class, "boundary_iou": {"bins": list(IOU_BINS), "counts": self.boundary_iou},
            "by_pair": self.by_pair, "missed_by": {k: self.missed_by(k) for k in self.by_pair},
        }
        if include_labels:
            d["labels"] = {str(k): {**asdict(v), "partner": v.partner} for k, v in self.labels.items()}
        return json_safe(d)
