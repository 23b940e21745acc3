"""The documents a newcomer reads: a short README, user docs free of working-notes vocabulary,
and every relative link in README.md and docs/*.md pointing at a file (and heading) that exists.

The generated parts (docs/options.md, the CLI synopses) are checked against their generator in
``tests/core/test_common_measures.py``."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]

#: phrases of work notes, not of a product: temporary paths, work stops and rounds, issue and pull
#: request numbers, branches, the people who did the work
WORK_NOTES = {
    "a /tmp path": r"(?<![\w.])/tmp/",
    "a work stop": r"\bstops? \d+\b",
    "an issue number": r"\bissues? #?\d+\b|\(#\d+\)|\bPR #?\d+\b",
    "a branch": r"\bbranch(es)? `",
    "a pass or round of work": r"\b(this|previous|earlier|later|next|a further) (stop|round|pass)\b"
                               r"|\b(first|second|third|fourth|fifth|sixth|seventh|eighth) pass\b",
    "a note to fold in": r"\bto be folded\b|\bworking notes?\b",
    "the people at work": r"\bthe lead\b|\bhelper sessions?\b|\bhelpers'",
}

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"|href=\"([^\"]+)\"")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (commands and code may name anything)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-',
    a repeated heading numbered (-1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for title in HEADING.findall(_prose(path)):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(path: Path):
    for m in LINK.finditer(_prose(path)):
        target = next(g for g in m.groups() if g)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto: ... are not checked
            yield target


def test_the_readme_is_at_most_250_lines():
    n = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines: move details into docs/ and link them"


def test_the_perf_notes_are_gone():
    assert not (REPO / "docs" / "perf").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_user_page_holds_no_working_notes(page):
    text = page.read_text(encoding="utf-8")
    found = [f"{what}: line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
             for what, pattern in WORK_NOTES.items() for m in re.finditer(pattern, text, re.I)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_and_heading_that_exist(page):
    broken = []
    for target in _links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.name}")
    assert not broken, "\n".join(broken)


def test_the_checks_catch_what_they_look_for(tmp_path):
    """The patterns and the link check fail on what they are meant to refuse."""
    notes = ["figures in /tmp/full5k.json", "measured in stop 35", "see issue 23", "fixed (#12)",
             "on branch `calib`", "to be folded in", "the fourth pass", "this round", "asked the lead"]
    for line in notes:
        assert any(re.search(p, line, re.I) for p in WORK_NOTES.values()), line
    for line in ["a second round in Label Studio", "prediction #0 (no id)", "whole-array rounds",
                 "helpers in `panels/chrome.py`", "round 2 on the review queue"]:
        assert not any(re.search(p, line, re.I) for p in WORK_NOTES.values()), line
    page = tmp_path / "page.md"
    page.write_text("# A heading: `code` (x)\n\n[ok](#a-heading-code-x) [bad](#nope) [gone](missing.md)\n"
                    "```\n[in code](ignored.md)\n```\n")
    assert list(_links(page)) == ["#a-heading-code-x", "#nope", "missing.md"]
    assert _anchors(page) == {"a-heading-code-x"}


def test_the_readme_demo_transcript_is_a_current_run(tmp_path):
    """The README's ``make demo`` transcript is written from a run (``make demo-transcript``); its
    calibration and agreement part, recomputed from the seeded demo files by the engine alone (the
    demo prints it with the same function), must still stand in it word for word."""
    from kalos_core.agreement.config import SENSITIVITY_THRESHOLDS
    from kalos_core.agreement.pipeline import AgreementConfig, compute_agreement
    from kalos_core.calibration import CalibrationConfig, calibrate
    from kalos_core.demo_data import build_demo
    from kalos_core.demo_transcript import MARKER, agreement_lines
    from kalos_core.io import load_coco
    from kalos_core.measure_docs import block_of
    from kalos_core.thresholds import proposed

    block = block_of((REPO / "README.md").read_text(encoding="utf-8"), MARKER)
    assert block and block.startswith("```text\n$ make demo\n"), "README.md lacks the make demo transcript"
    # what make demo runs (fiftyone_layer/demo.py, defaults: 40 images, seed 0) on the boxes
    data = load_coco(build_demo(tmp_path, n_images=40, seed=0, with_images=False), "bbox")
    rec = calibrate(data, CalibrationConfig(seed=0)).recommended.to_dict()
    t = proposed(rec["similarity_threshold"])
    res = compute_agreement(data, AgreementConfig(threshold=t, distance=rec["distance"],
                                                  lsa_thresholds=SENSITIVITY_THRESHOLDS, seed=0))
    assert agreement_lines(rec, t, res) in block, "the make demo transcript is stale: run make demo-transcript"
