"""Field-name rules shared by the forms and the imports."""

from __future__ import annotations

import re

#: a plain FiftyOne field / attribute name (no dots, no leading underscore or digit)
FIELD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def safe_name(text) -> str:
    """``text`` as a field-name fragment: runs of other characters become ``_`` (``"Dr. Ann" -> "Dr_Ann"``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", str(text)).strip("_")
    return name or "x"
