"""The demo's four raters, drawn by the empirical noise generator (:mod:`kalos_core.noise`).

Each rater is the shipped polygon profile fitted on real LVIS rater pairs
(``profiles/default_segm.json``) with one habit turned up, so the demo's diagnostics have
something to find:

* ``careful``      - the fitted error model at 0.2x magnitude;
* ``sloppy``       - the fitted error model at full magnitude (as far apart as two LVIS raters);
* ``misses_small`` - 0.4x, with five times the unmatched events, nearly all misses, aimed at
  small objects (selection centred on the COCO small/medium cut, slope -2 in ln area);
* ``confuser``     - 0.3x, but three in four of its circles become ellipses and vice versa
  (class rate 2.5 for those two classes, times 0.3; the other shapes keep the fitted rate).

The output keeps the generator's truth (``truth_ref_ids``, ``truth_errors``,
``truth_category``) and adds ``ref_index``: the index of the (first) reference object
in its scene, -1 for an invented object.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

from .noise.generator import reference_from_coco, simulate
from .noise.profile import NoiseProfile, load_profile
from .noise.schools import RaterSpec

#: relative area of the COCO small/medium cut (32^2 px) in the demo's 640 x 480 images
SMALL_RELATIVE_AREA = 32.0**2 / (640 * 480)


def demo_rater_specs(profile: NoiseProfile | None = None) -> list[RaterSpec]:
    """The four demo raters (names are the demo's field names: ``raters_careful`` ...), each a
    modification of ``profile`` (default: the shipped polygon profile fitted on LVIS)."""
    base = profile or load_profile(task="segm")
    u, c = base.unmatched, base.classes
    slope = -2.0  # P(selected) = 1/2 at the small/medium cut, rising towards smaller objects
    misses_small = replace(base, unmatched=replace(u, rate_a=u.rate_a + 1.6, select_b=slope, fp_share=0.05,
                                                   select_a=-slope * math.log(SMALL_RELATIVE_AREA)))
    # circles and ellipses (drawn in similar colours) swap; the other shapes keep their class
    swap = {"circle": {"ellipse": 1.0}, "ellipse": {"circle": 1.0}}
    confuser = replace(base, classes=replace(c, confusion=swap, rates={"circle": 2.5, "ellipse": 2.5}))  # x 0.3
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
