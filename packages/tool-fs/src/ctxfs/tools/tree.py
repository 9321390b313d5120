"""Walking the workspace through ``ctx.fs``: listings, glob matches and grep hits.

Everything is deterministic: a directory's entries are sorted, a walk visits
directories in sorted order, and the whole result set is counted before a page
of it is cut, so totals and continuation offsets are exact. Directories named in
the ignore list are not descended into, symlinked directories are not followed,
and a walk stops (saying so) after a bounded number of entries.

Grep patterns are Python regular expressions, run by the ``regex`` engine
(``re``'s syntax and meaning) because it can stop a search: a pattern that could
backtrack without bound (a repeated group holding a quantifier or alternatives, a
backreference, many unbounded repeats) gets a time limit per line, so a
catastrophic one fails the call instead of holding the event loop forever.
"""

from __future__ import annotations

import math
from collections import deque
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Final

import anyio.lowlevel
import regex

from ctxfs.core import (
    Context,
    FileKind,
    FsError,
    InvalidArgument,
    Stat,
    glob_matcher,
    normalize_path,
    relative_to,
)
from ctxfs.tools.paging import Page

__all__ = ["Grep", "LinePattern", "OutOfTime", "Walk", "grep", "walk"]

_QUANTIFIER: Final = regex.compile(r"[*+?]|\{(\d*)(,?)(\d*)\}")
_CHARACTER_CLASS: Final = regex.compile(r"\[\^?\]?(?:\\.|[^\]\\])*\]", regex.DOTALL)
_MOST_UNBOUNDED_REPEATS: Final = 3


@dataclass
class Walk:
    """The files found below a directory, in sorted order."""

    files: list[Stat] = field(default_factory=list)
    truncated: bool = False
    """The walk stopped at its entry limit: more files may exist."""
    unreadable: int = 0
    """Directories that could not be listed."""


async def walk(ctx: Context, root: str, *, ignore: frozenset[str], max_entries: int) -> Walk:
    """Collect the files below *root* (breadth first, sorted), up to *max_entries* entries."""
    result, pending, seen = Walk(), deque([normalize_path(root)]), 0
    while pending:
        directory = pending.popleft()
        try:
            entries = await ctx.fs.list(directory)
        except FsError:
            if directory == normalize_path(root):
                raise
            result.unreadable += 1
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                result.truncated = True
                return result
            if entry.kind is FileKind.DIRECTORY:
                if entry.name not in ignore:
                    pending.append(entry.path)
            elif entry.kind in (FileKind.FILE, FileKind.SYMLINK):
                result.files.append(entry)
    result.files.sort(key=lambda entry: entry.path)
    return result


class OutOfTime(Exception):
    """A line's search took longer than the pattern's limit (grep turns it into its error)."""


@dataclass(frozen=True, kw_only=True)
class LinePattern:
    """A grep pattern, searched for in one line at a time."""

    compiled: regex.Pattern[str]
    line_seconds: float | None
    """The time one line's search may take; None for a pattern that cannot backtrack
    without bound (see :func:`_can_backtrack`)."""

    @classmethod
    def compile(cls, pattern: str, *, ignore_case: bool, line_seconds: float) -> LinePattern:
        """Compile *pattern*; raise ``InvalidArgument`` (field ``pattern``) if it is not one."""
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except regex.error as bad:
            raise InvalidArgument(
                f"pattern is not a valid regular expression: {bad}",
                hint="Fix the regular expression (Python syntax); escape special characters.",
                details={"field": "pattern"},
            ) from None
        bounded = not _can_backtrack(pattern)
        return cls(compiled=compiled, line_seconds=None if bounded else line_seconds)

    def search(self, line: str) -> bool:
        """Whether *line* holds a match; ``OutOfTime`` once the line's time is up."""
        if self.line_seconds is None:
            return self.compiled.search(line) is not None  # passing a timeout costs microseconds
        try:
            return self.compiled.search(line, timeout=self.line_seconds) is not None
        except TimeoutError:
            raise OutOfTime from None

    def too_slow(self, path: str, number: int) -> InvalidArgument:
        """The failure of a search that ran out of time on line *number* of *path*."""
        return InvalidArgument(
            f"the pattern took more than {self.line_seconds:g} s to search line {number} "
            f"of {path}: it backtracks catastrophically",
            hint="Simplify the pattern: no quantifier inside a repeated group (as in "
            "(a+)+), no overlapping alternatives, fewer adjacent quantifiers such as .*.*",
            details={"field": "pattern", "path": path, "line": number},
        )


def _quantifier(pattern: str, at: int) -> tuple[float, int] | None:
    """The most repeats the quantifier at *at* allows and where it ends, if one starts there."""
    found = _QUANTIFIER.match(pattern, at)
    if found is None:
        return None
    low, comma, high = found.groups()
    if found.group() in ("*", "+"):
        most: float = math.inf
    elif found.group() == "?":
        most = 1
    elif not (low or high):
        return None  # "{}" or "{,}": literal braces
    else:
        most = math.inf if comma and not high else int(high or low)
    end = found.end()
    return most, end + (end < len(pattern) and pattern[end] in "?+")  # lazy or possessive


def _can_backtrack(pattern: str) -> bool:
    """Whether *pattern* may backtrack without bound; in doubt, it may.

    It may with a backreference or a conditional group, with a repeated group
    that holds a quantifier or alternatives (``(a+)+``, ``(a|aa)*``, ``(a?b?){2,}``),
    and with more than three unbounded repeats. Anything else costs at most a
    small power of the line's length, which is capped.
    """
    groups: list[bool] = [False]  # per open group: it holds a quantifier or an alternative
    last_group = False  # the atom before a quantifier is a group that holds one
    unbounded, at = 0, 0
    while at < len(pattern):
        char, quantifier = pattern[at], _quantifier(pattern, at)
        if quantifier is not None:
            most, at = quantifier
            if last_group and most > 1:
                return True
            unbounded += most == math.inf
            groups[-1], last_group = True, False
            continue
        last_group = False
        if char == "\\":
            if pattern[at + 1 : at + 2] in ("", "g", "k") or pattern[at + 1 : at + 2].isdigit():
                return True  # a backreference (or a dangling escape)
            at += 2
            continue
        if char == "[":
            characters = _CHARACTER_CLASS.match(pattern, at)
            if characters is None:
                return True
            at = characters.end()
            continue
        if char == "(":
            if pattern.startswith(("(?P=", "(?(", "(?#"), at):
                return True
            groups.append(False)
            at += 2 if pattern.startswith("(?", at) else 1
            continue
        if char == ")" and len(groups) > 1:
            last_group = groups.pop()
            groups[-1] = groups[-1] or last_group
        elif char == "|":
            groups[-1] = True
        at += 1
    return unbounded > _MOST_UNBOUNDED_REPEATS


@dataclass
class Grep:
    """Hits of a regular expression, counted over every file searched."""

    hits: list[tuple[str, int, str]] = field(default_factory=list)
    """The requested page of hits: (path, line number, line)."""
    total: int = 0
    files_searched: int = 0
    files_skipped: int = 0
    walk: Walk = field(default_factory=Walk)


async def grep(
    ctx: Context,
    pattern: LinePattern,
    *,
    root: str,
    file_glob: str | None,
    ignore: frozenset[str],
    max_entries: int,
    page: Page,
    max_line_chars: int,
) -> Grep:
    """Search every text file below *root* (or *root* itself, if a file) line by line.

    The hits on *page* (1-based, over all hits in sorted order) are kept; all
    are counted. Files that are binary, undecodable or refused are skipped and
    counted.

    Raises:
        InvalidArgument: A line's search ran out of time (see :class:`LinePattern`).

    """
    root = normalize_path(root)
    found = Grep()
    if root and (await ctx.fs.stat(root)).kind is not FileKind.DIRECTORY:
        paths = [root]
    else:
        found.walk = await walk(ctx, root, ignore=ignore, max_entries=max_entries)
        matcher = glob_matcher(file_glob) if file_glob else None
        paths = [
            entry.path
            for entry in found.walk.files
            if matcher is None or matcher.fullmatch(relative_to(entry.path, root))
        ]
    path, number = "", 0
    try:
        for path in paths:
            # Small files are read without suspending: let other tasks run, and a cancel land.
            await anyio.lowlevel.checkpoint()
            try:
                async with aclosing(ctx.fs.lines(path, max_line_chars=max_line_chars)) as lines:
                    async for number, line in lines:
                        if pattern.search(line):
                            found.total += 1
                            if page.holds(found.total):
                                found.hits.append((path, number, line))
            except FsError:  # this file cannot be searched; the others still can
                found.files_skipped += 1
                continue
            found.files_searched += 1
    except OutOfTime:
        raise pattern.too_slow(path, number) from None
    return found
