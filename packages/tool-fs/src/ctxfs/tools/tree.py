"""Walking the workspace through ``ctx.fs``: listings, glob matches and grep hits.

Everything is deterministic: a directory's entries are sorted, a walk visits
directories in sorted order, and the whole result set is counted before a page
of it is cut, so totals and continuation offsets are exact. Directories named in
the ignore list are not descended into, symlinked directories are not followed,
and a walk stops (saying so) after a bounded number of entries.
"""

from __future__ import annotations

import re
from collections import deque
from contextlib import aclosing
from dataclasses import dataclass, field

from ctxfs.core import Context, FileKind, FsError, Stat
from ctxfs.core.globs import glob_matcher, relative_to
from ctxfs.core.paths import normalize_path

__all__ = ["Grep", "Walk", "grep", "walk"]


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
    regex: re.Pattern[str],
    *,
    root: str,
    file_glob: str | None,
    ignore: frozenset[str],
    max_entries: int,
    first: int,
    count: int,
    max_line_chars: int,
) -> Grep:
    """Search every text file below *root* (or *root* itself, if a file) line by line.

    Hits ``first .. first + count - 1`` (1-based, over all hits in sorted order)
    are kept; all are counted. Files that are binary, undecodable or refused are
    skipped and counted.
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
    for path in paths:
        try:
            async with aclosing(ctx.fs.lines(path, max_line_chars=max_line_chars)) as lines:
                async for number, line in lines:
                    if regex.search(line):
                        found.total += 1
                        if first <= found.total < first + count:
                            found.hits.append((path, number, line))
        except FsError:
            found.files_skipped += 1
            continue
        found.files_searched += 1
    return found
