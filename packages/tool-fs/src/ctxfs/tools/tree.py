"""Walking the workspace through ``ctx.fs``: listings, glob matches and grep hits.

Everything is deterministic: a directory's entries are sorted, a walk visits
directories in sorted order, and the whole result set is counted before a page
of it is cut, so totals and continuation offsets are exact. Directories named in
the ignore list are not descended into, symlinked directories are not followed,
and a walk stops (saying so) after a bounded number of entries.

Grep searches lines whole, however long, in batches in a worker thread (see
:mod:`ctxfs.tools.patterns`), so the event loop (other sessions) never waits for
a search; a call stops at its deadline and says so.
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Final

import anyio.lowlevel
import anyio.to_thread

from ctxfs.core import (
    Context,
    FileKind,
    FsError,
    Stat,
    glob_matcher,
    normalize_path,
    relative_to,
)
from ctxfs.tools.paging import Page
from ctxfs.tools.patterns import LinePattern
from ctxfs.tools.render import around

__all__ = ["Grep", "Hit", "Walk", "grep", "walk"]

_BATCH_CHARS: Final = 1 << 18
_BATCH_LINES: Final = 4096
"""Lines are searched in batches of this many characters or lines, in a worker thread."""


@dataclass
class Walk:
    """The files found below a directory, in sorted order."""

    files: list[Stat] = field(default_factory=list)
    truncated: bool = False
    """The walk stopped at its entry limit: more files may exist."""
    unreadable: int = 0
    """Directories that could not be listed."""
    unnamed: int = 0
    """Entries no path can name (see :class:`~ctxfs.core.Listing`), not listed."""


async def walk(ctx: Context, root: str, *, ignore: frozenset[str], max_entries: int) -> Walk:
    """Collect the files below *root* (breadth first, sorted), up to *max_entries* entries."""
    result, pending, seen = Walk(), deque([normalize_path(root)]), 0
    while pending:
        directory = pending.popleft()
        try:
            entries = await ctx.fs.list(directory)
            result.unnamed += len(entries.unnamed)
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


@dataclass(frozen=True, kw_only=True)
class Hit:
    """One line that matched, shown around its first match."""

    path: str
    line: int
    text: str
    """The line, or the part of it around the match when it is longer than the cap."""
    column: int
    """Where the first match starts in the line (0-based, in characters)."""
    text_start: int
    """Where *text* starts in the line (0 unless the line was cut)."""
    line_chars: int

    @property
    def cut(self) -> bool:
        """Whether *text* is a part of the line."""
        return len(self.text) < self.line_chars


@dataclass
class Grep:
    """Hits of a regular expression, counted over every file searched."""

    hits: list[Hit] = field(default_factory=list)
    """The requested page of hits."""
    total: int = 0
    files_searched: int = 0
    files_skipped: int = 0
    timed_out: bool = False
    """The call's deadline passed: the counts cover the lines searched until then."""
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
    seconds: float,
) -> Grep:
    """Search every text file below *root* (or *root* itself, if a file) line by line.

    The hits on *page* (1-based, over all hits in sorted order) are kept; all
    are counted. Lines are searched whole; a hit longer than *max_line_chars*
    keeps that much of its line, around the match. Files that are binary,
    undecodable or refused are skipped and counted (a file that fails part way
    keeps the matches found before). After *seconds*, the search stops and says
    so (``timed_out``).

    Raises:
        InvalidArgument: A line's search ran out of its own time (see :class:`LinePattern`).

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
    search = _Search(pattern, found, page, max_line_chars, time.monotonic() + seconds)
    try:
        await _search_files(ctx, paths, search)
    except _TooSlow as slow:
        raise pattern.too_slow(slow.path, slow.number) from None
    return found


async def _search_files(ctx: Context, paths: list[str], search: _Search) -> None:
    """Feed the lines of each file to *search*, until the end or its deadline."""
    for path in paths:
        # Small files are read without suspending: let other tasks run, and a cancel land.
        await anyio.lowlevel.checkpoint()
        if search.out_of_time():
            return
        start = len(search.batch)
        try:
            async with aclosing(ctx.fs.lines(path, max_line_chars=None)) as lines:
                async for number, line in lines:
                    if search.add(path, number, line):
                        start = 0
                        if not await search.flush():
                            return
        except FsError:  # this file cannot be searched (its lines not yet searched go)
            search.drop(start)
            search.found.files_skipped += 1
            continue
        search.files_read += 1
    await search.flush()


class _TooSlow(Exception):
    """A line took longer than the pattern's limit: no ``FsError``, no file is at fault."""

    def __init__(self, path: str, number: int) -> None:
        super().__init__(path, number)
        self.path, self.number = path, number


class _Search:
    """Lines gathered into batches, each searched off the event loop, and what they hold."""

    def __init__(
        self, pattern: LinePattern, found: Grep, page: Page, max_line_chars: int, deadline: float
    ) -> None:
        self.pattern, self.found, self.page = pattern, found, page
        self.max_line_chars, self.deadline = max_line_chars, deadline
        self.batch: list[tuple[str, int, str]] = []
        self.chars = 0
        self.files_read = 0  # files read into the batch, not yet searched to their end

    def add(self, path: str, number: int, line: str) -> bool:
        """Add a line; whether the batch is full."""
        self.batch.append((path, number, line))
        self.chars += len(line)
        return self.chars >= _BATCH_CHARS or len(self.batch) >= _BATCH_LINES

    def drop(self, start: int) -> None:
        """Forget the lines from *start* on (a file that failed part way)."""
        del self.batch[start:]
        self.chars = sum(len(line) for _, _, line in self.batch)

    def out_of_time(self) -> bool:
        """Whether the deadline has passed (the result then says so)."""
        if time.monotonic() > self.deadline:
            self.found.timed_out = True
        return self.found.timed_out

    async def flush(self) -> bool:
        """Search the batch in a worker thread; whether there is time to go on.

        Raises:
            _TooSlow: A line took longer than the pattern's limit.

        """
        if not self.batch and not self.files_read:
            return not self.out_of_time()
        batch, found = self.batch, self.found
        searched = await anyio.to_thread.run_sync(self.pattern.search_lines, batch, self.deadline)
        for index, column in searched.hits:
            found.total += 1
            if self.page.holds(found.total):
                found.hits.append(_hit(*batch[index], column, self.max_line_chars))
        if searched.stopped_at is not None:
            path, number, _ = batch[searched.stopped_at]
            if not searched.whole_call:
                raise _TooSlow(path, number)
            found.timed_out = True
            return False
        found.files_searched += self.files_read
        self.batch, self.chars, self.files_read = [], 0, 0
        return not self.out_of_time()


def _hit(path: str, number: int, line: str, column: int, max_chars: int) -> Hit:
    text, text_start = around(line, column, max_chars)
    return Hit(
        path=path,
        line=number,
        text=text,
        column=column,
        text_start=text_start,
        line_chars=len(line),
    )
