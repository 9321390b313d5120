"""Lines searched in batches off the event loop, counted against the page, with context.

:class:`Scan` batches the lines of the files it is fed (in path order),
searches each batch in a worker thread, counts the matches against the page and
gives the page's hits their context lines. Batches start small and double, so a
page found early stops the search early. Each file searched to its end goes
into the search's memo; a file the memo knows is counted without being read.
"""

from __future__ import annotations

import bisect
import time
from collections import Counter, deque
from typing import Final

import anyio.to_thread

from ctxfs.core import CutLine, Stat
from ctxfs.tools.builtin.grep.memo import Known
from ctxfs.tools.builtin.grep.patterns import OutOfTime
from ctxfs.tools.builtin.grep.query import (
    FileCount,
    Grep,
    GrepQuery,
    Hit,
    Line,
    OutputMode,
    SearchStatus,
)
from ctxfs.tools.results import around

__all__ = ["Scan", "TooSlow"]

_BATCH_CHARS: Final = 1 << 18
_BATCH_LINES: Final = 4096
"""Lines are searched in batches of up to this many characters or lines, in a worker thread."""
_FIRST_BATCH_SHIFT: Final = 6
"""The first batch is 64 times smaller (a page found early stops the search early); each
batch doubles until the full size."""


class TooSlow(Exception):
    """A line took longer than the pattern's limit: no ``FsError``, no file is at fault."""

    def __init__(self, path: str, number: int) -> None:
        super().__init__(path, number)
        self.path, self.number = path, number


class Scan:
    """Lines gathered into batches, each searched off the event loop, and what they hold."""

    def __init__(self, query: GrepQuery, found: Grep, deadline: float, *, files: int) -> None:
        self.query, self.found, self.deadline, self.files = query, found, deadline, files
        self.next_report = time.monotonic() + query.progress_seconds
        self.batch: list[tuple[str, int, str]] = []
        self.chars = 0
        self.shift = _FIRST_BATCH_SHIFT
        self.files_read: list[Stat] = []
        """Files read whole into the batch, not yet searched to their end."""
        self.stopped: set[str] = set()
        """Files :meth:`stop` counted as searched."""
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

    def _known(self, entry: Stat) -> Known | None:
        """What an earlier page learned of *entry*, if it has not changed since."""
        memo = self.query.memo
        return None if memo is None else memo.known(entry)

    def unknown(self, entry: Stat) -> bool:
        """Whether nothing is known of *entry* (it will be read, unless the search stops)."""
        return self._known(entry) is None

    async def to_read(self, entry: Stat) -> bool | None:
        """Whether *entry* is to be read, or None to stop here.

        It is not read when counted from what an earlier page learned; the search
        stops at it when the page is done and it is unknown.
        """
        known = self._known(entry)
        if known is None:
            if self.page_done():
                self.stop()
                self.found.complete = False
                return None
            return True
        if not await self.flush():  # the totals so far: does the page need this file?
            return False  # out of time: the caller stops
        return not self._skip(entry, known)

    def skipped(self, entry: Stat, reason: str, *, remember: bool = True) -> None:
        """Count *entry* as not searched, for *reason*; *remember* it so for the next page."""
        self.found.skipped[reason] += 1
        if remember:
            self._learn(entry, skipped=reason)

    def _learn(self, entry: Stat, *, count: int = 0, skipped: str | None = None) -> None:
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

    def stop(self, *, searched: int = 0, partly: str | None = None) -> None:
        """Count as searched, each once, the files a search that ends here has searched.

        Those read whole whose lines the batch does not hold unsearched (its first *searched*
        lines were), and *partly*, one searched in part.
        """
        pending = {line[0] for line in self.batch[searched:]}
        done = {entry.path for entry in self.files_read if entry.path not in pending}
        done = (done | ({partly} if partly is not None else set())) - self.stopped
        self.stopped |= done
        self.found.files_searched += len(done)
        self.files_read = [entry for entry in self.files_read if entry.path in pending]

    def out_of_time(self) -> bool:
        """Whether the deadline has passed (the result then says so)."""
        if time.monotonic() > self.deadline:
            self.found.timed_out = True
        return self.found.timed_out

    async def flush(self) -> bool:
        """Search the batch in a worker thread; whether there is time to go on.

        Raises:
            TooSlow: A line took longer than the pattern's limit.

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
                raise TooSlow(path, number)
            self.found.timed_out = True
            self.stop(searched=searched.stopped_at, partly=path if self.counts[path] else None)
            return False
        self.found.files_searched += len(self.files_read)
        for entry in self.files_read:
            self._learn(entry, count=self.counts.pop(entry.path, 0))
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
            self.next_report = now + self.query.progress_gap
            found = self.found
            await progress(
                SearchStatus(
                    searched=found.files_searched,
                    files=self.files,
                    matching_lines=found.lines_matched,
                )
            )

    async def whole(self, entry: Stat, lines: list[str]) -> bool:
        """Search one file's whole text (multiline); whether there is time to go on."""
        path, text = entry.path, "\n".join(lines)
        pattern = self.query.pattern
        try:
            spans = await anyio.to_thread.run_sync(pattern.find_all, text, self.deadline)
        except OutOfTime as stopped:
            if not stopped.whole_call:
                raise TooSlow(path, 1) from None
            self.found.timed_out = True
            return False
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        numbered = [(path, index + 1, line) for index, line in enumerate(lines)] if spans else []
        for begin, end in spans if lines else ():  # (an empty file has no line to match in)
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
        self._learn(entry, count=self.counts.pop(path, 0))
        await self.report()
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
            line_chars=line.length if isinstance(line, CutLine) else len(line),
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
