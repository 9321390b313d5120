"""Short unified diffs of a change, for results a model or a person reads at a glance."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_CHANGE_DIFF_BYTES",
    "MAX_CHANGE_DIFF_LINES",
    "MAX_DIFF_CHARS",
    "MAX_DIFF_LINES",
    "VersionDiff",
    "short_diff",
    "version_diff",
]

MAX_DIFF_LINES: Final = 40
"""Changed regions with more lines than this get no diff."""
MAX_DIFF_CHARS: Final = 4000
"""Changed regions with more characters than this get no diff."""

MAX_CHANGE_DIFF_BYTES: Final = 64 * 1024
"""A diff between two versions longer than this (UTF-8) is summarised instead."""
MAX_CHANGE_DIFF_LINES: Final = 400
"""A diff between two versions changing more lines than this is summarised instead."""
_MAX_SUMMARY_REGIONS: Final = 40

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


@dataclass(frozen=True, kw_only=True)
class VersionDiff:
    """What changed between two versions of a file: the whole diff, or a summary."""

    text: str
    """A unified diff (three lines of context), or where and how much changed."""
    whole: bool
    """Whether :attr:`text` is the whole diff (not a summary)."""
    changed_lines: int
    """Lines removed plus lines added."""


def version_diff(
    before: str,
    after: str,
    *,
    path: str,
    max_bytes: int = MAX_CHANGE_DIFF_BYTES,
    max_lines: int = MAX_CHANGE_DIFF_LINES,
) -> VersionDiff:
    """The unified diff of *path* from *before* to *after*, whole within the bounds.

    Beyond *max_bytes* of diff or *max_lines* changed lines, the text names each
    changed region (``lines 10-14 → 10-16``) instead, the first few of them.
    """
    diff = list(
        difflib.unified_diff(
            _lines(before), _lines(after), f"a/{path}", f"b/{path}", n=3, lineterm=""
        )
    )
    changed = sum(
        1 for line in diff[2:] if line.startswith(("+", "-")) and not line.startswith("@@")
    )
    text = "\n".join(diff)
    if changed <= max_lines and len(text.encode("utf-8", "surrogateescape")) <= max_bytes:
        return VersionDiff(text=text, whole=True, changed_lines=changed)
    regions = [_region(line) for line in diff if line.startswith("@@")]
    shown = regions[:_MAX_SUMMARY_REGIONS]
    more = len(regions) - len(shown)
    summary = (
        f"{changed} lines changed in {len(regions)} region(s) of {path} "
        f"(too many to show): " + "; ".join(shown) + (f"; and {more} more" if more else "")
    )
    return VersionDiff(text=summary, whole=False, changed_lines=changed)


def _region(header: str) -> str:
    match = _HUNK.match(header)
    if match is None:  # pragma: no cover - difflib writes every header so
        return header
    old_start, old_count, new_start, new_count = match.groups()
    return f"lines {_span(old_start, old_count)} → {_span(new_start, new_count)}"


def _span(start: str, count: str | None) -> str:
    first, lines = int(start), 1 if count is None else int(count)
    if lines == 0:
        return f"none after {first}"
    return str(first) if lines == 1 else f"{first}-{first + lines - 1}"
