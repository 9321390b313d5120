r"""Reading a window of lines from a stream, in memory bounded by the window.

The whole file streams through once: lines before and after the window are
only counted (on bytes, for every encoding where ``\r`` and ``\n`` bytes are
always line endings), lines inside it are decoded, cut at the per-line cap and
charged against the output budget. The result still knows the total line count
and, from the stream, the version of the whole file.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import AnyStr, Final, Generic

from ctxfs.core.backend import ReadStream
from ctxfs.core.errors import InvalidArgument
from ctxfs.core.text.document import display
from ctxfs.core.text.encodings import TextEncoding, detect_encoding
from ctxfs.core.text.lines import BYTE_ENDINGS, TEXT_ENDINGS, Endings, count_terminators
from ctxfs.core.text.options import TextOptions, format_line_number

__all__ = ["Window", "read_window", "truncation_marker"]

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

    @property
    def complete(self) -> bool:
        """Whether the window shows the whole file, uncut."""
        return self.total_lines == 0 or (
            self.offset == 1
            and self.returned_lines == self.total_lines
            and not self.truncated_lines
        )


async def read_window(
    stream: ReadStream, *, offset: int, limit: int | None, options: TextOptions, path: str
) -> Window:
    """Read lines ``offset .. offset + limit - 1`` (1-based) of the text in *stream*.

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
    chunks = aiter(stream)
    head, ended = b"", False
    while len(head) < options.detect_bytes:
        chunk = await anext(chunks, None)
        if chunk is None:
            ended = True
            break
        head += chunk
    encoding = detect_encoding(head, options, path=path, complete=ended)
    head = head[len(encoding.bom) :]
    if encoding.ascii_compatible:
        byte_scanner = _Scanner(BYTE_ENDINGS, encoding, offset, limit, options, unit="bytes")
        byte_scanner.feed(head)
        async for chunk in chunks:
            byte_scanner.feed(chunk)
        return byte_scanner.finish()
    decoder = codecs.getincrementaldecoder(encoding.codec)("surrogateescape")
    text_scanner = _Scanner(TEXT_ENDINGS, encoding, offset, limit, options, unit="characters")
    text_scanner.feed(decoder.decode(head, final=ended))
    async for chunk in chunks:
        text_scanner.feed(decoder.decode(chunk))
    text_scanner.feed(decoder.decode(b"", final=True))
    return text_scanner.finish()


class _Scanner(Generic[AnyStr]):
    """Consumes the content piece by piece; keeps only the window."""

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
        self.offset, self.last = offset, offset + limit - 1
        self.unit = unit
        self.unit_cap = options.max_line_chars * (_UTF8_MAX_BYTES if unit == "bytes" else 1)
        self.line = 1  # number of the line being read
        self.after_cr = False  # the previous piece ended with \r
        self.ends_with_break = True  # nothing read yet, or the last unit was a line break
        self.current: list[AnyStr] = []  # the window line being read, up to unit_cap units
        self.current_size = 0  # units of the window line being read
        self.shown: list[str] = []
        self.truncated: list[int] = []
        self.budget = options.max_output_chars
        self.done = False  # the window is complete; only count from here
        self.capped = False

    def feed(self, piece: AnyStr) -> None:
        if not piece:
            return
        position = 0
        if self.after_cr and piece.startswith(self.endings.lf):
            position = 1  # the second half of a \r\n split between pieces
        if not self.done and self.line + self._breaks(piece, position) < self.offset:
            self.line += self._breaks(piece, position)  # the window starts in a later piece
        elif not self.done:
            position = self._scan(piece, position)
            if self.done:
                self.line += count_terminators(piece[position:], self.endings, after_cr=False)
        else:
            self.line += self._breaks(piece, position)
        self.after_cr = piece.endswith(self.endings.cr)
        self.ends_with_break = piece.endswith((self.endings.lf, self.endings.cr))

    def _breaks(self, piece: AnyStr, start: int) -> int:
        return count_terminators(piece[start:], self.endings, after_cr=False)

    def _scan(self, piece: AnyStr, position: int) -> int:
        """Walk line by line until the window is done; return where walking stopped."""
        splitter = self.endings.splitter
        while not self.done:
            match = splitter.search(piece, position)
            if match is None:
                self._extend(piece[position:])
                return len(piece)
            self._extend(piece[position : match.start()])
            self._end_line()
            position = match.end()
        return position

    def _extend(self, units: AnyStr) -> None:
        if self.offset <= self.line <= self.last and units:
            room = self.unit_cap - min(self.current_size, self.unit_cap)
            if room:
                self.current.append(units[:room])
            self.current_size += len(units)

    def _end_line(self) -> None:
        if self.line >= self.offset:
            self._show(terminated=True)
        self.line += 1
        if self.line > self.last:
            self.done = True

    def _show(self, *, terminated: bool) -> None:
        kept = self.endings.empty.join(self.current)
        text = self._decode(kept)
        cap = self.options.max_line_chars
        cut = self.current_size > len(kept) or len(text) > cap
        if cut:
            text = text[:cap] + truncation_marker(self.current_size, self.unit)
        text = display(text) + ("\n" if terminated else "")
        cost = len(text) + len(format_line_number(self.line))
        self.current, self.current_size = [], 0
        if cost > self.budget and self.shown:
            self.done = self.capped = True  # this line opens the next window
            return
        self.budget -= cost
        self.shown.append(text)
        if cut:
            self.truncated.append(self.line)

    def _decode(self, units: AnyStr) -> str:
        if isinstance(units, str):
            return units
        decoder = codecs.getincrementaldecoder(self.encoding.codec)("surrogateescape")
        final = len(units) < self.unit_cap  # a capped prefix may end inside a character
        return decoder.decode(units, final=final)

    def finish(self) -> Window:
        unterminated = not self.ends_with_break
        if unterminated and not self.done and self.line >= self.offset:
            self._show(terminated=False)
        total = self.line - (0 if unterminated else 1)
        if self.capped:
            next_offset: int | None = self.offset + len(self.shown)
        else:
            following = self.offset + len(self.shown)
            next_offset = following if following <= total and self.shown else None
        return Window(
            text="".join(self.shown),
            offset=self.offset,
            returned_lines=len(self.shown),
            total_lines=total,
            next_offset=next_offset,
            truncated_lines=tuple(self.truncated),
            output_capped=self.capped,
            encoding=self.encoding.label,
        )
