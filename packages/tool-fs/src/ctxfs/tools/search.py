"""Grep through ``ctx.fs``: the matching lines, the files holding them, or counts per file.

Files are searched in sorted path order, and a search stops once it has its
page (and knows whether another follows): totals are then "at least", and
exact when every file was searched. What it learned of each file goes into the
search's memo (:mod:`ctxfs.tools.memo`), so the next page counts unchanged
files without reading them again (and goes on past its page through files it
knows). Lines are searched whole, however long, in batches in a worker thread
(see :mod:`ctxfs.tools.patterns`), so the event loop (other sessions) never
waits for a search; a call stops at its deadline and says so. Context lines come from
the same batches (and the end of the one before). A multiline search reads each
file whole (up to :data:`MULTILINE_MAX_CHARS`) and searches it at once. Asking
only for the files that match stops reading a file at its first match.

Where the backend has a search engine of its own (fs-local: ripgrep, confined by
Landlock), it finds the files that match and counts their matching lines; only
the files the requested page falls in are then read and searched here (a
multiline search always runs here).
"""

from __future__ import annotations

import bisect
import time
from collections import Counter, deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

import anyio.lowlevel
import anyio.to_thread
import regex

from ctxfs.core import (
    Context,
    FileKind,
    FileMatches,
    FileSearch,
    FsError,
    LineSearch,
    Stat,
    normalize_path,
    relative_to,
)
from ctxfs.tools.ignore import WalkFilter
from ctxfs.tools.memo import Known, ScanMemo
from ctxfs.tools.paging import Page
from ctxfs.tools.patterns import LinePattern, OutOfTime
from ctxfs.tools.readahead import ReadAhead
from ctxfs.tools.render import around
from ctxfs.tools.tree import Walk, all_lines, walk

__all__ = [
    "MULTILINE_MAX_CHARS",
    "FileCount",
    "Grep",
    "GrepQuery",
    "Hit",
    "Line",
    "OutputMode",
    "grep",
]

_BATCH_CHARS: Final = 1 << 18
_BATCH_LINES: Final = 4096
"""Lines are searched in batches of up to this many characters or lines, in a worker thread."""
_FIRST_BATCH_SHIFT: Final = 6
"""The first batch is 64 times smaller (a page found early stops the search early); each
batch doubles until the full size."""
MULTILINE_MAX_CHARS: Final = 64 << 20
"""The largest file (in characters) a multiline search reads; a larger one is skipped."""


SearchProgress = Callable[[int, int, int], Awaitable[None]]
"""Where a long search reports: files searched, of how many, and matching lines so far."""


class OutputMode(StrEnum):
    """What a search returns."""

    CONTENT = "content"
    """The matching lines (with context lines, when asked)."""
    FILES = "files_with_matches"
    """The paths of the files that hold a match."""
    COUNT = "count"
    """Each file that holds a match, with its number of matching lines."""


@dataclass(frozen=True, kw_only=True)
class Line:
    """A context line: its number and text (cut like a hit's)."""

    number: int
    text: str


@dataclass(kw_only=True)
class Hit:
    """One line that matched (or, multiline, the lines one match spans), around its match."""

    path: str
    line: int
    text: str
    """The line (lines), or the part of it around the match when longer than the cap."""
    column: int
    """Where the match starts in the line (0-based, in characters)."""
    text_start: int
    """Where *text* starts in the line (0 unless the line was cut)."""
    line_chars: int
    end_line: int | None = None
    """The last line a multiline match spans, when past *line*."""
    before: list[Line] = field(default_factory=list)
    after: list[Line] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        """Whether *text* is a part of the line."""
        return len(self.text) < self.line_chars


@dataclass(kw_only=True)
class FileCount:
    """A file holding matches, and how many lines (multiline: matches) match."""

    path: str
    count: int = 0


@dataclass(frozen=True, kw_only=True)
class GrepQuery:
    """One search: what to look for, where, and what to return."""

    pattern: LinePattern
    root: str = ""
    mode: OutputMode = OutputMode.CONTENT
    before: int = 0
    after: int = 0
    multiline: bool = False
    file_filter: Callable[[str], bool] | None = None
    """Which files (by path below *root*) to search; None: all."""
    names: tuple[str, ...] | None = None
    """Globs every searched file's name matches (see :meth:`GlobMatcher.names`), for an
    engine to filter with first; None: any name."""
    only: WalkFilter
    max_entries: int
    page: Page
    max_line_chars: int
    seconds: float
    memo: ScanMemo | None = None
    """What earlier pages of this search learned; it learns what this one reads."""
    progress: SearchProgress | None = None
    """Told how far the search is, after *progress_seconds* and as often after that."""
    progress_seconds: float = 1.0


@dataclass
class Grep:
    """What a search found: the requested page, and totals over everything searched."""

    hits: list[Hit] = field(default_factory=list)
    """The page of hits (content mode)."""
    files: list[FileCount] = field(default_factory=list)
    """The page of files (the other modes)."""
    total: int = 0
    """Items of the mode: matching lines (multiline: matches), or files with matches."""
    lines_matched: int = 0
    """Matching lines (multiline: matches) in all."""
    files_searched: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    """Files not searched, by the error code that stopped them (``binary_file``, ...)."""
    timed_out: bool = False
    """The call's deadline passed: the counts cover what was searched until then."""
    complete: bool = True
    """Every file was searched: the totals are exact (else they are "at least")."""
    walk: Walk = field(default_factory=Walk)


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
            found.complete = found.lines_matched < _engine_count(query) and not found.timed_out
            return found
    elif not query.multiline and (
        (accelerated := await ctx.fs.search_files(_file_search(query, root))) is not None
    ):
        return await _from_counts(ctx, query, root, accelerated)
    else:
        found.walk = await walk(ctx, root, only=query.only, max_entries=query.max_entries)
        keep = query.file_filter
        files = [
            entry
            for entry in found.walk.files
            if keep is None or keep(relative_to(entry.path, root))
        ]
    await _searched(ctx, query, found, files)
    found.complete = found.complete and not found.timed_out and not found.walk.truncated
    return found


def _engine_count(query: GrepQuery) -> int:
    """The matching lines an engine is asked for per file: the page's, and one after."""
    return query.page.first + query.page.count


async def _engine_lines(
    ctx: Context, query: GrepQuery, paths: list[str]
) -> dict[str, list[tuple[int, str]]] | None:
    """The backend engine's matching and context lines of *paths* for the page of *query*."""
    if query.multiline or query.mode is not OutputMode.CONTENT:
        return None
    flags = query.pattern.compiled.flags
    given = await ctx.fs.search_lines(
        LineSearch(
            paths=tuple(paths),
            pattern=query.pattern.compiled.pattern,
            ignore_case=bool(flags & regex.IGNORECASE),
            max_count=_engine_count(query),
            before=query.before,
            after=query.after,
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
    search = _Search(query, found, time.monotonic() + query.seconds, files=len(files))
    try:
        if query.multiline:
            await _search_whole_files(ctx, files, search)
        else:
            await _search_lines(ctx, files, search, given or {})
    except _TooSlow as slow:
        raise query.pattern.too_slow(slow.path, slow.number) from None


def _file_search(query: GrepQuery, root: str) -> FileSearch:
    """What a backend's own engine is asked for *query*."""
    flags = query.pattern.compiled.flags
    return FileSearch(
        path=root,
        pattern=query.pattern.compiled.pattern,
        ignore_case=bool(flags & regex.IGNORECASE),
        multiline=query.multiline,
        hidden=query.only.hidden,
        ignored=query.only.ignored,
        skip_dirs=query.only.skip_dirs,
        names=query.names,
        seconds=query.seconds,
    )


async def _from_counts(ctx: Context, query: GrepQuery, root: str, matches: FileMatches) -> Grep:
    """The result from a backend engine's counts per file.

    Totals come from the counts; the hits of the page are found by searching
    (through ``ctx.fs``, confined and policy-checked like any read) only the files
    the page falls in, skipping whole files before it.
    """
    keep = query.file_filter
    counts = {
        path: count
        for path, count in matches.counts.items()
        if keep is None or keep(relative_to(path, root))
    }
    ordered = sorted(counts)
    found = Grep(
        files_searched=matches.searched,
        lines_matched=sum(counts.values()),
        timed_out=not matches.complete,
        complete=matches.complete,
        skipped=Counter(matches.skipped),
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
    shifted = replace(query, page=Page(first=page.first - base, count=page.count), memo=None)
    given = await _engine_lines(ctx, shifted, wanted)
    local = Grep()
    files = [Stat(path=path, kind=FileKind.FILE) for path in wanted]
    await _searched(ctx, shifted, local, files, given=given)
    found.hits, found.skipped = local.hits, found.skipped + local.skipped
    found.timed_out = found.timed_out or local.timed_out
    return found


async def _search_lines(
    ctx: Context, files: list[Stat], search: _Search, given: dict[str, list[tuple[int, str]]]
) -> None:
    """Feed the lines of each file to *search*, until the end, its page, or its deadline."""
    width = ctx.mount.backend.capabilities.concurrent_reads
    wanted = (lambda entry: entry.path not in given and search.unknown(entry)) if given else None
    async with ReadAhead(ctx, files, width=width, wanted=wanted or search.unknown) as ahead:
        await _search_lines_of(ctx, files, search, ahead, given)


async def _search_lines_of(
    ctx: Context,
    files: list[Stat],
    search: _Search,
    ahead: ReadAhead,
    given: dict[str, list[tuple[int, str]]],
) -> None:
    for index, entry in enumerate(files):
        # Small files are read without suspending: let other tasks run, and a cancel land.
        await anyio.lowlevel.checkpoint()
        if search.out_of_time():
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
                ctx.fs.lines(path, max_line_chars=None)
                if known_lines is None
                else _each(known_lines)
            )
            async with aclosing(numbered) as lines:
                async for number, line in lines:
                    if search.add(path, number, line):
                        start, flushed = 0, True
                        if not await search.flush():
                            return
                        if search.settled(path):
                            break
                        if search.page_done():
                            search.found.complete = False
                            return
        except FsError as error:  # this file cannot be searched (its lines not yet searched go)
            search.drop(start)
            search.found.skipped[_reason(error)] += 1
            if not flushed:
                search.learn(entry, skipped=_reason(error))
            continue
        search.read_whole(entry)
    await search.flush()


async def _each(lines: list[tuple[int, str]]) -> AsyncGenerator[tuple[int, str]]:
    """Numbered *lines*, as ``ctx.fs.lines`` gives them."""
    for number, line in lines:
        yield number, line


async def _search_whole_files(ctx: Context, files: list[Stat], search: _Search) -> None:
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
            search.found.skipped[_reason(error)] += 1
            search.learn(entry, skipped=_reason(error))
            continue
        if not await search.whole(entry.path, lines):
            return
        await search.report()
        search.learn(entry, count=search.counts.pop(entry.path, 0))


def _reason(error: FsError) -> str:
    """Why a file was skipped: the error's code, or ``hard_linked`` for a file with other names."""
    return "hard_linked" if error.details.get("hard_links") else str(error.code)


class _TooSlow(Exception):
    """A line took longer than the pattern's limit: no ``FsError``, no file is at fault."""

    def __init__(self, path: str, number: int) -> None:
        super().__init__(path, number)
        self.path, self.number = path, number


class _Search:
    """Lines gathered into batches, each searched off the event loop, and what they hold."""

    def __init__(self, query: GrepQuery, found: Grep, deadline: float, *, files: int) -> None:
        self.query, self.found, self.deadline, self.files = query, found, deadline, files
        self.next_report = time.monotonic() + query.progress_seconds
        self.batch: list[tuple[str, int, str]] = []
        self.chars = 0
        self.shift = _FIRST_BATCH_SHIFT
        self.files_read: list[Stat] = []
        """Files read whole into the batch, not yet searched to their end."""
        self.counts: Counter[str] = Counter()
        """Matches counted in files not yet searched to their end."""
        self.tail: deque[tuple[str, int, str]] = deque(maxlen=query.before)
        """The last lines of the batches before, for the context of the next one's hits."""
        self.waiting: list[tuple[Hit, int]] = []
        """Hits of the last batch still owed after-context lines, and how many."""
        self.current: FileCount | None = None
        """The file whose matches are being counted (files and count modes)."""

    def add(self, path: str, number: int, line: str) -> bool:
        """Add a line; whether the batch is full."""
        self.batch.append((path, number, line))
        self.chars += len(line)
        return self._full()

    def _full(self) -> bool:
        return (
            self.chars >= _BATCH_CHARS >> self.shift
            or len(self.batch) >= _BATCH_LINES >> self.shift
        )

    def drop(self, start: int) -> None:
        """Forget the lines from *start* on (a file that failed part way)."""
        del self.batch[start:]
        self.chars = sum(len(line) for _, _, line in self.batch)

    def read_whole(self, entry: Stat) -> None:
        """*entry*'s lines are all in the batch (or searched): known once it is searched."""
        self.files_read.append(entry)

    def unknown(self, entry: Stat) -> bool:
        """Whether nothing is known of *entry* (it will be read, unless the search stops)."""
        memo = self.query.memo
        return memo is None or memo.known(entry) is None

    async def to_read(self, entry: Stat) -> bool | None:
        """Whether *entry* is to be read, or None to stop here.

        It is not read when counted from what an earlier page learned; the search
        stops at it when the page is done and it is unknown.
        """
        memo = self.query.memo
        known = None if memo is None else memo.known(entry)
        if known is None:
            if self.page_done():
                self.found.complete = False
                return None
            return True
        if not await self.flush():  # the totals so far: does the page need this file?
            return False  # out of time: the caller stops
        return not self._skip(entry, known)

    def learn(self, entry: Stat, *, count: int = 0, skipped: str | None = None) -> None:
        """Remember *entry* as searched to its end."""
        if self.query.memo is not None:
            self.query.memo.learn(entry, count=count, skipped=skipped)

    def page_done(self) -> bool:
        """Whether the page is complete and the item after it found: the rest can wait.

        The hits of the page must have their after-context lines first.
        """
        return (
            self.found.total >= self.query.page.first + self.query.page.count and not self.waiting
        )

    def _skip(self, entry: Stat, known: Known) -> bool:
        """Count *entry* from what is *known* of it, unless the page needs its lines.

        Whether it was counted so; call with the batch searched.
        """
        found, query, page = self.found, self.query, self.query.page
        if known.skipped is not None:
            found.skipped[known.skipped] += 1
            return True
        if query.mode is OutputMode.CONTENT:
            if (
                known.count
                and found.total < page.first + page.count - 1
                and (found.total + known.count >= page.first)
            ):
                return False  # the page holds some of its lines
            found.total += known.count
        elif known.count:
            found.total += 1
            if page.holds(found.total):
                found.files.append(FileCount(path=entry.path, count=known.count))
        found.lines_matched += known.count
        found.files_searched += 1
        return True

    def settled(self, path: str) -> bool:
        """Whether *path* needs no more reading: its first match is all that files mode needs."""
        current = self.current
        return self.query.mode is OutputMode.FILES and current is not None and current.path == path

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
        batch, pattern = self.batch, self.query.pattern
        searched = await anyio.to_thread.run_sync(pattern.search_lines, batch, self.deadline)
        self._owed_after(batch)
        for index, column in searched.hits:
            path, number, line = batch[index]
            if self._counted(path):
                self.found.hits.append(self._hit(path, number, line, column))
                self._context(self.found.hits[-1], batch, index)
        if searched.stopped_at is not None:
            path, number, _ = batch[searched.stopped_at]
            if not searched.whole_call:
                raise _TooSlow(path, number)
            self.found.timed_out = True
            return False
        self.found.files_searched += len(self.files_read)
        for entry in self.files_read:
            self.learn(entry, count=self.counts.pop(entry.path, 0))
        self.tail.extend(batch[-self.query.before :] if self.query.before else ())
        if self._full():  # the next batch is twice as large (a short one, flushed early: same)
            self.shift = max(0, self.shift - 1)
        self.batch, self.chars, self.files_read = [], 0, []
        await self.report()
        return not self.out_of_time()

    async def report(self) -> None:
        """Tell the caller how far the search is, if it asked and it is time."""
        progress, now = self.query.progress, time.monotonic()
        if progress is not None and now >= self.next_report:
            self.next_report = now + self.query.progress_seconds
            await progress(self.found.files_searched, self.files, self.found.lines_matched)

    async def whole(self, path: str, lines: list[str]) -> bool:
        """Search one file's whole text (multiline); whether there is time to go on."""
        text = "\n".join(lines)
        pattern = self.query.pattern
        try:
            spans = await anyio.to_thread.run_sync(pattern.find_all, text, self.deadline)
        except OutOfTime as stopped:
            if not stopped.whole_call:
                raise _TooSlow(path, 1) from None
            self.found.timed_out = True
            return False
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        numbered = [(path, index + 1, line) for index, line in enumerate(lines)] if spans else []
        for begin, end in spans:
            first = bisect.bisect_right(starts, begin) - 1
            if not self._counted(path):
                continue
            last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
            shown = "\n".join(lines[first : last + 1])
            hit = self._hit(path, first + 1, shown, begin - starts[first])
            hit.end_line = last + 1 if last > first else None
            self._context(hit, numbered, first, last=last)
            self.found.hits.append(hit)
        self.found.files_searched += 1
        return not self.out_of_time()

    def _counted(self, path: str) -> bool:
        """Count one match in *path*; whether it is a hit of the page (content mode)."""
        found, query = self.found, self.query
        found.lines_matched += 1
        self.counts[path] += 1
        if query.mode is OutputMode.CONTENT:
            found.total += 1
            return query.page.holds(found.total)
        if self.current is None or self.current.path != path:
            found.total += 1
            self.current = FileCount(path=path)
            if query.page.holds(found.total):
                found.files.append(self.current)
        self.current.count += 1
        return False

    def _hit(self, path: str, number: int, line: str, column: int) -> Hit:
        text, text_start = around(line, column, self.query.max_line_chars)
        return Hit(
            path=path,
            line=number,
            text=text,
            column=column,
            text_start=text_start,
            line_chars=len(line),
        )

    def _line(self, number: int, line: str) -> Line:
        return Line(number=number, text=around(line, 0, self.query.max_line_chars)[0])

    def _context(
        self, hit: Hit, lines: list[tuple[str, int, str]], index: int, *, last: int | None = None
    ) -> None:
        """Give *hit* (at ``lines[index]``) its context lines: from *lines*, the tail before.

        The lines may have gaps (an engine's matching and context lines only):
        context is what lies within reach by line number.
        """
        before, after = self.query.before, self.query.after
        reach = hit.line - before

        def near(item: tuple[str, int, str]) -> bool:
            return item[0] == hit.path and item[1] >= reach

        earlier = [item for item in lines[max(0, index - before) : index] if near(item)]
        if len(earlier) < before and index - before < 0:
            wanted = before - len(earlier)
            first = earlier[0][1] if earlier else hit.line
            earlier = [
                item for item in list(self.tail)[-wanted:] if near(item) and item[1] < first
            ] + earlier  # fmt: skip
        hit.before = [self._line(number, line) for _, number, line in earlier]
        end = index if last is None else last
        until = lines[end][1] + after
        later = [
            item
            for item in lines[end + 1 : end + 1 + after]
            if item[0] == hit.path and item[1] <= until
        ]
        hit.after = [self._line(number, line) for _, number, line in later]
        owed = after - len(later)
        if owed > 0 and end + 1 + after > len(lines) and last is None:
            self.waiting.append((hit, owed))

    def _owed_after(self, batch: list[tuple[str, int, str]]) -> None:
        """Give the hits of the batch before the after-context lines that start this one."""
        for hit, owed in self.waiting:
            next_number = (hit.after[-1].number if hit.after else hit.line) + 1
            for path, number, line in batch[:owed]:
                if path != hit.path or number != next_number:
                    break
                hit.after.append(self._line(number, line))
                next_number += 1
        self.waiting = []
