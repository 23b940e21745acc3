"""Which images need another rater: each image's α, how far it would move over resamples of its
raters, and how much one more rater is expected to narrow its interval.

For an image with ``n`` raters (rows of its reliability matrix: the agreement's units, the classes
the raters gave them, ``NO_OBJECT`` for an assigned rater who drew nothing there):

* ``α_b``: the image's nominal α over a bootstrap resample of its ``n`` raters (drawn with
  replacement; a rater drawn twice is two identical rows; a unit none of the drawn raters labelled is
  left out, nothing is re-matched). Every one of the ``n^n`` ordered draws is weighed exactly while
  the distinct draws are few (``C(2n-1, n) <= MAX_EXACT``, up to 6 raters), else ``resamples`` seeded draws;
* ``spread`` ``s``: the standard deviation of ``α_b`` (with two raters ``(1 - α) / 2``: half the draws
  repeat one rater, α = 1, half are the image, α);
* ``gain``: the expected narrowing of the image's normal ``confidence`` interval from one more
  rater, as a rater-sampling standard error falls with ``1/√n``:
  ``gain = 2 z s (1 - √(n / (n + 1)))``, ``z = Φ⁻¹((1 + confidence) / 2)``.

Images are ranked by ``gain``, largest first (ties: lower α first, then the image id).
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations_with_replacement

import numpy as np
from scipy.stats import norm

from ..jsonsafe import json_safe
from ..params import Config, param
from ..reliability import NO_OBJECT, Cells, alpha, build_cells

MAX_EXACT = 500
COLUMNS = ("image", "n_raters", "alpha", "spread", "gain")


@dataclass(frozen=True)
class NextRaterConfig(Config):
    """How the need for another rater is estimated."""

    confidence: float = param(0.95, "fraction", "confidence of the interval whose narrowing is estimated",
                              lo_open=True, hi_open=True, label="Confidence")
    resamples: int = param(1000, "int", "rater resamples per image when its raters are too many to weigh every "
                           "draw exactly (more than 6)", lo=1, advanced=True, label="Resamples")
    seed: int = param(0, "int", "seed of those resamples", advanced=True, label="Seed")


@dataclass
class NextRaterResult:
    """``rows``: one per image with two or more raters (:data:`COLUMNS`), largest gain first."""

    rows: list
    confidence: float
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe({"config": self.config, "confidence": self.confidence, "columns": list(COLUMNS),
                          "rows": self.rows})

    def csv_text(self) -> str:
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows({k: r[k] for k in COLUMNS} for r in self.rows)
        return out.getvalue()


def rater_draws(n: int, resamples: int, rng: np.random.Generator) -> tuple[list[tuple], np.ndarray]:
    """The draws of ``n`` raters with replacement and their weights: every multiset with its
    multinomial probability, or ``resamples`` seeded draws of weight ``1/resamples``."""
    if math.comb(2 * n - 1, n) <= MAX_EXACT:
        draws = list(combinations_with_replacement(range(n), n))
        w = [math.factorial(n) / math.prod(math.factorial(c) for c in Counter(d).values()) / n ** n for d in draws]
        return draws, np.array(w)
    draws = [tuple(sorted(d)) for d in rng.integers(0, n, size=(resamples, n)).tolist()]
    return draws, np.full(resamples, 1.0 / resamples)


def drawn_alpha(matrix: np.ndarray, draw: tuple) -> float:
    """α of the rows ``draw`` of an image's dense matrix (NaN missing), units nobody drawn labelled left out."""
    m = matrix[list(draw)]
    labelled = np.any(~np.isnan(m) & (m != NO_OBJECT), axis=0)
    return alpha(m[:, labelled]) if labelled.any() else 1.0


def image_matrix(image, unit_of) -> np.ndarray:
    """The image's reliability matrix (its raters x its units) from ``unit_of`` (annotation id -> unit)."""
    anns = [a for a in image.annotations if a.id in unit_of]
    units = {u: k for k, u in enumerate(dict.fromkeys(unit_of[a.id] for a in anns))}
    row = {r: k for k, r in enumerate(image.raters)}
    classes = image.rater_classes
    cells = build_cells(np.array([units[unit_of[a.id]] for a in anns], np.int64),
                        np.array([row[a.rater] for a in anns], np.int64),
                        np.array([a.category for a in anns], np.int64), len(image.raters),
                        None if classes is None else [classes.get(r) for r in image.raters])
    return cells.to_matrix(len(image.raters)) if cells.n_units else np.full((len(image.raters), 0), np.nan)


def image_need(matrix: np.ndarray, confidence: float, resamples: int, rng: np.random.Generator) -> dict:
    """``{"n_raters", "alpha", "spread", "gain"}`` of one image (see the module)."""
    n = matrix.shape[0]
    a = drawn_alpha(matrix, tuple(range(n)))
    draws, w = rater_draws(n, resamples, rng)
    values = np.array([drawn_alpha(matrix, d) for d in draws])
    mean = float(w @ values)
    spread = math.sqrt(max(float(w @ (values - mean) ** 2), 0.0))
    z = norm.ppf((1 + confidence) / 2)
    return {"n_raters": n, "alpha": a, "spread": spread, "gain": float(2 * z * spread * (1 - math.sqrt(n / (n + 1))))}


def next_rater_steps(dataset, config: NextRaterConfig = NextRaterConfig(), unit_of=None):
    """The images ranked by the gain of one more rater, as ``(fraction, message)`` steps; ``unit_of``
    (annotation id -> unit): an agreement run's units, else matched here with the agreement's defaults."""
    if unit_of is None:
        from ..agreement.pipeline import AgreementConfig, compute_agreement

        yield 0.0, "matching the raters' labels into units"
        quick = AgreementConfig(vitality=False, class_difficulty=False, collaboration=False, intra_rater=False,
                                bootstrap=0, lsa_thresholds=())
        unit_of = compute_agreement(dataset, quick).unit_of
    lookup = unit_of.as_dict() if hasattr(unit_of, "as_dict") else unit_of
    rng = np.random.default_rng(config.seed)
    rows = []
    images = [im for im in dataset.images if len(im.raters) >= 2]
    for k, im in enumerate(images):
        if k % 500 == 0:
            yield 0.1 + 0.9 * k / max(len(images), 1), f"resampling the raters of image {k + 1} of {len(images)}"
        rows.append({"image": im.id, **image_need(image_matrix(im, lookup), config.confidence, config.resamples,
                                                  rng)})
    rows.sort(key=lambda r: (-r["gain"], r["alpha"], str(r["image"])))
    yield 1.0, "ranked"
    return NextRaterResult(rows, config.confidence, config.to_dict())
