"""The README's examples, read the way a user reads them: under a heading.

Tests run each example as printed, so an example that rots fails the suite.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def section(heading: str) -> str:
    """The text under the heading whose title is ``heading`` (any level),
    up to the next heading of the same or a higher level."""
    text = README.read_text()
    m = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.M)
    assert m, f"README.md has no heading {heading!r}"
    level = len(m.group(1))
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def code_blocks(heading: str, lang: str = "python") -> list[str]:
    """The fenced blocks of language ``lang`` under ``heading``, in order."""
    return re.findall(rf"^```{re.escape(lang)}\n(.*?)^```", section(heading), re.M | re.S)
