"""Short unified diffs of a change, for results a model or a person reads at a glance."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_CHANGE_DIFF_BYTES",
    "MAX_CHANGE_DIFF_LINES",
    "MAX_COMPARED_LINES",
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
MAX_COMPARED_LINES: Final = 20_000
"""Lines between two versions' common start and end compared at most (difflib's time
grows with their square where few lines are distinct); beyond, a summary."""
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
    changed region (``lines 10-14 → 10-16``) instead, the first few of them. Only
    the lines between the texts' common start and end are compared, and no more
    than :data:`MAX_COMPARED_LINES` of them: beyond, the summary names that span.
    Time and memory stay bounded by the texts' size.
    """
    old, new = _lines(before), _lines(after)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if len(old) + len(new) - 2 * (head + tail) > MAX_COMPARED_LINES:
        changed = _changed_at_least(old[head : len(old) - tail], new[head : len(new) - tail])
        counts = [len(lines) - tail - head for lines in (old, new)]
        spans = [_span(str(head + (count > 0)), str(count)) for count in counts]  # (as difflib)
        summary = (
            f"{changed} or more lines changed in {path} (too many to show or compare): "
            f"lines {spans[0]} → {spans[1]}"
        )
        return VersionDiff(text=summary, whole=False, changed_lines=changed)
    first = max(head - 3, 0)  # three lines of context, as difflib gives them
    hunks = difflib.unified_diff(
        old[first : len(old) - max(tail - 3, 0)],
        new[first : len(new) - max(tail - 3, 0)],
        f"a/{path}",
        f"b/{path}",
        n=3,
        lineterm="",
    )
    shown: list[str] = []
    regions: list[str] = []
    changed = size = 0
    for number, line in enumerate(hunks):
        if line.startswith("@@"):
            line = _shifted(line, first)  # noqa: PLW2901 - the header, in the file's numbers
            regions.append(_region(line))
        elif number >= 2 and line.startswith(("+", "-")):  # (after the ---/+++ names)
            changed += 1
        size += len(line) + 1
        if changed <= max_lines and size <= max_bytes:
            shown.append(line)  # (beyond a bound, only the regions are kept)
    text = "\n".join(shown)
    if not regions:
        text = f"no line of {path} changed (its line endings, final newline or encoding did)"
        return VersionDiff(text=text, whole=True, changed_lines=0)
    fits = changed <= max_lines and size <= max_bytes
    if fits and len(text.encode("utf-8", "surrogateescape")) <= max_bytes:
        return VersionDiff(text=text, whole=True, changed_lines=changed)
    listed = regions[:_MAX_SUMMARY_REGIONS]
    more = len(regions) - len(listed)
    summary = (
        f"{changed} lines changed in {len(regions)} region(s) of {path} "
        f"(too many to show): " + "; ".join(listed) + (f"; and {more} more" if more else "")
    )
    return VersionDiff(text=summary, whole=False, changed_lines=changed)


def _shifted(header: str, lines: int) -> str:
    """A hunk *header* of a diff of texts that started *lines* into the files."""
    match = _HUNK.match(header)
    if match is None:  # pragma: no cover - difflib writes every header so
        return header
    old_start, old_count, new_start, new_count = match.groups()
    old_part = f"-{int(old_start) + lines}" + ("" if old_count is None else f",{old_count}")
    new_part = f"+{int(new_start) + lines}" + ("" if new_count is None else f",{new_count}")
    return f"@@ {old_part} {new_part} @@"


def _changed_at_least(old: list[str], new: list[str]) -> int:
    """Lines removed plus added that any diff of *old* → *new* has (their multisets differ)."""
    removed, added = Counter(old), Counter(new)
    return sum((removed - added).values()) + sum((added - removed).values())


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
