"""The demo's four raters, drawn by the empirical noise generator (:mod:`kalos_core.noise`).

Each rater is the shipped default profile with one habit turned up, so the demo's
diagnostics have something to find:

* ``careful``      - the default error model at 0.2x magnitude;
* ``sloppy``       - the default error model at full magnitude (LVIS-like);
* ``misses_small`` - many more misses, aimed at small objects (size selection slope -2), 0.4x;
* ``confuser``     - 0.3x, but a third of its labels get a wrong class: circles and ellipses swap.

The output keeps the generator's truth (``truth_ref_ids``, ``truth_errors``,
``truth_category``) and adds ``ref_index``: the index of the (first) reference object
in its scene, -1 for an invented object.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from .noise import NoiseProfile, RaterSpec, builtin_profile, reference_from_coco, simulate


def demo_rater_specs(profile: NoiseProfile | None = None) -> list[RaterSpec]:
    """The four demo raters (names are the demo's field names: ``raters_careful`` ...)."""
    base = profile or builtin_profile()
    u, c = base.unmatched, base.classes
    misses_small = replace(base, unmatched=replace(u, rate_a=u.rate_a + 1.6, select_b=-2.0, fp_share=0.05))
    confusion = {"circle": {"ellipse": 1.0}, "ellipse": {"circle": 1.0}, "square": {"triangle": 0.5, "star": 0.5},
                 "triangle": {"square": 0.5, "star": 0.5}, "star": {"triangle": 0.5, "square": 0.5}}
    confuser = replace(base, classes=replace(c, rate=1.0, confusion=confusion))  # x magnitude 0.3
    return [RaterSpec("careful", magnitude=0.2), RaterSpec("sloppy", magnitude=1.0),
            RaterSpec("misses_small", magnitude=0.4, profile=misses_small),
            RaterSpec("confuser", magnitude=0.3, profile=confuser)]


def generator_raters(reference: dict[str, Any], seed: int = 0,
                     raters: Sequence[RaterSpec] | None = None) -> dict[str, Any]:
    """Multi-rater COCO (polygons + boxes) for a reference COCO dict, e.g. the demo's scenes."""
    sim = simulate(reference_from_coco(reference, task="segm"), raters=list(raters or demo_rater_specs()),
                   magnitude=1.0, seed=seed)
    first_of_image = {}  # reference ids run 1.. in object order, image by image
    for a in reference["annotations"]:
        first_of_image.setdefault(a["image_id"], a["id"])
    index = {a["id"]: a["id"] - first_of_image[a["image_id"]] for a in reference["annotations"]}
    coco = sim.coco
    for a in coco["annotations"]:
        refs = a.get("truth_ref_ids") or []
        a["ref_index"] = index.get(refs[0], -1) if refs else -1
    coco["info"]["description"] = "KaLOS demo: generator raters on toy shapes"
    return coco
