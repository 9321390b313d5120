"""Reading a window of lines from a stream, in memory bounded by the window.

The file streams through once: lines outside the window are only counted; lines
inside it are decoded, cut at the per-line cap and charged against the output budget.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import AnyStr, Final, Generic

import anyio.to_thread

from ctxfs.core.backend import ReadStream
from ctxfs.core.errors import EncodingError, InvalidArgument
from ctxfs.core.text.changes import display
from ctxfs.core.text.encodings import KnownEncodings, TextEncoding, detect_encoding
from ctxfs.core.text.line_numbers import format_line_number
from ctxfs.core.text.lines import BYTE_ENDINGS, TEXT_ENDINGS, Endings, count_terminators
from ctxfs.core.text.options import TextOptions

__all__ = ["Window", "iter_lines", "read_window", "truncation_marker"]

_UTF8_MAX_BYTES: Final = 4


def truncation_marker(size: int, unit: str) -> str:
    """The visible mark at the end of a line cut by the per-line cap."""
    return f" … [line cut here; it holds {size} {unit}]"


@dataclass(frozen=True, kw_only=True)
class Window:
    """Lines ``offset .. offset + returned_lines - 1`` of a text file, and what surrounds them."""

    text: str
    """The lines, each followed by ``\\n`` if it ends with a line break in the file."""
    offset: int
    returned_lines: int
    total_lines: int
    next_offset: int | None
    truncated_lines: tuple[int, ...]
    """Numbers of the lines cut by the per-line cap."""
    output_capped: bool
    """Whether the output budget ended the window before the line limit."""
    encoding: str
    """The encoding the text was decoded with, e.g. ``"utf-8"`` or ``"utf-16-le with BOM"``."""
    misread: bool = False
    """The window holds bytes the encoding chosen from the file's start does not."""
    decoded_as: TextEncoding | None = None
    """The encoding itself (:attr:`encoding` is its label)."""

    @property
    def complete(self) -> bool:
        """Whether the window shows the whole file, uncut."""
        return self.total_lines == 0 or (
            self.offset == 1
            and self.returned_lines == self.total_lines
            and not self.truncated_lines
        )

    @property
    def seen_lines(self) -> tuple[tuple[int, int], ...]:
        """The ranges of lines (1-based, inclusive) the window shows uncut."""
        ranges, start = [], self.offset
        for cut in (*sorted(self.truncated_lines), self.offset + self.returned_lines):
            if start < cut:
                ranges.append((start, cut - 1))
            start = cut + 1
        return tuple(ranges)


async def read_window(
    stream: ReadStream,
    *,
    offset: int,
    limit: int | None,
    options: TextOptions,
    path: str,
    known: KnownEncodings | None = None,
    decoded_as: TextEncoding | None = None,
) -> Window:
    """Read lines ``offset .. offset + limit - 1`` (1-based) of the text in *stream*.

    With *known*, a whole file whose bytes alone tell its encoding
    (:attr:`TextEncoding.told_by_bytes`) is detected once per version. With
    *decoded_as* (judged before), nothing is detected.

    Raises:
        InvalidArgument: *offset* or *limit* is below 1.
        BinaryFile: The content is binary.
        EncodingError: The content is text in no encoding ctxfs can round-trip.

    """
    limit = options.default_limit if limit is None else limit
    if offset < 1:
        raise InvalidArgument(f"offset must be 1 or more, got {offset}", path=path)
    if limit < 1:
        raise InvalidArgument(f"limit must be 1 or more, got {limit}", path=path)
    chunks, encoding, head, ended = await _detect(stream, options, path, known, decoded_as)
    whole = _whole_window(head, encoding, limit, options) if ended and offset == 1 else None
    if whole is not None:
        return whole
    if encoding.ascii_compatible:
        byte_scanner = _Scanner(BYTE_ENDINGS, encoding, offset, limit, options, unit="bytes")
        byte_scanner.feed(head)
        async for chunk in chunks:
            byte_scanner.feed(chunk)
        return byte_scanner.finish()
    text_scanner = _Scanner(TEXT_ENDINGS, encoding, offset, limit, options, unit="characters")
    async with aclosing(_decoded(chunks, head, ended, encoding, path)) as pieces:
        async for piece in pieces:
            text_scanner.feed(piece)
    return text_scanner.finish()


async def iter_lines(
    stream: ReadStream, *, options: TextOptions, path: str, max_line_chars: int | None
) -> AsyncGenerator[tuple[int, str]]:
    """Yield ``(number, line)`` for every line of the text in *stream*, endings removed.

    Lines longer than *max_line_chars* yield only their first *max_line_chars*
    characters (memory bounded by the chunk size); with None, whole lines. Invalid
    bytes show as U+FFFD.

    Raises:
        BinaryFile, EncodingError: As for :func:`read_window`.

    """
    chunks, encoding, head, ended = await _detect(stream, options, path)
    parts: list[str] = []  # the line so far, in pieces: joined once it ends
    held, size, number, skipping = "", 0, 1, False  # skipping: the rest of an over-long line

    def line() -> str:
        return display("".join(parts))

    def room() -> int | None:  # how much more of the line is kept (None: all of it)
        return None if max_line_chars is None else max_line_chars - size

    # closed too when our caller stops early
    async with aclosing(_decoded(chunks, head, ended, encoding, path)) as decoded:
        async for piece in decoded:
            text = held + piece
            held = "\r" if text.endswith("\r") else ""  # may be the first half of a \r\n
            body = text[: len(text) - len(held)]
            start = 0
            for match in TEXT_ENDINGS.splitter.finditer(body):
                if not skipping:
                    parts.append(body[start : match.start()][: room()])
                    yield number, line()
                parts, size, skipping = [], 0, False
                start, number = match.end(), number + 1
            rest = body[start:]
            if skipping or not rest:
                continue
            if max_line_chars is not None and size + len(rest) > max_line_chars:
                parts.append(rest[: room()])
                yield number, line()
                parts, size, skipping = [], 0, True
            else:
                parts.append(rest)
                size += len(rest)
    if (held or parts) and not skipping:
        yield number, line()


async def _decoded(
    chunks: AsyncIterator[bytes], head: bytes, ended: bool, encoding: TextEncoding, path: str
) -> AsyncGenerator[str]:
    """The text of *head* and then *chunks*; bytes the encoding refuses raise ``EncodingError``."""
    decoder = codecs.getincrementaldecoder(encoding.codec)("surrogateescape")

    def decode(chunk: bytes, final: bool) -> str:
        try:
            return decoder.decode(chunk, final=final)
        except UnicodeDecodeError as error:
            raise EncodingError(
                f"{path} is not valid {encoding.codec} past its start: {error.reason}",
                path=path,
                hint="The file is damaged or not text; it cannot be read as text.",
            ) from None

    yield decode(head, ended)
    async for chunk in chunks:
        yield decode(chunk, False)
    yield decode(b"", True)


_DETECT_INLINE_BYTES: Final = 1 << 16
"""Leading bytes up to which the encoding is chosen on the event loop (a few milliseconds)."""


async def _detect(
    stream: ReadStream,
    options: TextOptions,
    path: str,
    known: KnownEncodings | None = None,
    decoded_as: TextEncoding | None = None,
) -> tuple[AsyncIterator[bytes], TextEncoding, bytes, bool]:
    """Read enough of *stream* to choose the encoding; return the rest and what was read."""
    chunks = aiter(stream)
    head, ended = b"", False
    while len(head) < options.detect_bytes:
        chunk = await anext(chunks, None)
        if chunk is None:
            ended = True
            break
        head += chunk
    recorded = known.get(stream.version) if known is not None and ended else None
    if decoded_as is not None and head.startswith(decoded_as.bom):
        return chunks, decoded_as, head[len(decoded_as.bom) :], ended
    if recorded is not None and recorded.told_by_bytes:
        return chunks, recorded, head[len(recorded.bom) :], ended
    detect = functools.partial(detect_encoding, head, options, path=path, complete=ended)
    if len(head) > _DETECT_INLINE_BYTES and not head.isascii():
        encoding = await anyio.to_thread.run_sync(detect)  # tens of milliseconds: off the loop
    else:
        encoding = detect()
    if known is not None and ended and encoding.told_by_bytes:
        known.remember(stream.version, encoding)
    return chunks, encoding, head[len(encoding.bom) :], ended


def _whole_window(
    data: bytes, encoding: TextEncoding, limit: int, options: TextOptions
) -> Window | None:
    """The window of a whole file with nothing to cut, cheaply; None if the scanner is needed."""
    if not data or not encoding.ascii_compatible or encoding.keeps_invalid_bytes or b"\r" in data:
        return None
    lines = data.split(b"\n")
    total = len(lines) - 1 if not lines[-1] else len(lines)
    if total > limit or max(map(len, lines)) > options.max_line_chars:
        return None  # (a line's bytes are at least its characters)
    try:
        text = data.decode(encoding.codec)
    except UnicodeDecodeError:
        return None
    if len(text) + _prefix_chars(1, total) > options.max_output_chars:
        return None
    return Window(
        text=text,
        offset=1,
        returned_lines=total,
        total_lines=total,
        next_offset=None,
        truncated_lines=(),
        output_capped=False,
        encoding=encoding.label,
        decoded_as=encoding,
    )


class _Scanner(Generic[AnyStr]):
    """Consumes the content piece by piece; counts lines outside the window, keeps its units.

    A line over the per-line cap keeps its first ``unit_cap`` units; collection
    stops once the kept units must exceed the output budget.
    """

    def __init__(
        self,
        endings: Endings[AnyStr],
        encoding: TextEncoding,
        offset: int,
        limit: int,
        options: TextOptions,
        *,
        unit: str,
    ) -> None:
        self.endings: Endings[AnyStr] = endings
        self.encoding, self.options = encoding, options
        self.offset, self.limit = offset, limit
        self.unit = unit
        self.unit_cap = options.max_line_chars * (_UTF8_MAX_BYTES if unit == "bytes" else 1)
        self.unit_budget = options.max_output_chars * (_UTF8_MAX_BYTES if unit == "bytes" else 1)
        self.line = 1  # number of the line being read
        self.after_cr = False  # the previous piece ended with \r
        self.ends_with_break = True  # nothing read yet, or the last unit was a line break
        self.collecting = False
        self.done = False
        self.kept: list[AnyStr] = []  # the window's units so far
        self.kept_size = 0
        self.kept_lines = 0  # complete lines in self.kept
        self.tail_kept = 0  # units of the unfinished last line held in self.kept
        self.tail_size = 0  # units of the unfinished last line in all
        self.cut_sizes: dict[int, int] = {}  # line number -> full size, for lines cut while kept
        self.escaped = False  # the window's text carries invalid bytes as escapes
        self.escape_shown = False  # ... and some are shown (not all cut off a long line's end)

    def feed(self, piece: AnyStr) -> None:
        if not piece:
            return
        position = 1 if self.after_cr and piece.startswith(self.endings.lf) else 0
        if position and self.collecting and not self.done and self._kept_cr():
            self._keep(piece[:position])  # (the CRLF's LF: the kept text folds it with its CR)
        if self.done:
            self.line += count_terminators(piece, self.endings, after_cr=self.after_cr)
        elif position < len(piece):
            if not self.collecting:
                position = self._skip_to_window(piece, position)
            if self.collecting:
                self._collect(piece, position)
        self.after_cr = piece.endswith(self.endings.cr)
        self.ends_with_break = piece.endswith((self.endings.lf, self.endings.cr))

    def _skip_to_window(self, piece: AnyStr, position: int) -> int:
        """Count lines until the window's first line starts; return where it starts."""
        breaks = count_terminators(piece[position:], self.endings, after_cr=False)
        if self.line + breaks < self.offset:
            self.line += breaks
            return len(piece)
        search = self.endings.splitter.search
        while self.line < self.offset:
            match = search(piece, position)
            assert match is not None  # counted above
            position = match.end()
            self.line += 1
        self.collecting = True
        return position

    def _collect(self, piece: AnyStr, position: int) -> None:
        """Keep the window's units from *piece*, stopping where the window ends."""
        segment = piece[position:] if position else piece
        wanted = self.limit - self.kept_lines
        breaks = count_terminators(segment, self.endings, after_cr=False)
        beyond = 0  # breaks after the window's end, only counted
        if breaks >= wanted:  # the window ends in this segment: walk to its last break
            end, search = 0, self.endings.splitter.search
            for _ in range(wanted):
                match = search(segment, end)
                assert match is not None  # counted above
                end = match.end()
            segment, breaks, beyond = segment[:end], wanted, breaks - wanted
            self.done = True
        if not breaks:
            self._extend_tail(segment)
            return
        first = self.endings.splitter.search(segment)
        assert first is not None
        last = max(segment.rfind(self.endings.lf), segment.rfind(self.endings.cr)) + 1
        self._extend_tail(segment[: first.start()])
        if self.tail_size > self.unit_cap:
            self.cut_sizes[self.line] = self.tail_size
        self._keep(segment[first.start() : last])
        self.kept_lines += breaks
        self.line += breaks + beyond
        self.tail_kept = self.tail_size = 0
        self._extend_tail(segment[last:])
        if self.kept_size > self.unit_budget + self.unit_cap:
            self.done = True  # the budget must end the window inside what is kept

    def _extend_tail(self, units: AnyStr) -> None:
        """Add units of the unfinished last line, keeping at most ``unit_cap`` of them."""
        room = self.unit_cap - self.tail_kept
        if room > 0 and units:
            self._keep(units[:room])
            self.tail_kept += min(room, len(units))
        self.tail_size += len(units)

    def _kept_cr(self) -> bool:
        """Whether the last unit kept is a CR (the piece that ended with it was collected)."""
        return bool(self.kept) and self.kept[-1].endswith(self.endings.cr)

    def _keep(self, units: AnyStr) -> None:
        self.kept.append(units)
        self.kept_size += len(units)

    def finish(self) -> Window:
        unterminated = not self.ends_with_break
        total = self.line - (0 if unterminated else 1)
        text, self.escaped = self._decode(self.endings.empty.join(self.kept))
        if "\r" in text:
            text = TEXT_ENDINGS.fold(text)
        lines = text.split("\n")
        complete = lines[: self.kept_lines]
        if not self.done and self.collecting and unterminated and self.tail_size:
            if self.tail_size > self.unit_cap:
                self.cut_sizes[self.offset + self.kept_lines] = self.tail_size
            complete.append(lines[self.kept_lines])
            last_terminated = False
        else:
            last_terminated = True
        shown, count, truncated, capped = self._fit(complete, last_terminated=last_terminated)
        misread = self.escape_shown and not self.encoding.keeps_invalid_bytes
        following = self.offset + count
        next_offset = following if capped or (count and following <= total) else None
        return Window(
            text=shown,
            offset=self.offset,
            returned_lines=count,
            total_lines=total,
            next_offset=next_offset,
            truncated_lines=tuple(truncated),
            output_capped=capped,
            encoding=self.encoding.label + (", invalid bytes shown as \ufffd" if misread else ""),
            misread=misread,
            decoded_as=self.encoding,
        )

    def _fit(self, lines: list[str], *, last_terminated: bool) -> tuple[str, int, list[int], bool]:
        """Cut and mark long lines, stop at the output budget: text, count, cut lines, capped."""
        cap, budget = self.options.max_line_chars, self.options.max_output_chars
        joined = "\n".join(lines) + ("\n" if lines and last_terminated else "")
        escaped = self.escaped
        if not (self.cut_sizes or escaped) and max(map(len, lines), default=0) <= cap:
            cost = len(joined) + _prefix_chars(self.offset, len(lines))
            if cost <= budget:  # the common case: nothing to cut, mark or drop
                return joined, len(lines), [], False
        shown: list[str] = []
        truncated: list[int] = []
        for index, line in enumerate(lines):
            number, content = self.offset + index, line
            size = self.cut_sizes.get(number)
            if size is not None or len(line) > cap:
                if size is None:
                    size = self._size(line)
                content = line[:cap] + truncation_marker(size, self.unit)
                truncated.append(number)
            if escaped and _ESCAPE.search(content):  # (a cut can split a character: not shown)
                self.escape_shown = True
                content = display(content)
            if index + 1 < len(lines) or last_terminated:
                content += "\n"
            cost = len(content) + len(format_line_number(number))
            if cost > budget and shown:
                if truncated and truncated[-1] == number:
                    truncated.pop()
                return "".join(shown), len(shown), truncated, True
            budget -= cost
            shown.append(content)
        return "".join(shown), len(shown), truncated, False

    def _decode(self, units: AnyStr) -> tuple[str, bool]:
        """The window's text, and whether it carries escaped invalid bytes."""
        if isinstance(units, str):
            return units, _ESCAPE.search(units) is not None
        try:
            return units.decode(self.encoding.codec), False
        except UnicodeDecodeError:
            return units.decode(self.encoding.codec, "surrogateescape"), True

    def _size(self, text: str) -> int:
        """The size of *text* in this scanner's units."""
        if self.unit == "characters":
            return len(text)
        return len(text.encode(self.encoding.codec, "surrogateescape"))


def _prefix_chars(first: int, count: int) -> int:
    """Characters of the line-number prefixes of lines ``first .. first + count - 1``."""
    total, number, end = 0, first, first + count
    while number < end:
        width = len(format_line_number(number))
        same_width_end = max(min(end, 10 ** (width - 1)), number + 1)  # the prefix grows there
        total += width * (same_width_end - number)
        number = same_width_end
    return total


_ESCAPE: Final = re.compile("[\udc80-\udcff]")
