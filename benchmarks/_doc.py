"""Writing a benchmark's table into docs/benchmarks.md, between its own marker comments.

The bench scripts run as ``python benchmarks/<script>.py``, so this folder is on ``sys.path``.
"""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def write_block(marker: str, body: str, doc: Path = DOC, heading: str | None = None) -> None:
    """Put ``body`` between ``<!-- {marker}:start -->`` and ``<!-- {marker}:end -->`` in ``doc``,
    replacing what stood there; without the markers, append it (under ``heading`` when given)."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    block = f"{start}\n{body}\n{end}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if start in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    elif heading:
        text = text.rstrip("\n") + f"\n\n{heading}\n\n" + block + "\n"
    else:
        text += "\n" + block + "\n"
    doc.parent.mkdir(exist_ok=True)
    doc.write_text(text)
    print(f"wrote {doc}")
