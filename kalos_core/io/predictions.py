"""A model's predictions (COCO results), checked at the edge, the same way for every reader.

Label convergence, noise-aware evaluation and model-as-rater agreement read a list of COCO
results (``image_id``, ``category_id``, ``score`` and the geometry). :func:`check_predictions`
refuses a list with problems in one ``ValueError`` that names each prediction at fault (its
``id``, or its position where it has none, and its image) and says what to fix.
:func:`score_problem` is the one rule for a confidence: a finite number in [0, 1] (AP ranks
predictions by it; a score outside [0, 1] is no confidence: rescale the model's output).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..data import order_key

if TYPE_CHECKING:
    from ..data import MultiRaterDataset

#: how many problems one error lists
SHOWN = 5


def score_problem(score: Any, required: bool = True) -> str | None:
    """What is wrong with a prediction's confidence ``score``; None when it is a number in [0, 1]
    (or missing where not ``required``)."""
    if type(score) is float and 0.0 <= score <= 1.0:      # the common case, without the ABC checks below
        return None
    if score is None:
        return "has no score (AP ranks predictions by their confidence)" if required else None
    if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
        return f"score must be a finite number in [0, 1], got {score!r}"
    if not 0.0 <= float(score) <= 1.0:
        return (f"score {score!r} is not a confidence in [0, 1] (rescale the model's scores, "
                "e.g. a sigmoid of its logits)")
    return None


def _is_int(v: Any) -> bool:
    if type(v) is int:
        return True
    return not isinstance(v, bool) and (isinstance(v, numbers.Integral)
                                        or (isinstance(v, float) and math.isfinite(v) and v == int(v)))


def _finite(v: Any) -> bool:
    """A finite real number (``float`` and ``int`` checked first: the ABC check is slow)."""
    return (type(v) is float or type(v) is int or isinstance(v, numbers.Real)) and math.isfinite(v)


def prediction_problem(p: Any, images: set, key: str, score_required: bool = True) -> str | None:
    """What is wrong with one prediction ``p`` (geometry under ``key``); None when it is usable."""
    if type(p) is not dict and not isinstance(p, Mapping):
        return f"is not a JSON object but {type(p).__name__}"
    if p.get("image_id") not in images:
        return f"image_id {p.get('image_id')!r} is not an image of the labels file"
    if not _is_int(p.get("category_id")):
        got = f"got {p['category_id']!r}" if "category_id" in p else "it has none"
        return f"needs an integer 'category_id' (one of the labels file's categories); {got}"
    problem = score_problem(p.get("score"), score_required)
    if problem:
        return problem
    geom = p.get(key)
    if geom is None:
        return f"needs a valid {key!r}"
    if key == "bbox" and (not isinstance(geom, (list, tuple)) or len(geom) != 4
                          or not all(_finite(v) for v in geom)
                          or geom[2] < 0 or geom[3] < 0):
        return f"needs a valid 'bbox' [x, y, width, height] (finite, width and height >= 0), got {geom!r}"
    return None


def where(p: Any, n: int) -> str:
    """``prediction <id> (image <image_id>)``, or its position when it has no id."""
    if not isinstance(p, Mapping):
        return f"prediction #{n}"
    name = f"prediction {p['id']!r}" if p.get("id") is not None else f"prediction #{n} (no id)"
    return f"{name} (image {p.get('image_id')!r})"


def check_predictions(predictions: Iterable[Any], images: Iterable[Any], key: str = "bbox",
                      score_required: bool = True) -> None:
    """Raise ``ValueError`` naming the first :data:`SHOWN` predictions with a problem
    (:func:`prediction_problem`), and how many there are."""
    known = set(images)
    problems = [f"{where(p, n)}: {msg}" for n, p in enumerate(predictions)
                if (msg := prediction_problem(p, known, key, score_required))]
    if problems:
        more = f"; ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise ValueError(f"{len(problems)} invalid prediction(s): " + "; ".join(problems[:SHOWN]) + more)


def prepare_predictions(predictions: Sequence[dict], dataset: MultiRaterDataset, task: str) -> list[dict]:
    """Validate COCO results and put them in canonical order (image id, then ``id`` or position).

    Raises ValueError naming the predictions at fault (:func:`check_predictions`)."""
    key = "bbox" if task == "bbox" else "segmentation"
    check_predictions(predictions, (im.id for im in dataset.images), key)
    out = [{"image_id": p["image_id"], "category_id": int(p["category_id"]), "score": float(p["score"]),
            key: [float(v) for v in p[key]] if task == "bbox" else p[key], "source_id": p.get("id", n)}
           for n, p in enumerate(predictions)]
    out.sort(key=lambda d: (order_key(d["image_id"]), order_key(d["source_id"])))
    return out
