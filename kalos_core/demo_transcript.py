"""What ``make demo`` prints, and the README block made from it.

``make demo-transcript`` (``python fiftyone_layer/demo.py run --write-readme``) runs the demo as
``make demo`` does and writes its output between ``<!-- demo-transcript:start -->`` and
``<!-- demo-transcript:end -->`` in README.md.
The calibration and agreement part of that output comes from :func:`agreement_lines`, which the
demo prints and tests/test_docs.py recomputes from the seeded demo files with the engine alone (a
few seconds), so the test tells whether the README is still current.
"""

from __future__ import annotations

MARKER = "demo-transcript"


def agreement_lines(rec: dict, threshold: float, res) -> str:
    """The calibration line and the box agreement summary (with its conventions) of the demo:
    ``rec`` the calibration's recommendation (``Recommendation.to_dict()``), ``threshold`` the one
    used (:func:`kalos_core.thresholds.proposed` of the recommended), ``res`` the agreement result."""
    from .agreement.measure import MEASURE as AGREEMENT
    from .agreement.measure import summary as format_summary
    from .conventions import conventions_of, conventions_text
    from .thresholds import threshold_text

    return "\n".join([
        f"calibration (run 'kalos_calibration'): distance {rec['distance']}, tau* {rec['tau_star']:.3f} "
        f"-> similarity threshold {threshold_text(threshold)}",
        "agreement on boxes at that threshold (run 'kalos'; polygons at 0.5 in run 'kalos_polygons'):\n",
        format_summary(res) + conventions_text(conventions_of(AGREEMENT.method))])


def readme_block(stdout: str, checkout: str) -> str:
    """The README block of a demo run's ``stdout``: a fenced transcript, paths relative to the
    ``checkout`` folder (with its trailing slash) and FiftyOne's own warnings left out."""
    lines = [line.replace(checkout, "") for line in stdout.splitlines()
             if not line.startswith("You are running the oldest supported major version of MongoDB")]
    return "\n".join(["```text", "$ make demo", *lines, "```"])
