"""Short unified diffs of a change, for results a model or a person reads at a glance."""

from __future__ import annotations

import difflib
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Final

__all__ = [
    "INLINE_DIFF_LINES",
    "MAX_CHANGE_DIFF_BYTES",
    "MAX_CHANGE_DIFF_LINES",
    "MAX_DIFF_CHARS",
    "MAX_DIFF_LINES",
    "MAX_DIFF_SECONDS",
    "MAX_MATCH_WORK",
    "VersionDiff",
    "shared_ends",
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
MAX_DIFF_SECONDS: Final = 1.0
"""Time a diff between two versions may take (difflib's grows with the square of the lines
where few are distinct); beyond, a summary."""
INLINE_DIFF_LINES: Final = 1_000
"""Lines two versions may hold together for their diff to run on the event loop (a few
milliseconds at most); more, and it runs in a worker thread."""
MAX_MATCH_WORK: Final = 500_000
"""Line comparisons the first match of two versions' differing lines may make; beyond, a
summary, without comparing (the time limit is checked between matches)."""
_MAX_SUMMARY_REGIONS: Final = 40


def short_diff(before: str, after: str, *, first_line: int) -> str | None:
    """A unified diff (one line of context) of *before* → *after*, or None when too big.

    Both texts are whole lines of one region, starting at line *first_line* of
    the old file (which is also where the region starts in the new file).
    """
    if len(before) + len(after) > MAX_DIFF_CHARS:
        return None
    old, new = _lines(before), _lines(after)
    if len(old) + len(new) > MAX_DIFF_LINES:
        return None
    groups = difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(1)
    return "\n".join(_hunk_lines(groups, old, new, first_line - 1, counted=True)) or None


def shared_ends(old: Sequence[str], new: Sequence[str]) -> tuple[int, int]:
    """How many lines *old* and *new* share at their start, and then at their end."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


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
    seconds: float = MAX_DIFF_SECONDS,
) -> VersionDiff:
    """The unified diff of *path* from *before* to *after*, whole within the bounds.

    Beyond *max_bytes* of diff or *max_lines* changed lines, the text names each
    changed region (``lines 10-14 → 10-16``) instead, the first few of them. Only
    the lines between the texts' common start and end are compared; where that
    would take more than :data:`MAX_MATCH_WORK` comparisons at first, or more than
    *seconds* in all, the summary names that span instead. Memory stays bounded by
    the texts' size.
    """
    old, new = _lines(before), _lines(after)
    head, tail = shared_ends(old, new)
    old_middle, new_middle = old[head : len(old) - tail], new[head : len(new) - tail]
    if not old_middle and not new_middle:
        text = f"no line of {path} changed (its line endings, final newline or encoding did)"
        return VersionDiff(text=text, whole=True, changed_lines=0)
    first = max(head - 3, 0)  # three lines of context, as difflib gives them
    old_part = old[first : len(old) - max(tail - 3, 0)]
    new_part = new[first : len(new) - max(tail - 3, 0)]
    groups = None
    if _match_work(old_part, new_part) <= MAX_MATCH_WORK:
        matcher = _Timed(old_part, new_part, deadline=time.monotonic() + seconds)
        with suppress(_TooSlow):
            groups = list(matcher.get_grouped_opcodes(3))
    if groups is None:
        changed = max(_changed_at_least(old_middle, new_middle), 1)
        spans = [_span(head, len(part)) for part in (old_middle, new_middle)]
        summary = (
            f"{changed} or more lines changed in {path} (too many to compare): "
            f"lines {spans[0]} → {spans[1]}"
        )
        return VersionDiff(text=summary, whole=False, changed_lines=changed)
    shown = [f"--- a/{path}", f"+++ b/{path}"]
    regions = [
        "lines " + " → ".join(_span(*span) for span in _spans(group, first)) for group in groups
    ]
    changed, size = 0, len(shown[0]) + len(shown[1]) + 2
    for line in _hunk_lines(groups, old_part, new_part, first):
        if line[0] in "+-":
            changed += 1
        size += len(line) + 1
        if changed <= max_lines and size <= max_bytes:
            shown.append(line)  # (beyond a bound, only the regions are kept)
    text = "\n".join(shown)
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


def _hunk_lines(
    groups: Iterable[list[tuple[str, int, int, int, int]]],
    old: Sequence[str],
    new: Sequence[str],
    first: int,
    *,
    counted: bool = False,
) -> Iterator[str]:
    """The lines of each hunk of *groups* (difflib's), numbered from line *first* + 1.

    With *counted*, every range in a header gives its count, even of one line.
    """
    for group in groups:
        old_range, new_range = (_range(*span, counted) for span in _spans(group, first))
        yield f"@@ -{old_range} +{new_range} @@"
        for tag, old_from, old_to, new_from, new_to in group:
            if tag == "equal":
                yield from (f" {line}" for line in old[old_from:old_to])
                continue
            yield from (f"-{line}" for line in old[old_from:old_to])
            yield from (f"+{line}" for line in new[new_from:new_to])


def _spans(
    group: list[tuple[str, int, int, int, int]], first: int
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The old and new ``(lines before, length)`` of the hunk *group*, after line *first*."""
    (_, old_start, _, new_start, _), (_, _, old_end, _, new_end) = group[0], group[-1]
    return (first + old_start, old_end - old_start), (first + new_start, new_end - new_start)


def _range(start: int, length: int, counted: bool) -> str:
    """A hunk's range of *length* lines after the first *start* lines, as unified diffs spell it."""
    if length == 1 and not counted:
        return str(start + 1)
    return f"{start + bool(length)},{length}"


class _TooSlow(Exception):
    """The comparison of two versions would take too long."""


class _Timed(difflib.SequenceMatcher[str]):
    """difflib's matcher, giving up (``_TooSlow``) once past its *deadline*."""

    def __init__(self, old: list[str], new: list[str], *, deadline: float) -> None:
        self.deadline = deadline
        super().__init__(None, old, new)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        if time.monotonic() >= self.deadline:
            raise _TooSlow
        return super().find_longest_match(alo, ahi, blo, bhi)


def _match_work(old: list[str], new: list[str]) -> int:
    """Comparisons difflib's first match of *old* in *new* makes.

    Each line of *old*, times how often it occurs in *new* (lines in over 1% of a
    long *new* are junk to difflib: never compared).
    """
    counts = Counter(new)
    popular = len(new) // 100 + 1 if len(new) >= 200 else len(new) + 1
    return sum(count for line in old if (count := counts.get(line, 0)) <= popular)


def _changed_at_least(old: list[str], new: list[str]) -> int:
    """Lines removed plus added that any diff of *old* → *new* has (their multisets differ)."""
    removed, added = Counter(old), Counter(new)
    return (removed - added).total() + (added - removed).total()


def _span(start: int, length: int) -> str:
    """The *length* lines after the first *start*, as a summary names them."""
    if length == 0:
        return f"none after {start}"
    return str(start + 1) if length == 1 else f"{start + 1}-{start + length}"
