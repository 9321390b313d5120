"""Grep through ``ctx.fs``: the matching lines, the files holding them, or counts per file.

Files are searched in sorted path order (:class:`.scan.Scan`) until the page is found
(totals are then "at least") or the call's deadline passes; the search's memo
(:mod:`.memo`) lets the next page count unchanged files without reading them. Where the
backend has a search engine of its own (fs-local: ripgrep), it finds the files that match
and counts their lines, then gives the lines of the files the page falls in; a multiline
search always runs here, reading each file whole.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Final

import anyio
import anyio.lowlevel

from ctxfs.core import (
    Context,
    CutLine,
    FileKind,
    FileMatches,
    FileSearch,
    FsError,
    LineSearch,
    Stat,
    TooLarge,
    normalize_path,
    relative_to,
)
from ctxfs.core.kit import check_path, listing_work
from ctxfs.tools.builtin.grep.background import Background, ReadAhead
from ctxfs.tools.builtin.grep.query import (
    FileCount,
    Grep,
    GrepQuery,
    OutputMode,
    SearchStatus,
)
from ctxfs.tools.builtin.grep.scan import Scan, TooSlow
from ctxfs.tools.results import Page
from ctxfs.tools.walk import all_lines, walk

__all__ = ["LINE_MAX_CHARS", "MOST_COUNTED_HERE", "MULTILINE_MAX_CHARS", "grep"]

MULTILINE_MAX_CHARS: Final = 64 << 20
"""The largest file (in characters) a multiline search reads; a larger one is skipped."""
MOST_COUNTED_HERE: Final = 64
"""The most files an engine leaves unsearched that a search counts by reading them all, for
exact totals; beyond, the search walks and reads as far as its page needs."""
LINE_MAX_CHARS: Final = 8 << 20
"""The longest line ctxfs's own search holds (a file with a longer one is skipped, as
``line_too_long``): memory stays bounded. A backend's engine cuts such lines instead."""


async def grep(ctx: Context, query: GrepQuery) -> Grep:
    """Search every text file below ``query.root`` (or that file itself).

    Raises:
        InvalidArgument: A line's (file's) search ran out of its own time (see
            :class:`LinePattern`).

    """
    root = normalize_path(query.root)
    found = Grep()
    if root and (stat := await ctx.fs.stat(root)).kind is not FileKind.DIRECTORY:
        files = [stat]
        if (given := await _engine_lines(ctx, query, [root])) and root in given:
            await _searched(ctx, replace(query, memo=None), found, files, given=given)
            found.complete = found.lines_matched < _lines_wanted(query) and not found.timed_out
            return found
    elif (
        not query.multiline
        and (accelerated := await _engine_counts(ctx, query, root)) is not None
        and (counted := await _from_counts(ctx, query, root, accelerated)) is not None
    ):
        return counted
    else:
        found.walk = await walk(
            ctx, root, only=query.only, max_entries=query.max_entries, glob=query.glob
        )
        keep = query.file_filter
        files = [
            entry
            for entry in found.walk.files
            if keep is None or keep(relative_to(entry.path, root))
        ]
    await _searched(ctx, query, found, files)
    found.complete = found.complete and not found.timed_out and not found.walk.truncated
    return found


async def _engine_counts(ctx: Context, query: GrepQuery, root: str) -> FileMatches | None:
    """The backend engine's files and counts, telling the caller how far it is meanwhile."""
    search, progress = _file_search(ctx, query, root), query.progress
    if progress is None:
        return await ctx.fs.search_files(search)
    found = [0]  # written by the engine's thread, read here
    counted = not ctx.opened_fs.hooks.hides  # (else the files a policy hides would count too)

    async def tell() -> None:
        await anyio.sleep(query.progress_seconds)
        while True:
            await progress(SearchStatus(matching_files=found[0] if counted else None))
            await anyio.sleep(query.progress_gap)

    async with Background() as reporting:
        reporting.start_soon(tell)
        return await ctx.fs.search_files(
            replace(search, found_so_far=lambda files: found.__setitem__(0, files))
        )


def _lines_wanted(query: GrepQuery) -> int:
    """The matching lines an engine is asked for per file: the page's, and one after."""
    return query.page.first + query.page.count


async def _engine_lines(
    ctx: Context, query: GrepQuery, paths: list[str]
) -> dict[str, list[tuple[int, str]]] | None:
    """The backend engine's matching and context lines of *paths* for the page of *query*."""
    if query.multiline or query.mode is not OutputMode.CONTENT:
        return None
    given = await ctx.fs.search_lines(
        LineSearch(
            paths=tuple(paths),
            pattern=query.pattern.compiled.pattern,
            ignore_case=query.pattern.ignore_case,
            max_count=_lines_wanted(query),
            before=query.before,
            after=query.after,
            cut_chars=query.max_line_chars,
            seconds=query.seconds,
        )
    )
    return None if given is None or not given.complete else given.lines


async def _searched(
    ctx: Context,
    query: GrepQuery,
    found: Grep,
    files: list[Stat],
    *,
    given: dict[str, list[tuple[int, str]]] | None = None,
) -> None:
    """Search *files* in order for *query* (each call has its own deadline), into *found*.

    The lines of a file in *given* (its matching and context lines, found by
    the backend's engine) are searched instead of reading it.
    """
    search = Scan(query, found, time.monotonic() + query.seconds, files=len(files))
    try:
        if query.multiline:
            await _search_whole_files(ctx, files, search)
        else:
            await _search_lines(ctx, files, search, given or {})
    except TooSlow as slow:
        raise query.pattern.too_slow(slow.path, slow.number) from None


def _file_search(ctx: Context, query: GrepQuery, root: str) -> FileSearch:
    """What a backend's own engine is asked for *query*."""
    return FileSearch(
        path=root,
        pattern=query.pattern.compiled.pattern,
        ignore_case=query.pattern.ignore_case,
        multiline=query.multiline,
        hidden=query.only.hidden,
        ignored=query.only.ignored,
        skip_dirs=query.only.skip_dirs,
        names=query.names,
        glob=None if query.glob is None else query.glob.pattern,
        seconds=query.seconds,
        legacy_text=ctx.opened_fs.text_options.names_encodings,
    )


async def _from_counts(
    ctx: Context, query: GrepQuery, root: str, matches: FileMatches
) -> Grep | None:
    """The result from a backend engine's counts per file; None where they prove wrong.

    The files the engine left unsearched are counted here first (more than
    :data:`MOST_COUNTED_HERE`: None). Only the files the page
    falls in are then searched: in the lines the engine gives of them (each authorized like
    a read), or, for a file it leaves out, through ``ctx.fs``. Where that search finds fewer
    lines than the counts promise the page (a file that cannot be read here, a line the
    engine splits otherwise), the counts are not used.
    """
    if len(matches.unsearched) > MOST_COUNTED_HERE:
        return None  # (the walk reads them in their turn, as far as the page needs)
    keep, started = query.file_filter, time.monotonic()
    here = await _counted_here(
        ctx,
        query,
        [path for path in matches.unsearched if keep is None or keep(relative_to(path, root))],
    )

    unnamed = Counter[str]()  # (files no path can name, which the walk skips so too)

    def kept() -> tuple[dict[str, int], list[str]]:
        counts = {
            path: count
            for path, count in matches.counts.items()
            if (keep is None or keep(relative_to(path, root))) and _named(path, unnamed)
        }
        counts.update((counted.path, counted.count) for counted in here.files)
        return counts, sorted(counts)

    counts, ordered = await listing_work(len(matches.counts), kept)
    found = Grep(
        files_searched=max(0, (matches.searched or 0) - len(matches.unsearched) - unnamed.total())
        + here.files_searched,
        searched_told=matches.searched is not None and not query.filter_widened,
        lines_matched=sum(counts.values()),
        timed_out=not matches.complete or here.timed_out,
        complete=matches.complete and not here.timed_out,
        skipped=Counter(matches.skipped) + here.skipped + unnamed,
    )
    page = query.page
    if query.mode is not OutputMode.CONTENT:
        found.total = len(ordered)
        found.files = [FileCount(path=path, count=counts[path]) for path in page.cut(ordered)]
        return found
    found.total = found.lines_matched
    before, base, wanted = 0, None, []
    for path in ordered:
        if before + counts[path] >= page.first:
            base = before if base is None else base
            wanted.append(path)
        before += counts[path]
        if before >= page.first + page.count - 1:
            break
    if base is None:
        return found
    left = max(0.0, query.seconds - (time.monotonic() - started))  # (one deadline for all)
    shifted = replace(
        query, page=Page(first=page.first - base, count=page.count), memo=None, seconds=left
    )
    given = await _engine_lines(ctx, shifted, [p for p in wanted if p not in matches.unsearched])
    local = Grep()
    files = [Stat(path=path, kind=FileKind.FILE) for path in wanted]
    await _searched(ctx, shifted, local, files, given=given)
    promised = min(page.count, found.total - page.first + 1)
    if len(local.hits) < promised and not local.timed_out:
        return None
    found.hits, found.skipped = local.hits, found.skipped + local.skipped
    found.timed_out = found.timed_out or local.timed_out
    return found


def _named(path: str, unnamed: Counter[str]) -> bool:
    """Whether a tool's path can name *path*; else it is counted in *unnamed*, as the walk's."""
    try:
        check_path(path)
    except FsError as error:  # (a backslash, a line break: invalid_path)
        unnamed[_reason(error)] += 1
        return False
    return True


async def _counted_here(ctx: Context, query: GrepQuery, paths: list[str]) -> Grep:
    """The matching lines of each of *paths* that holds one, counted here (``files``).

    A file the search's memo knows, unchanged since, is counted without being read.
    """
    found = Grep()
    if paths:
        files = []
        for path in sorted(paths):
            try:
                files.append(await ctx.fs.stat(path))
            except FsError:  # (its read says why, as it is skipped)
                files.append(Stat(path=path, kind=FileKind.FILE))
        counting = replace(query, mode=OutputMode.COUNT, page=Page(first=1, count=len(paths)))
        await _searched(ctx, counting, found, files)
    return found


async def _search_lines(
    ctx: Context, files: list[Stat], search: Scan, given: dict[str, list[tuple[int, str]]]
) -> None:
    """Feed the lines of each file to *search*, until the end, its page, or its deadline."""
    width = ctx.opened_fs.backend.capabilities.concurrent_reads

    def wanted(entry: Stat) -> bool:  # to be read here, not given by the engine nor known
        return entry.path not in given and search.unknown(entry)

    async with ReadAhead(ctx, files, width=width, wanted=wanted) as ahead:
        for index, entry in enumerate(files):
            # Small files are read without suspending: let other tasks run, and a cancel land.
            await anyio.lowlevel.checkpoint()
            if search.out_of_time():
                search.stop()
                return
            if not (read := await search.to_read(entry)):
                if read is None:
                    return
                continue
            path, start, flushed = entry.path, len(search.batch), False
            try:
                if (known_lines := given.get(path)) is None and (whole := await ahead.take(index)):
                    known_lines = list(enumerate(whole, 1))
                numbered = (
                    ctx.fs.lines(path, max_line_chars=LINE_MAX_CHARS + 1)
                    if known_lines is None
                    else _each(known_lines)
                )
                async with aclosing(numbered) as lines:
                    async for number, line in lines:
                        if len(line) > LINE_MAX_CHARS and not isinstance(line, CutLine):
                            raise _too_long(path, number)
                        if search.add(path, number, line):
                            start, flushed = 0, True
                            if not await search.flush():  # (out of time)
                                search.stop(partly=path if search.counts[path] else None)
                                return
                            if search.settled(path):
                                break
                            if search.page_done():
                                search.stop(partly=path)  # (searched up to this line)
                                search.found.complete = False
                                return
            except FsError as error:  # this file cannot be searched (its lines not yet searched go)
                search.drop(start)
                search.skipped(entry, _reason(error), remember=not flushed)
                continue
            search.read_whole(entry)
        await search.flush()


async def _each(lines: list[tuple[int, str]]) -> AsyncGenerator[tuple[int, str]]:
    """Numbered *lines*, as ``ctx.fs.lines`` gives them."""
    for number, line in lines:
        yield number, line


async def _search_whole_files(ctx: Context, files: list[Stat], search: Scan) -> None:
    """Search each file's whole text at once (multiline), until the end, page, or deadline."""
    for entry in files:
        await anyio.lowlevel.checkpoint()
        if search.out_of_time():
            return
        if not (read := await search.to_read(entry)):
            if read is None:
                return
            continue
        try:
            lines = await all_lines(ctx, entry.path, max_chars=MULTILINE_MAX_CHARS)
        except FsError as error:
            search.skipped(entry, _reason(error))
            continue
        if not await search.whole(entry, lines):
            return


def _too_long(path: str, number: int) -> TooLarge:
    return TooLarge(
        f"line {number} of {path} is over {LINE_MAX_CHARS:,} characters",
        path=path,
        details={"line": number, "line_too_long": True},
    )


def _reason(error: FsError) -> str:
    """Why a file was skipped: the error's code, or ``hard_linked`` or ``line_too_long``."""
    if error.details.get("hard_links"):
        return "hard_linked"
    return "line_too_long" if error.details.get("line_too_long") else str(error.code)
