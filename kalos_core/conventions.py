"""One vocabulary for the units and conventions of the numbers a user reads (docs/method.md §4).

Every command's summary ends in the phrases of its run kind (:func:`conventions_text`), every
result JSON and stored run carries them as ``"conventions": {key: phrase}``
(:func:`conventions_of`), the panels print that block, and the docs quote the same words:
one number, one wording, wherever it appears.

:data:`PHRASES` holds the words; each measure's declaration names which of them its numbers use
(``Measure.conventions``). A result may add its own: a ``"convention"`` key whose value is a
phrase key (Braylan's ``"braylan"`` / ``"midrank"``), at its top level or one level down (the
calibration run's ``braylan`` block), and BAE's ``scope`` picks its pairwise α.
"""

from __future__ import annotations

from .measure import measure_of_method

#: convention key -> the one phrase used for it in the CLI, the result JSON, the panels and the docs
PHRASES: dict[str, str] = {
    "alpha_per_image": "mean α: the mean over images of each image's own α (one reliability matrix per image)",
    "alpha_global": "global α: one reliability matrix over all images' units",
    "pairwise_per_image": "pairwise α per image (collaboration): two raters matched and scored alone, "
                          "mean of their per-image α over the images they share",
    "pairwise_global": "pairwise α global (collaboration_global): two raters matched alone, one reliability "
                       "matrix over the images they share",
    "pooled": "pooled: one distribution of all images' distances (Do, De), not a mean over images",
    "majority": "per label (majority convention): each label counted once, as its most frequent type over its "
                "rater pairs; missed / additional count the unmatched label itself, not the rater who missed it",
    "per_pair": "per pair: each pair of raters compared alone; missed by B = the labels of A that B did not draw "
                "(the reference rater's with two raters, else those in a unit of most of the image's raters); "
                "a rater's missed total sums its pairs",
    "braylan": "Braylan convention: similarity floored at 0, strict AUC (a tie counts as no win)",
    "midrank": "midrank convention: AUC with ties counted half",
    "attribute_alpha": "attribute α: per attribute, one reliability matrix of raters x matched units under its "
                       "metric (a label without the value is missing data); per class: the unit's most frequent class",
    "alpha_per_frame": "mean α over frames: each frame of a video is one image with its own reliability matrix; "
                       "a video's α is the mean over its frames",
    "track_identity": "identity per pair of raters: the first in name order is the reference (the role of the "
                      "ground truth); HOTA, DetA, AssA, LocA are means over IoU thresholds 0.05-0.95 and symmetric up "
                      "to ties; identity switches and fragmentations (CLEAR-MOT) sum both raters as the reference",
    "scorecard_reference": "scorecards: each rater against the reference (a named expert, not scored; or "
                           "leave-one-out, the other raters' majority, so no rater is scored against themselves), "
                           "matched as COCO / FiftyOne's evaluate_detections (classwise, labels in their own order)",
    "next_rater_gain": "next rater: an image's gain is 2·z·s·(1 − √(n/(n+1))), s the spread of its α over "
                       "bootstrap draws of its n raters (the agreement's units, not re-matched)",
    "percent": "percent (0-100)",
    "fraction": "fraction (0-1)",
    "mask_pixels": "pixels as units: α over every pixel (no sampling), a missing mask or the void value a "
                   "missing value; per class one vs rest; Dice and Jaccard pooled over the images both raters drew",
}

def _from_result(method: str, result: dict) -> list[str]:
    """The keys a result adds: its (or a block's) ``"convention"``, BAE's ``scope``."""
    keys = [b.get("convention") for b in (result, *result.values()) if isinstance(b, dict)]
    if method == "kalos_bae":
        cfg = result.get("config") or result.get("bae_config") or {}
        keys.append("pairwise_per_image" if cfg.get("scope") == "per_image" else "pairwise_global")
    return [k for k in keys if isinstance(k, str) and k in PHRASES]


def conventions_of(method: str, result: dict | None = None) -> dict[str, str]:
    """``{key: phrase}`` of a run kind's numbers (and of what ``result``, its JSON, adds)."""
    measure = measure_of_method(method)
    keys = list(measure.conventions if measure else ()) + _from_result(method, result or {})
    return {k: PHRASES[k] for k in dict.fromkeys(keys)}


def conventions_text(block: dict[str, str]) -> str:
    """The CLI's closing lines: ``conventions:`` and one phrase a line ("" without any)."""
    return "\n".join(["", "", "conventions:", *(f"  {p}" for p in block.values())]) if block else ""


def conventions_md(block: dict[str, str]) -> str:
    """The panels' line: ``*Conventions:* phrase; phrase.`` ("" without any)."""
    return ("*Conventions:* " + "; ".join(block.values()) + ".") if block else ""


def with_conventions(method: str, data):
    """A result JSON with its ``"conventions"`` block added; anything else (a COCO file, which keeps
    COCO's keys, a text) as it is."""
    if not isinstance(data, dict) or "annotations" in data:
        return data
    return {**data, "conventions": conventions_of(method, data)}
