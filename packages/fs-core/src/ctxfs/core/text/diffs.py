"""Short unified diffs of a change, for results a model or a person reads at a glance."""

from __future__ import annotations

import difflib
import re
from typing import Final

__all__ = ["MAX_DIFF_CHARS", "MAX_DIFF_LINES", "short_diff"]

MAX_DIFF_LINES: Final = 40
"""Changed regions with more lines than this get no diff."""
MAX_DIFF_CHARS: Final = 4000
"""Changed regions with more characters than this get no diff."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def short_diff(before: str, after: str, *, first_line: int) -> str | None:
    """A unified diff (one line of context) of *before* → *after*, or None when too big.

    Both texts are whole lines of one region, starting at line *first_line* of
    the old file (which is also where the region starts in the new file).
    """
    if len(before) + len(after) > MAX_DIFF_CHARS:
        return None
    old_lines, new_lines = _lines(before), _lines(after)
    if len(old_lines) + len(new_lines) > MAX_DIFF_LINES:
        return None
    shift = first_line - 1
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, n=1, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old_start, old_count, new_start, new_count = hunk.groups()
            out.append(
                f"@@ -{int(old_start) + shift},{old_count or 1} "
                f"+{int(new_start) + shift},{new_count or 1} @@"
            )
        else:
            out.append(line)
    return "\n".join(out) if out else None


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
