"""End-to-end: a second round on a review queue, compared with round 1 in the App.

Round 2 is built by Python on the demo data set (no Label Studio needed): two raters' boxes copied
as ``round2_<rater>`` fields on the 12 lowest-α samples of run ``kalos`` (the review queue), one box
moved; the round-2 run is computed on those samples. The Agreement overview, on ``round2`` and
compared with ``kalos``, must give the figures of the samples both runs scored (12, not round 1's
40); the Collaboration panel's second-run comparison draws DIC(round2, kalos). Everything made here
is deleted afterwards. KALOS_SCREENSHOTS=1 saves docs/img/panels/round2_overview.png and
round2_collaboration.png (docs/review.md, "A second round in Label Studio").
"""

from __future__ import annotations

import math

import pytest
from e2e_pages import (
    DATASET,
    doc_screenshot,
    open_app,
    open_panel,
    pick_after_label,
    wait_for_chart,
    wait_for_text,
)

pytestmark = pytest.mark.e2e

QUEUE = 12   # the Collaboration panel masks pairs sharing fewer than 10 images


def _make_round2(ds) -> list[str]:
    """The round-2 fields on the review queue and the run ``round2``; returns the fields."""
    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import (
        compute_agreement_run,
    )

    alphas = [(a, i) for i, a in zip(ds.values("id"), ds.values("kalos_alpha")) if a is not None and not math.isnan(a)]
    queue = ds.select([i for a, i in sorted(alphas)[:QUEUE]], ordered=True)
    raters = sorted(f for f in ds.get_field_schema() if f.startswith("raters_detections_"))[:2]
    fields = []
    for k, src in enumerate(raters):
        copies = []
        for n, dets in enumerate(queue.values(src)):
            boxes = [fo.Detection(label=d.label, bounding_box=list(d.bounding_box)) for d in (dets.detections if dets else [])]
            if k == 1 and n == 0 and boxes:   # one box moved: rater 2 changed their mind on the worst sample
                x, y, w, h = boxes[0].bounding_box
                boxes[0].bounding_box = [min(x + 0.2, 1 - w), y, w, h]
            copies.append(fo.Detections(detections=boxes))
        field = "round2_" + src[len("raters_detections_"):]
        queue.set_values(field, copies)
        fields.append(field)
    cfg = ds.get_run_info("kalos").config
    compute_agreement_run(queue, rater_fields=fields, run_key="round2", threshold=cfg.threshold,
                          distance=cfg.distance, bootstrap=0)
    return fields


def _on_round2(page, content, title: str = "round2 · detections") -> None:
    """The panel on run ``round2`` (it opens on the newest run unless an earlier test chose one);
    ``title``: the run selector's text for ``round2``."""
    wait_for_chart(content)
    if not content.get_by_text(title, exact=False).count():
        page.locator("[role='combobox'], [aria-haspopup='listbox']").filter(has_text=" · threshold ").first.click()
        page.get_by_role("option").filter(has_text="round2 · ").first.click()
    content.get_by_text(title, exact=False).first.wait_for(timeout=30_000)


@pytest.mark.screenshot
def test_round2_on_the_review_queue_is_compared_on_the_same_samples(page, demo_app):
    import fiftyone as fo
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.paired_alpha import (
        paired_alpha,
    )
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import (
        delete_agreement_run,
    )

    ds = fo.load_dataset(DATASET)
    fields = _make_round2(ds)
    try:
        pair = paired_alpha(ds, "kalos_alpha", "round2_alpha")
        assert pair["scored_first"] == demo_app.n_samples and pair["scored_second"] == QUEUE
        assert pair["samples"] > 0 and not pair["same_samples"]

        open_app(page, demo_app)
        content = open_panel(page, "kalos_agreement_overview")
        _on_round2(page, content)
        pick_after_label(page, "Compare with", "kalos")
        text = wait_for_text(content, "samples both runs scored", timeout=60)
        d = pair["mean_second"] - pair["mean_first"]
        word = "better" if d >= 0.0005 else "worse" if d <= -0.0005 else "unchanged"
        expected = (f"On the {pair['samples']} samples both runs scored (kalos: {demo_app.n_samples} samples, "
                    f"round2: {QUEUE}): mean α {pair['mean_first']:.3f} → {pair['mean_second']:.3f} "
                    f"(Δ {'+' if d >= 0 else ''}{d:.3f}, {word}) · {pair['improved']} better, "
                    f"{pair['worsened']} worse, {pair['samples'] - pair['changed']} unchanged")
        assert expected in " ".join(text.split()), text[:3000]
        doc_screenshot(page, "round2_overview")

        open_app(page, demo_app)
        content = open_panel(page, "kalos_collaboration")
        _on_round2(page, content)
        pick_after_label(page, "Second run", "kalos")
        text = wait_for_text(content, "DIC = ", timeout=60)
        assert "DIC = ‖M − M′‖ / ‖M‖" in text and "Masked pairs (fewer than 10 shared images in either run): none" \
            in text, text[:2000]
        # the screenshot: the comparison's heading at the top, its text and |M − M′| below
        content.get_by_text("Compare with a second run (DIC)").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(1500)
        doc_screenshot(page, "round2_collaboration")
    finally:
        delete_agreement_run(ds, "round2")
        for f in fields:
            ds.delete_sample_field(f)
